package fsys

import (
	"errors"
	"sort"
	"syscall"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
)

func xattrKey(ino uint64, name string) format.Key {
	return format.Key{ObjectID: ino, Type: format.XattrItemKey, Offset: format.NameHash([]byte(name))}
}

// xattrsAt returns the entries sharing name's hash.
func (f *FS) xattrsAt(k format.Key) ([]format.Xattr, error) {
	b, err := f.rtree(format.FSTree).Get(k)
	if errors.Is(err, btree.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return format.UnmarshalXattrs(b)
}

// GetXattr returns the value of xattr name (ENODATA if absent).
func (f *FS) GetXattr(in *Inode, name string) ([]byte, error) {
	xs, err := f.xattrsAt(xattrKey(in.Ino, name))
	if err != nil {
		return nil, err
	}
	for _, x := range xs {
		if x.Name == name {
			return x.Value, nil
		}
	}
	return nil, syscall.ENODATA
}

// SetXattr sets xattr name; values are kept raw (security.capability,
// POSIX ACLs and user xattrs alike).
func (f *FS) SetXattr(in *Inode, name string, value []byte) error {
	f.noteUnloggable(in.Ino)
	if name == "" || len(name) > 255 {
		return syscall.EINVAL
	}
	if len(value) > format.MaxItemData(f.st.Super().NodeSize)-len(name)-64 {
		return syscall.E2BIG
	}
	k := xattrKey(in.Ino, name)
	xs, err := f.xattrsAt(k)
	if err != nil {
		return err
	}
	kept := []format.Xattr{{Name: name, Value: value}}
	for _, x := range xs {
		if x.Name != name {
			kept = append(kept, x)
		}
	}
	t, err := f.tree()
	if err != nil {
		return err
	}
	if err := t.Put(k, format.MarshalXattrs(kept)); err != nil {
		return err
	}
	if err := f.refresh(in); err != nil {
		return err
	}
	in.Ctime = f.Now()
	return f.putInode(in)
}

// RemoveXattr deletes xattr name (ENODATA if absent).
func (f *FS) RemoveXattr(in *Inode, name string) error {
	f.noteUnloggable(in.Ino)
	k := xattrKey(in.Ino, name)
	xs, err := f.xattrsAt(k)
	if err != nil {
		return err
	}
	var kept []format.Xattr
	found := false
	for _, x := range xs {
		if x.Name == name {
			found = true
		} else {
			kept = append(kept, x)
		}
	}
	if !found {
		return syscall.ENODATA
	}
	t, err := f.tree()
	if err != nil {
		return err
	}
	if len(kept) == 0 {
		err = t.Delete(k)
	} else {
		err = t.Put(k, format.MarshalXattrs(kept))
	}
	if err != nil {
		return err
	}
	if err := f.refresh(in); err != nil {
		return err
	}
	in.Ctime = f.Now()
	return f.putInode(in)
}

// ListXattrs returns all xattrs of an inode, sorted by name.
func (f *FS) ListXattrs(in *Inode) ([]format.Xattr, error) {
	var out []format.Xattr
	start := format.Key{ObjectID: in.Ino, Type: format.XattrItemKey}
	end := format.Key{ObjectID: in.Ino, Type: format.XattrItemKey + 1}
	err := f.rtree(format.FSTree).Scan(start, end, func(it format.Item) (bool, error) {
		xs, err := format.UnmarshalXattrs(it.Data)
		out = append(out, xs...)
		return true, err
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}

// Statfs is what statfs(2) reports.
type Statfs struct {
	BlockSize  uint64
	TotalBytes uint64
	FreeBytes  uint64 // estimate: unallocated device space plus free space in data chunks
	UsedBytes  uint64
	Inodes     uint64 // highest inode number in use
}

// Statfs reports space.
func (f *FS) Statfs() Statfs {
	sb := f.st.Super()
	s := Statfs{BlockSize: uint64(sb.SectorSize), TotalBytes: sb.TotalBytes, UsedBytes: sb.BytesUsed, Inodes: f.nextIno - 1}
	allocated := f.st.AllocatedBytes()
	for _, bg := range f.st.BlockGroups() {
		if bg.Chunk.Type == format.ChunkData {
			s.FreeBytes += bg.Free()
		}
	}
	if sb.TotalBytes > allocated {
		s.FreeBytes += sb.TotalBytes - allocated
	}
	return s
}
