package fsys

import (
	"bytes"
	"sort"

	"github.com/ddfs/ddfs/format"
)

// ChangedRanges returns the byte ranges of file b (read through fb)
// whose file extents are not those of file a (read through fa) at the
// same offsets, within [0, b.Size): the parts an incremental send must
// carry. a and b are the same file in two snapshots of one image, so an
// unchanged range is one whose extent item was shared, or copied
// unchanged (same data extent, same place in it, same compression, same
// inline bytes). Ranges are merged and in order.
func ChangedRanges(fa *FS, a *Inode, fb *FS, b *Inode) ([]Range, error) {
	xa, err := fa.extents(a.Ino, 0, format.MaxFileSize)
	if err != nil {
		return nil, err
	}
	xb, err := fb.extents(b.Ino, 0, format.MaxFileSize)
	if err != nil {
		return nil, err
	}
	// Every extent edge of either file cuts the range into pieces that
	// each lie in at most one extent of each.
	var cuts []uint64
	for _, xs := range [][]fileExtent{xa, xb} {
		for _, x := range xs {
			cuts = append(cuts, x.off, x.end())
		}
	}
	cuts = append(cuts, 0, b.Size)
	sort.Slice(cuts, func(i, j int) bool { return cuts[i] < cuts[j] })
	var out []Range
	ia, ib := 0, 0
	for i := 0; i+1 < len(cuts); i++ {
		s, e := cuts[i], min(cuts[i+1], b.Size)
		if s >= e {
			continue
		}
		ea, eb := covering(xa, &ia, s), covering(xb, &ib, s)
		if samePiece(ea, eb, s) {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Off+out[n-1].Len == s {
			out[n-1].Len += e - s
		} else {
			out = append(out, Range{Off: s, Len: e - s})
		}
	}
	return out, nil
}

// covering returns the extent of xs (sorted) that covers off, or nil;
// *i is where the search starts and is left at the extent found.
func covering(xs []fileExtent, i *int, off uint64) *fileExtent {
	for *i < len(xs) && xs[*i].end() <= off {
		*i++
	}
	if *i < len(xs) && xs[*i].off <= off {
		return &xs[*i]
	}
	return nil
}

// samePiece reports whether extents a and b read the same bytes at file
// offset off: both holes, or the same data at the same place.
func samePiece(a, b *fileExtent, off uint64) bool {
	switch {
	case a == nil || b == nil:
		return a == b || a != nil && a.IsHole() || b != nil && b.IsHole()
	case a.Type != b.Type || a.Compression != b.Compression:
		return false
	case a.Type == format.FileExtentInline:
		return a.off == b.off && bytes.Equal(a.Inline, b.Inline)
	}
	if a.IsHole() || b.IsHole() {
		return a.IsHole() && b.IsHole()
	}
	return a.DiskLogical == b.DiskLogical && a.DiskLen == b.DiskLen && a.RAMBytes == b.RAMBytes &&
		a.Offset+(off-a.off) == b.Offset+(off-b.off)
}

// Link is one name of an inode: the directory holding it, and the name.
type Link struct {
	Parent uint64
	Name   string
	Index  uint64 // the name's DIR_INDEX index in Parent: its place in a listing
}

// Links returns the names of inode ino (from its INODE_REF items).
func (f *FS) Links(ino uint64) ([]Link, error) {
	var out []Link
	from := format.Key{ObjectID: ino, Type: format.InodeRefKey}
	err := f.rtree(format.FSTree).Scan(from, format.Key{ObjectID: ino, Type: format.InodeRefKey + 1}, func(it format.Item) (bool, error) {
		err := format.EachInodeRef(it.Data, func(r format.InodeRefView) {
			out = append(out, Link{it.Key.Offset, string(r.Name), r.Index})
		})
		return err == nil, err
	})
	return out, err
}

// TreeRoot is the root of the fs tree f shows (a snapshot's for a
// snapshot view).
func (f *FS) TreeRoot() format.RootPtr { return f.rtree(format.FSTree).Root() }
