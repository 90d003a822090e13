package fsys

import (
	"cmp"
	"errors"
	"strings"
	"syscall"

	"github.com/ddfs/ddfs/format"
)

// Operations by directory inode and entry name, as a kernel (FUSE) asks
// for them: a node has no one path (hard links), and a path resolved
// again per call could name another inode after a rename. Each loads
// the inodes it changes afresh, so a caller's copies never go stale.
// Like the path calls, a precondition failure changes nothing.

// validName checks a new entry name as the path calls do.
func validName(name string) error {
	if format.ValidName(name) {
		return nil
	}
	if len(name) > format.MaxNameLen {
		return syscall.ENAMETOOLONG
	}
	return syscall.EINVAL
}

// dirInode loads directory ino (ENOTDIR if it is something else).
func (f *FS) dirInode(ino uint64) (*Inode, error) {
	d, err := f.Inode(ino)
	if err != nil {
		return nil, err
	}
	if !d.IsDir() {
		return nil, syscall.ENOTDIR
	}
	return d, nil
}

// LookupAt returns the inode that name names in directory dir, refusing
// (format.ErrCorrupt) an entry fsck flags, as path resolution does.
func (f *FS) LookupAt(dir uint64, name string) (*Inode, error) {
	if len(name) > format.MaxNameLen {
		return nil, syscall.ENAMETOOLONG
	}
	if _, err := f.dirInode(dir); err != nil {
		return nil, err
	}
	e, err := f.lookupChild(dir, name)
	if err != nil {
		return nil, err
	}
	return f.lookupDir(dir, e)
}

// CreateAt makes a new inode of any type but symlink named name in dir.
func (f *FS) CreateAt(dir uint64, name string, a Attr) (*Inode, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	d, err := f.dirInode(dir)
	if err != nil {
		return nil, err
	}
	return f.createIn(d, name, a)
}

// SymlinkAt makes a symlink named name in dir pointing to target.
func (f *FS) SymlinkAt(dir uint64, name, target string, a Attr) (*Inode, error) {
	if target == "" || strings.IndexByte(target, 0) >= 0 {
		return nil, syscall.EINVAL // a path cannot hold NUL (§6.2)
	}
	if len(target) > format.MaxSymlinkTarget {
		return nil, syscall.ENAMETOOLONG
	}
	a.Mode = syscall.S_IFLNK | 0o777
	a.symlink = true
	in, err := f.CreateAt(dir, name, a)
	if err != nil {
		return nil, err
	}
	return in, f.writeSymlink(in, target)
}

// ReadlinkInode returns the target of a symlink inode.
func (f *FS) ReadlinkInode(in *Inode) (string, error) { return f.readlinkIno(in) }

// LinkAt makes name in dir another name of inode ino (not a directory).
func (f *FS) LinkAt(ino, dir uint64, name string) (*Inode, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	in, err := f.Inode(ino)
	if err != nil {
		return nil, err
	}
	d, err := f.dirInode(dir)
	if err != nil {
		return nil, err
	}
	return in, f.linkIn(d, name, in)
}

// refRoom refuses (EMLINK, as btrfs does) another name of inode ino in
// dir when the back reference item all its names there share
// (INODE_REF) would outgrow a node: found halfway, that would abort.
func (f *FS) refRoom(ino, dir uint64, name string) error {
	b, err := getOptional(f.rtree(format.FSTree), format.Key{ObjectID: ino, Type: format.InodeRefKey, Offset: dir})
	if err != nil {
		return err
	}
	var refs []format.InodeRef
	if b != nil {
		if refs, err = format.UnmarshalInodeRefs(b); err != nil {
			return err
		}
	}
	if len(format.MarshalInodeRefs(append(refs, format.InodeRef{Name: name}))) > format.MaxItemData(f.st.Super().NodeSize) {
		return syscall.EMLINK
	}
	return nil
}

// UnlinkAt removes name from dir: a non-directory (unlink(2): EISDIR for
// a directory) or, with rmdir, an empty directory (ENOTDIR otherwise).
func (f *FS) UnlinkAt(dir uint64, name string, rmdir bool) error {
	d, err := f.dirInode(dir)
	if err != nil {
		return err
	}
	e, err := f.lookupChild(dir, name)
	if err != nil {
		return err
	}
	if isDir := e.Type == format.FileTypeDir; isDir && !rmdir {
		return syscall.EISDIR
	} else if !isDir && rmdir {
		return syscall.ENOTDIR
	}
	return f.removeIn(d, name)
}

