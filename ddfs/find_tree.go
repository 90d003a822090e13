package main

import (
	"errors"

	"github.com/ddfs/ddfs/pkg/foreign"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// findTree is what find walks: a ddfs image, or a foreign one whose
// entries are shown to the expression as inodes of its Stat.
type findTree interface {
	resolve(p string) (*fsys.Inode, error)
	children(p string, in *fsys.Inode) ([]fsys.Child, error)
	empty(p string, in *fsys.Inode) (bool, error)
	err(error) error // names an error as the user wrote the image
}

type imageTree struct{ im *image }

func (t imageTree) resolve(p string) (*fsys.Inode, error) { return t.im.f.Resolve(p, false) }
func (t imageTree) children(_ string, in *fsys.Inode) ([]fsys.Child, error) {
	return t.im.f.Children(in)
}
func (t imageTree) err(err error) error { return t.im.err(err) }
func (t imageTree) empty(_ string, in *fsys.Inode) (bool, error) {
	any := false
	err := t.im.f.ReadDir(in, func(fsys.DirEntry) bool { any = true; return false })
	if errors.As(err, new(*fsys.EntryError)) {
		return false, nil // an entry fsck flags is an entry
	}
	return !any && err == nil, err
}

// foreignFind walks an ext4, squashfs, ISO 9660 or FAT image by path.
type foreignFind struct{ fim *foreign.Image }

func (t foreignFind) resolve(p string) (*fsys.Inode, error) {
	st, err := t.fim.Lstat(p)
	if err != nil {
		return nil, err
	}
	return inodeOf(st), nil
}

func (t foreignFind) children(p string, _ *fsys.Inode) ([]fsys.Child, error) {
	sts, err := t.fim.ReadDir(p)
	if err != nil {
		return nil, err
	}
	kids := make([]fsys.Child, len(sts))
	for i, st := range sts {
		in := inodeOf(st)
		kids[i] = fsys.Child{Entry: fsys.DirEntry{Name: st.Name, Ino: in.Ino, Type: in.FileType()}, Inode: in}
	}
	return kids, nil
}

func (t foreignFind) empty(p string, in *fsys.Inode) (bool, error) {
	sts, err := t.fim.ReadDir(p)
	return err == nil && len(sts) == 0, err
}

func (t foreignFind) err(err error) error { return plainErr(err) }

// inodeOf shows a foreign entry as an inode: what the format keeps (a
// time it does not keep is zero; owners 0; nlink 1).
func inodeOf(st *foreign.Stat) *fsys.Inode {
	in := &fsys.Inode{Ino: st.Ino}
	in.Mode, in.UID, in.GID, in.Rdev, in.Nlink = st.Mode, st.UID, st.GID, st.Rdev, st.Nlink
	in.Size = uint64(max(st.Size, 0))
	in.NBytes = in.Size // what the format allocates is not known: du counts the size
	in.Mtime, in.Atime, in.Ctime, in.Btime = fsys.TimespecOf(st.Mtime), fsys.TimespecOf(st.Atime), fsys.TimespecOf(st.Ctime), fsys.TimespecOf(st.Btime)
	if st.Atime.IsZero() {
		in.Atime = in.Mtime
	}
	if st.Ctime.IsZero() {
		in.Ctime = in.Mtime
	}
	return in
}
