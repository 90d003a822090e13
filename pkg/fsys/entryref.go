package fsys

import (
	"fmt"

	"github.com/ddfs/ddfs/format"
)

// checkRef requires the inode a path component names to name it back: an
// INODE_REF under dir that holds e's name. A DIR_ITEM whose inode number
// was altered (fsck's ENTRY_NO_REF, ENTRY_MISMATCH) would otherwise lead
// a lookup to another file, whose bytes cat and cp would return with exit
// 0 (issue 36). The ref usually sits beside the inode item just read.
func (f *FS) checkRef(dir uint64, e format.DirEntry) error {
	b, err := getOptional(f.rtree(format.FSTree), format.Key{ObjectID: e.Ino, Type: format.InodeRefKey, Offset: dir})
	if err != nil {
		return err
	}
	if b != nil {
		rs, err := format.UnmarshalInodeRefs(b)
		if err != nil {
			return fmt.Errorf("inode %d: %w", e.Ino, err)
		}
		for _, r := range rs {
			if r.Name == e.Name {
				return nil
			}
		}
	}
	return fmt.Errorf("directory %d entry %q names inode %d, which has no name %q there: %w", dir, e.Name, e.Ino, e.Name, format.ErrCorrupt)
}

// nbytesError refuses a file whose extents do not add up to its nbytes
// (fsck's NBYTES): a lost extent item reads as a hole, so the file would
// come back with zeros where its data was, with exit 0 (issue 36).
func nbytesError(in *Inode, extents uint64) error {
	return fmt.Errorf("inode %d: nbytes %d, its extents hold %d: %w", in.Ino, in.NBytes, extents, format.ErrCorrupt)
}

// checkNBytes is DataRanges' nbytes check over xs, every extent of in
// below its size.
func checkNBytes(in *Inode, xs []fileExtent) error {
	var n uint64
	for _, x := range xs {
		if x.Type == format.FileExtentInline || x.DiskLogical != 0 {
			n += x.Len()
		}
	}
	if n != in.NBytes {
		return nbytesError(in, n)
	}
	return nil
}

// checkNoEntries refuses a file that holds directory entries (fsck's
// NOT_DIR_ENTRIES): such an inode is a directory's and a file's at once,
// and which of its items are the file's is not known. They sort just
// before its extents, so this is one look at the leaf its read meets.
func (f *FS) checkNoEntries(in *Inode) error {
	from, to := format.Key{ObjectID: in.Ino, Type: format.DirItemKey}, format.Key{ObjectID: in.Ino, Type: format.FileExtentKey}
	found := false
	err := f.rtree(format.FSTree).Scan(from, to, func(format.Item) (bool, error) { found = true; return false, nil })
	if err == nil && found {
		err = fmt.Errorf("inode %d: a file with directory entries: %w", in.Ino, format.ErrCorrupt)
	}
	return err
}