// Rename flags, as renameat2(2).
const (
	RenameNoReplace = 1 << 0
	RenameExchange  = 1 << 1
)

// RenameAt moves oname of odir to nname of ndir as renameat2(2) does:
// RenameNoReplace fails with EEXIST if nname exists, RenameExchange
// swaps the two names (both must exist). Other flags are EINVAL.
func (f *FS) RenameAt(odir uint64, oname string, ndir uint64, nname string, flags uint32) error {
	if flags&^(RenameNoReplace|RenameExchange) != 0 || flags == RenameNoReplace|RenameExchange {
		return syscall.EINVAL
	}
	if err := validName(nname); err != nil {
		return err
	}
	od, err := f.dirInode(odir)
	if err != nil {
		return err
	}
	nd, err := f.dirInode(ndir)
	if err != nil {
		return err
	}
	if _, err := f.lookupChild(odir, oname); err != nil {
		return err
	}
	_, err = f.lookupChild(ndir, nname)
	switch {
	case err != nil && !errors.Is(err, syscall.ENOENT):
		return err
	case flags == RenameNoReplace && err == nil:
		return syscall.EEXIST
	case flags == RenameExchange && err != nil:
		return err
	case flags == RenameExchange:
		return f.exchange(od, oname, nd, nname)
	}
	return f.renameIn(od, oname, nd, nname)
}

// exchange swaps two existing entries (RENAME_EXCHANGE), moving each
// directory's ".." link count to its new parent.
func (f *FS) exchange(odir *Inode, oname string, ndir *Inode, nname string) error {
	f.dirs.clear()
	if odir.Ino == ndir.Ino {
		ndir = odir // one copy, changed twice
		if oname == nname {
			return nil
		}
	}
	a, err := f.lookupChild(odir.Ino, oname)
	if err != nil {
		return err
	}
	b, err := f.lookupChild(ndir.Ino, nname)
	if err != nil {
		return err
	}
	if a.Ino == b.Ino {
		return nil
	}
	ai, err := f.entryInode(odir.Ino, a)
	if err != nil {
		return err
	}
	bi, err := f.entryInode(ndir.Ino, b)
	if err != nil {
		return err
	}
	// Neither directory may land below itself.
	for _, c := range []struct{ in, to *Inode }{{ai, ndir}, {bi, odir}} {
		if !c.in.IsDir() || odir == ndir {
			continue
		}
		if under, err := f.isUnder(c.to.Ino, c.in.Ino); err != nil || under {
			return cmp.Or[error](err, syscall.EINVAL)
		}
	}
	if err := f.removeEntry(odir, oname, ai.Ino); err != nil {
		return err
	}
	if err := f.removeEntry(ndir, nname, bi.Ino); err != nil {
		return err
	}
	if odir != ndir {
		if ai.IsDir() {
			odir.Nlink--
			ndir.Nlink++
		}
		if bi.IsDir() {
			ndir.Nlink--
			odir.Nlink++
		}
	}
	ai.Ctime = f.Now()
	bi.Ctime = ai.Ctime
	if err := f.putInode(ai); err != nil {
		return err
	}
	if err := f.putInode(bi); err != nil {
		return err
	}
	if err := f.addEntry(ndir, nname, ai); err != nil {
		return err
	}
	return f.addEntry(odir, oname, bi)
}

// PunchHole frees file bytes [off, off+n) (cut at the size, which stays):
// they read as zeros (fallocate(2) FALLOC_FL_PUNCH_HOLE).
func (f *FS) PunchHole(in *Inode, off, n uint64) error {
	if in.IsDir() {
		return syscall.EISDIR
	}
	if !in.IsRegular() {
		return syscall.EINVAL
	}
	end := min(off+n, in.Size)
	if off+n < off {
		end = in.Size
	}
	if off >= end {
		return nil
	}
	// Inline data cannot be split in the middle: make it an extent first.
	if err := f.uninline(in, off, end); err != nil {
		return err
	}
	if err := f.punch(in, off, end); err != nil {
		return err
	}
	f.noteWrite(in.Ino, off, end)
	in.Mtime = f.Now()
	in.Ctime = in.Mtime
	return f.putInode(in)
}
