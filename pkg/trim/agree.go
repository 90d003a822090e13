package trim

import (
	"fmt"

	"github.com/ddfs/ddfs/pkg/alloc"
	"github.com/ddfs/ddfs/pkg/inuse"
	"github.com/ddfs/ddfs/pkg/store"
)

// chunkFree is the free space inside chunks per the extent tree, in
// logical order (the block groups are sorted, each group's ranges too),
// never joined across a chunk boundary.
func chunkFree(fs *store.FS) ([]alloc.Range, error) {
	var out []alloc.Range
	for _, bg := range fs.BlockGroups() {
		ranges, err := fs.FreeRanges(bg)
		if err != nil {
			return nil, err
		}
		out = append(out, ranges...)
	}
	return out, nil
}

// disagreements names (up to maxListed) what the walk found against the
// allocation metadata, and the system chunk array against the chunk tree.
func disagreements(w *inuse.Result, fs *store.FS) []string {
	var out []string
	add := func(s string) {
		if len(out) < maxListed {
			out = append(out, s)
		}
	}
	if err := fs.CheckSysChunks(); err != nil {
		add(err.Error())
	}
	for _, c := range w.Conflicts {
		add(fmt.Sprintf("%v is in use but the extent tree calls it free", c))
	}
	if w.More > 0 {
		add(fmt.Sprintf("%d more ranges in use that the extent tree calls free", w.More))
	}
	for _, u := range w.Unread {
		add(fmt.Sprintf("%v tree node at logical %d cannot be read (%v): what it references is unknown", u.Tree, u.Logical, u.Err))
	}
	for _, r := range w.Outside {
		add(fmt.Sprintf("%v lies outside every chunk", r))
	}
	return out
}

// sum is the bytes of rs.
func sum(rs []alloc.Range) uint64 {
	var n uint64
	for _, r := range rs {
		n += r.Len
	}
	return n
}
