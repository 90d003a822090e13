// Package inuse holds the space an allocation map calls free against what
// the trees reference: the nodes of every tree (reached from the roots,
// every copy of a node lying where its chunk maps it), the data extents
// of file extent items, the sectors checksum items cover and the extents
// dedupe entries name. The extent tree is the allocation record; a lost
// or damaged item there makes referenced space look free, and a tool that
// frees or discards it (trimtool) would destroy data that still reads.
// Where the two disagree, "in use" wins: the caller keeps its hands off
// what Check returns.
//
// The walk keeps no map of the references: it looks each one up in the
// free list it is given (sorted), so its memory is the free list's and
// the conflicts', not the filesystem's.
package inuse

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/alloc"
	"github.com/ddfs/ddfs/pkg/store"
)

// Ref is a referenced logical range that the allocation map calls free,
// or (Outside) that lies in no chunk.
type Ref struct {
	Tree    format.TreeID
	What    string // "node", "file extent", "checksums", "dedupe entry", "block group"
	Logical uint64
	Len     uint64
	Ino     uint64 // the file of a file extent, else 0
}

func (r Ref) String() string {
	s := fmt.Sprintf("%s of the %v tree at logical %d+%d", r.What, r.Tree, r.Logical, r.Len)
	if r.Ino != 0 {
		s += fmt.Sprintf(" (inode %d)", r.Ino)
	}
	return s
}

// Unread is a node no copy of which could be read: what its subtree
// references is unknown.
type Unread struct {
	Tree    format.TreeID
	Logical uint64
	Err     error
}

// Result is what the walk found.
type Result struct {
	// Conflicts are referenced ranges (clipped to the free list) that the
	// allocation map calls free.
	Conflicts []Ref
	// Outside are references to logical addresses no chunk holds, and
	// block group items without a chunk: a chunk the map lacks, so the
	// device space it lies on is not known to be free either.
	Outside []Ref
	// Unread nodes leave their trees' references unknown.
	Unread []Unread
	// More counts conflicts past the reporting bound (still in use: the
	// caller must not free what it cannot see; Sure is false with them).
	More int
}

// Sure reports whether the walk saw every reference: no node unread and
// nothing outside the chunk map. Only then is free space that no
// reference meets known to be free.
func (r *Result) Sure() bool { return len(r.Unread) == 0 && len(r.Outside) == 0 && r.More == 0 }

// maxReported bounds the conflicts kept (a wholly lost extent tree makes
// every extent one); the walk goes on and counts the rest.
const maxReported = 1 << 16

// walker carries one walk.
type walker struct {
	fs      *store.FS
	free    []alloc.Range
	nodeLen uint64
	sector  uint64
	csumLen uint64
	res     Result
	seen    map[uint64]bool // nodes walked: a crafted tree may point at one node many times
}

// Check walks every tree of fs and returns the references that meet free
// (sorted by Start, disjoint logical ranges). A read error of the
// superblock's trees is not an error: it is an Unread node, and the
// caller decides what it may still do.
func Check(fs *store.FS, free []alloc.Range) *Result {
	sb := fs.Super()
	w := &walker{fs: fs, free: free, nodeLen: uint64(sb.NodeSize), sector: uint64(sb.SectorSize), csumLen: uint64(sb.CsumType.Len()), seen: map[uint64]bool{}}
	for id := format.TreeID(1); id <= format.TreeID(format.NumTrees); id++ {
		root := sb.Roots.Root(id)
		if root.Logical == 0 {
			continue
		}
		w.ref(Ref{Tree: id, What: "node", Logical: root.Logical, Len: w.nodeLen})
		w.walk(id, root.Logical, root.Generation, int(root.Level), 0)
	}
	return &w.res
}

// Merge returns rs sorted with overlapping and adjacent ranges joined
// (rs itself is not changed). Free lists mostly come sorted (a million
// fragments at trim): they are not copied and sorted again.
func Merge(rs []alloc.Range) []alloc.Range {
	byStart := func(a, b alloc.Range) int { return cmp.Compare(a.Start, b.Start) }
	if !slices.IsSortedFunc(rs, byStart) {
		rs = slices.Clone(rs)
		slices.SortFunc(rs, byStart)
	}
	out := make([]alloc.Range, 0, len(rs))
	for _, r := range rs {
		if n := len(out); n > 0 && out[n-1].End() >= r.Start {
			out[n-1].Len = max(out[n-1].End(), r.End()) - out[n-1].Start
			continue
		}
		out = append(out, r)
	}
	return out
}

// Subtract returns free without the ranges of taken (both sorted and
// disjoint, as Merge returns them); with nothing taken it is free itself.
func Subtract(free, taken []alloc.Range) []alloc.Range {
	if len(taken) == 0 {
		return free
	}
	out := make([]alloc.Range, 0, len(free))
	j := 0
	for _, f := range free {
		start := f.Start
		for j < len(taken) && taken[j].End() <= start {
			j++
		}
		for k := j; k < len(taken) && taken[k].Start < f.End(); k++ {
			if taken[k].Start > start {
				out = append(out, alloc.Range{Start: start, Len: taken[k].Start - start})
			}
			start = max(start, taken[k].End())
		}
		if start < f.End() {
			out = append(out, alloc.Range{Start: start, Len: f.End() - start})
		}
	}
	return out
}

// Taken is the merged logical ranges of the conflicts.
func (r *Result) Taken() []alloc.Range {
	rs := make([]alloc.Range, 0, len(r.Conflicts))
	for _, c := range r.Conflicts {
		rs = append(rs, alloc.Range{Start: c.Logical, Len: c.Len})
	}
	return Merge(rs)
}
