package fsys

import (
	"syscall"

	"github.com/ddfs/ddfs/format"
)

// cloneBatch bounds the extent items held at once while cloning.
const cloneBatch = 1024

// CloneData makes dst's data a reflink copy of src's: dst (a regular file
// without data) gets src's extent items and every data extent one more
// reference, so the two share the data until one is written (writes
// always go to new extents: copy on write). Work follows src's items,
// never its size.
func (f *FS) CloneData(src, dst *Inode) error {
	if !src.IsRegular() || !dst.IsRegular() {
		return syscall.EINVAL
	}
	if src.Ino == dst.Ino {
		return syscall.EINVAL
	}
	f.noteUnloggable(dst.Ino)
	if xs, err := f.extents(dst.Ino, 0, ^uint64(0)); err != nil || len(xs) > 0 {
		if err != nil {
			return err
		}
		return syscall.EEXIST // only into an empty file: nothing to free
	}
	t, err := f.tree()
	if err != nil {
		return err
	}
	from := extentKey(src.Ino, 0)
	for {
		var items []format.Item
		err := t.Scan(from, extentKey(src.Ino+1, 0), func(it format.Item) (bool, error) {
			if it.Key.Type != format.FileExtentKey {
				return false, nil
			}
			items = append(items, format.Item{Key: it.Key, Data: append([]byte(nil), it.Data...)})
			return len(items) < cloneBatch, nil
		})
		if err != nil {
			return err
		}
		for _, it := range items {
			if err := f.cloneItem(dst, it); err != nil {
				return err
			}
		}
		if len(items) < cloneBatch {
			break
		}
		last := items[len(items)-1].Key.Offset
		if last == ^uint64(0) {
			break
		}
		from = extentKey(src.Ino, last+1)
	}
	dst.Size, dst.NBytes = src.Size, src.NBytes
	dst.Mtime = f.Now()
	dst.Ctime = dst.Mtime
	return f.putInode(dst)
}

// cloneItem adds one of src's extent items to dst.
func (f *FS) cloneItem(dst *Inode, it format.Item) error {
	x, err := format.UnmarshalFileExtentItem(it.Data)
	if err != nil {
		return err
	}
	t, err := f.tree()
	if err != nil {
		return err
	}
	if err := t.Insert(extentKey(dst.Ino, it.Key.Offset), it.Data); err != nil {
		return err
	}
	if x.Type == format.FileExtentInline || x.DiskLogical == 0 {
		return nil
	}
	return f.addRefs(x.DiskLogical, x.DiskLen, 1)
}
