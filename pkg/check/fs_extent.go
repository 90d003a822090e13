package check

// EXTENT_DATA: a file's extents against each other and the inode, and
// the references they count on the data extents (refs.go).

import (
	"bytes"

	"github.com/ddfs/ddfs/format"
)

// fileExtentItem takes an EXTENT_DATA item.
func (c *checker) fileExtentItem(cur *inodeState, it format.Item) {
	var x format.FileExtentItem
	if err := format.DecodeFileExtentItem(it.Data, &x); err != nil {
		cur.extentLost = true
		c.fs.extentLost = true
		c.fsItemBad(cur, it.Key, err)
		return
	}
	c.counted.Add(format.FileExtentCounters(&x))
	c.fileExtent(cur, it.Key.Offset, &x)
}

// fileExtent checks one EXTENT_DATA item against the inode's others and
// counts its data extent reference.
func (c *checker) fileExtent(cur *inodeState, off uint64, x *format.FileExtentItem) {
	s := &c.fs
	key := format.Key{ObjectID: cur.ino, Type: format.FileExtentKey, Offset: off}
	ss := uint64(c.sb.SectorSize)
	t := cur.fileType()
	if t != 0 && t != format.FileTypeRegular && t != format.FileTypeSymlink && !cur.notFile {
		cur.notFile = true
		c.fsFix(NotFileExtents, cur.ino, &fixData{}, "a %v has file extents", t)
	}
	n := x.Len()
	end := off + n
	c.extentPlace(cur, key, x, n)
	if in := cur.item; in != nil {
		if limit := (in.Size + ss - 1) / ss * ss; off >= limit {
			c.fsFix(ExtentBeyondSize, cur.ino, &fixData{want: end, key: key}, "extent at %d lies wholly beyond the size %d", off, in.Size)
		}
	}
	if x.Compression != format.CompressNone && c.sb.Incompat&format.IncompatCompression == 0 {
		c.fsProblem(CompressFeature, cur.ino, "extent at %d is compressed (%v) but the compression feature is not enabled", off, x.Compression)
	}
	cur.extents++
	cur.extEnd = max(cur.extEnd, end)
	if t == format.FileTypeSymlink {
		symlinkExtent(cur, off, end, x)
	}
	if x.Type == format.FileExtentInline {
		cur.nbytes += n
		return
	}
	if x.DiskLogical == 0 {
		return // a hole
	}
	cur.nbytes += n
	if x.DiskLogical%ss != 0 || x.DiskLen%ss != 0 {
		c.fsProblem(FileExtentAlign, cur.ino, "extent at %d points at %d+%d, not whole sectors of %d bytes", off, x.DiskLogical, x.DiskLen, ss)
	}
	if c.view == "" { // a snapshot's references are counted by the node walk
		s.use(extentID{x.DiskLogical, x.DiskLen}, cur.ino, off, x)
	}
}

// symlinkExtent notes what extent [off, end) adds to a symlink's target:
// data from where the covered part ends (holes and prealloc are none), and
// a NUL in inline bytes (a target larger than the inline limit is read,
// and refused, by the readers).
func symlinkExtent(cur *inodeState, off, end uint64, x *format.FileExtentItem) {
	if off == cur.linkData && x.Type != format.FileExtentPrealloc && !x.IsHole() {
		cur.linkData = end
	}
	if x.Type == format.FileExtentInline && bytes.IndexByte(x.Inline, 0) >= 0 {
		cur.linkNUL = true
	}
}

// extentPlace checks where extent x of n bytes at key lies: inside the
// offset space and the largest file, past the previous extent, and inline
// only alone at offset 0.
func (c *checker) extentPlace(cur *inodeState, key format.Key, x *format.FileExtentItem, n uint64) {
	off, end, prevEnd := key.Offset, key.Offset+n, cur.extEnd
	// Made only for a problem: this runs for every file extent.
	at := func() *fixData { return &fixData{key: key, want: prevEnd} }
	switch {
	case end < off:
		c.fsFix(FileExtentWraps, cur.ino, at(), "extent at %d of %d bytes passes the end of the offset space", off, n)
	case format.CheckFileExtentRange(off, x) != nil:
		c.fsFix(FileExtentTooBig, cur.ino, at(), "extent at %d of %d bytes passes the largest file size %d", off, n, uint64(format.MaxFileSize))
	case cur.extents > 0 && off < cur.extEnd:
		c.fsFix(FileExtentOvlp, cur.ino, at(), "extent at %d overlaps the previous extent, which ends at %d", off, cur.extEnd)
	}
	if cur.inline && cur.extents > 0 {
		c.fsFix(InlineNotOnly, cur.ino, at(), "extent at %d follows an inline extent (inline must be the only extent)", off)
	}
	if x.Type == format.FileExtentInline {
		if off != 0 {
			c.fsFix(InlineOffset, cur.ino, at(), "inline extent at %d (inline extents live at offset 0 only)", off)
		} else if cur.extents == 0 {
			cur.inline = true
		}
	}
}
