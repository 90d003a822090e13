package fsys

import (
	"cmp"
	"errors"
	"path"
	"strings"
	"syscall"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
)

// Create makes a new inode of any type (regular, directory, device, fifo,
// socket; symlinks with Symlink) at p.
func (f *FS) Create(p string, a Attr) (*Inode, error) {
	if DirOnly(p) && a.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return nil, &PathError{Op: "create", Path: p, Err: syscall.ENOTDIR}
	}
	dir, name, err := f.resolveParent(p)
	if err != nil {
		return nil, &PathError{Op: "create", Path: p, Err: err}
	}
	in, err := f.createIn(dir, name, a)
	if err != nil {
		return nil, wrapErr("create", p, err)
	}
	return in, nil
}

// createIn makes an inode named name in dir.
func (f *FS) createIn(dir *Inode, name string, a Attr) (*Inode, error) {
	if a.Mode&syscall.S_IFMT == 0 {
		a.Mode |= syscall.S_IFREG
	}
	if a.Mode&syscall.S_IFMT == syscall.S_IFLNK && !a.symlink {
		return nil, syscall.EINVAL // a symlink needs its target: Symlink
	}
	if format.FileTypeOfMode(a.Mode) == 0 {
		return nil, syscall.EINVAL
	}
	if _, err := f.lookupChild(dir.Ino, name); err == nil {
		return nil, syscall.EEXIST
	} else if !errors.Is(err, syscall.ENOENT) {
		return nil, err
	}
	a.InheritDir = dir
	in, err := f.newInode(a)
	if err != nil {
		return nil, err
	}
	in.Nlink = 1
	if in.IsDir() {
		in.Nlink = 2
		dir.Nlink++ // the child's ".."
	}
	if err := f.putInode(in); err != nil {
		return nil, err
	}
	if err := f.addEntry(dir, name, in); err != nil {
		return nil, err
	}
	return in, nil
}

// Mkdir makes a directory.
func (f *FS) Mkdir(p string, a Attr) (*Inode, error) {
	a.Mode = a.Mode&^syscall.S_IFMT | syscall.S_IFDIR
	return f.Create(p, a)
}

// Symlink makes a symbolic link at p pointing to target.
func (f *FS) Symlink(target, p string, a Attr) (*Inode, error) {
	if target == "" || len(target) > format.MaxSymlinkTarget || strings.IndexByte(target, 0) >= 0 {
		return nil, &PathError{Op: "symlink", Path: p, Err: syscall.EINVAL}
	}
	if err := f.linkSlash("symlink", p); err != nil {
		return nil, err
	}
	a.Mode = syscall.S_IFLNK | 0o777
	a.symlink = true
	in, err := f.Create(p, a)
	if err != nil {
		return nil, err
	}
	if err := f.writeSymlink(in, target); err != nil {
		return nil, wrapErr("symlink", p, err)
	}
	return in, nil
}

func (f *FS) writeSymlink(in *Inode, target string) error {
	if len(target) <= f.opt.MaxInline {
		if err := f.writeInline(in, []byte(target)); err != nil {
			return err
		}
	} else if err := f.writeExtents(in, []byte(target), 0); err != nil {
		return err
	}
	in.Size = uint64(len(target))
	return f.putInode(in)
}

// Readlink returns the target of the symlink at p.
func (f *FS) Readlink(p string) (string, error) {
	in, err := f.Resolve(p, false)
	if err != nil {
		return "", err
	}
	t, err := f.readlinkIno(in)
	if err != nil {
		return "", &PathError{Op: "readlink", Path: p, Err: err}
	}
	return t, nil
}

// Link makes newp another name of the inode at oldp (not directories).
func (f *FS) Link(oldp, newp string) error {
	in, err := f.Resolve(oldp, false)
	if err != nil {
		return err
	}
	if err := f.linkSlash("link", newp); err != nil {
		return err
	}
	dir, name, err := f.resolveParent(newp)
	if err != nil {
		return &PathError{Op: "link", Path: newp, Err: err}
	}
	return wrapErr("link", newp, f.linkIn(dir, name, in))
}

// linkSlash is link(2)'s and symlink(2)'s answer for a new name ending
// in a slash (which names a directory): EEXIST when the name is taken,
// else ENOENT, as GNU ln reports; nil without a slash.
func (f *FS) linkSlash(op, p string) error {
	if !DirOnly(p) {
		return nil
	}
	_, err := f.Resolve(strings.TrimRight(p, "/"), false)
	switch {
	case err == nil:
		err = syscall.EEXIST
	case errors.Is(err, syscall.ENOENT):
		err = syscall.ENOENT
	default:
		return err // could not read is not "not found"
	}
	return &PathError{Op: op, Path: p, Err: err}
}

func (f *FS) linkIn(dir *Inode, name string, in *Inode) error {
	// Check before changing anything: a failed call leaves no trace.
	if _, err := f.lookupChild(dir.Ino, name); err == nil {
		return syscall.EEXIST
	} else if !errors.Is(err, syscall.ENOENT) {
		return err
	}
	// After the new name's checks, as link(2) orders its errors.
	if in.IsDir() {
		return syscall.EPERM
	}
	if err := f.refRoom(in.Ino, dir.Ino, name); err != nil {
		return err
	}
	in.Nlink++
	in.Ctime = f.Now()
	if err := f.putInode(in); err != nil {
		return err
	}
	return f.addEntry(dir, name, in)
}

// Remove deletes the name p: a file, symlink or other non-directory, or
// an empty directory (as remove(3)).
func (f *FS) Remove(p string) error {
	dir, name, err := f.resolveParent(p)
	if err != nil {
		return &PathError{Op: "remove", Path: p, Err: err}
	}
	return wrapErr("remove", p, f.removeIn(dir, name))
}

func (f *FS) removeIn(dir *Inode, name string) error {
	f.dirs.clear()
	e, err := f.lookupChild(dir.Ino, name)
	if err != nil {
		return err
	}
	in, err := f.entryInode(dir.Ino, e)
	if err != nil {
		return err
	}
	if in.IsDir() {
		if empty, err := f.isEmptyDir(in.Ino); err != nil || !empty {
			return cmp.Or(err, error(syscall.ENOTEMPTY))
		}
		dir.Nlink--
	}
	if err := f.removeEntry(dir, name, in.Ino); err != nil {
		return err
	}
	return f.dropLink(in)
}

// isEmptyDir looks for an entry of dir. The size is not trusted
// (FORMAT.md §6.2): a crafted size 0 would unlink a directory with
// children, leaving them unreachable.
func (f *FS) isEmptyDir(dir uint64) (bool, error) {
	empty := true
	err := f.rtree(format.FSTree).Scan(format.Key{ObjectID: dir, Type: format.DirItemKey}, format.Key{ObjectID: dir, Type: format.DirIndexKey + 1},
		func(format.Item) (bool, error) { empty = false; return false, nil })
	return empty, err
}

// dropLink decrements nlink and deletes the inode with its data when no
// name is left.
func (f *FS) dropLink(in *Inode) error {
	if in.IsDir() || in.Nlink <= 1 {
		return f.deleteInode(in)
	}
	in.Nlink--
	in.Ctime = f.Now()
	return f.putInode(in)
}

// deleteInode removes every item of an inode and releases its extents.
func (f *FS) deleteInode(in *Inode) error {
	if in.IsRegular() || in.IsSymlink() {
		if err := f.punch(in, 0, ^uint64(0)); err != nil {
			return err
		}
	}
	t, err := f.tree()
	if err != nil {
		return err
	}
	var keys []format.Key
	err = t.Scan(format.Key{ObjectID: in.Ino}, format.Key{ObjectID: in.Ino + 1}, func(it format.Item) (bool, error) {
		keys = append(keys, it.Key)
		return true, nil
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := t.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// Rename moves oldp to newp, replacing a file or an empty directory
// there, as rename(2).
func (f *FS) Rename(oldp, newp string) error {
	odir, oname, err := f.resolveParent(oldp)
	if err != nil {
		return &PathError{Op: "rename", Path: oldp, Err: err}
	}
	ndir, nname, err := f.resolveParent(newp)
	if err != nil {
		return &PathError{Op: "rename", Path: newp, Err: err}
	}
	if err := f.renameSlash(oldp, newp); err != nil {
		return err
	}
	return wrapErr("rename", oldp, f.renameIn(odir, oname, ndir, nname))
}

// renameSlash refuses, as rename(2), a trailing slash on either name
// unless the source is a directory (not a symlink to one): ENOTDIR,
// naming the path with the slash.
func (f *FS) renameSlash(oldp, newp string) error {
	if !DirOnly(oldp) && !DirOnly(newp) {
		return nil
	}
	in, err := f.Resolve(strings.TrimRight(oldp, "/"), false)
	if err != nil || in.IsDir() {
		return err
	}
	named := newp
	if DirOnly(oldp) {
		named = oldp
	}
	return &PathError{Op: "rename", Path: named, Err: syscall.ENOTDIR}
}

func (f *FS) renameIn(odir *Inode, oname string, ndir *Inode, nname string) error {
	f.dirs.clear()
	e, err := f.lookupChild(odir.Ino, oname)
	if err != nil {
		return err
	}
	in, err := f.entryInode(odir.Ino, e)
	if err != nil {
		return err
	}
	if odir.Ino == ndir.Ino {
		ndir = odir // one copy of the directory inode, changed twice
		if oname == nname {
			return nil
		}
	}
	if in.IsDir() {
		// A directory may not move below itself.
		if under, err := f.isUnder(ndir.Ino, in.Ino); err != nil || under {
			return cmp.Or[error](err, syscall.EINVAL)
		}
	}
	if old, err := f.lookupChild(ndir.Ino, nname); err == nil {
		if old.Ino == in.Ino {
			return nil // two names of one inode: rename(2) does nothing
		}
		target, err := f.Inode(old.Ino)
		if err != nil {
			return err
		}
		if target.IsDir() != in.IsDir() {
			// A target that holds the source is not empty, whatever its
			// type (rename(2) checks that first).
			if under, err := f.isUnder(odir.Ino, target.Ino); err != nil || under {
				return cmp.Or[error](err, syscall.ENOTEMPTY)
			}
			if target.IsDir() {
				return syscall.EISDIR
			}
			return syscall.ENOTDIR
		}
		if err := f.removeIn(ndir, nname); err != nil {
			return err
		}
	} else if !errors.Is(err, syscall.ENOENT) {
		return err
	}
	same := odir.Ino == ndir.Ino
	if err := f.removeEntry(odir, oname, in.Ino); err != nil {
		return err
	}
	if in.IsDir() && !same {
		odir.Nlink--
		ndir.Nlink++
		if err := f.putInode(odir); err != nil {
			return err
		}
	}
	in.Ctime = f.Now()
	if err := f.putInode(in); err != nil {
		return err
	}
	return f.addEntry(ndir, nname, in)
}

// isUnder reports whether directory dir is anc or below it.
func (f *FS) isUnder(dir, anc uint64) (bool, error) {
	for a := dir; a != format.RootDirIno; {
		if a == anc {
			return true, nil
		}
		var err error
		if a, err = f.parentOf(a); err != nil {
			return false, err
		}
	}
	return anc == format.RootDirIno, nil
}

// parentOf returns the directory holding directory ino (from its INODE_REF).
func (f *FS) parentOf(ino uint64) (uint64, error) {
	it, err := f.rtree(format.FSTree).SeekLE(format.Key{ObjectID: ino, Type: format.InodeRefKey, Offset: ^uint64(0)})
	if err != nil && !errors.Is(err, btree.ErrNotFound) {
		return 0, err
	}
	if err != nil || it.Key.ObjectID != ino || it.Key.Type != format.InodeRefKey {
		return 0, syscall.ENOENT
	}
	return it.Key.Offset, nil
}

// SetAttr changes mode bits, owner and times of the inode at p.
type SetAttr struct {
	Mode         *uint32 // permission bits only
	UID, GID     *uint32
	Atime, Mtime *format.Timespec
}

// Setattr applies a to the inode at p (symlinks themselves, not followed).
func (f *FS) Setattr(p string, a SetAttr) error {
	in, err := f.Resolve(p, false)
	if err != nil {
		return err
	}
	return wrapErr("setattr", p, f.setattrIno(in, a))
}

// SetattrInode applies a to an inode already resolved.
func (f *FS) SetattrInode(in *Inode, a SetAttr) error { return f.setattrIno(in, a) }

func (f *FS) setattrIno(in *Inode, a SetAttr) error {
	// Start from the stored inode: the caller's copy may predate changes
	// made since (entries added to a directory change its size).
	if err := f.refresh(in); err != nil {
		return err
	}
	if a.Mode != nil {
		in.Mode = in.Mode&syscall.S_IFMT | *a.Mode&0o7777
	}
	if a.UID != nil {
		in.UID = *a.UID
	}
	if a.GID != nil {
		in.GID = *a.GID
	}
	if a.Atime != nil {
		in.Atime = *a.Atime
	}
	if a.Mtime != nil {
		in.Mtime = *a.Mtime
	}
	in.Ctime = f.Now()
	return f.putInode(in)
}

// Chown sets the owner and group of in (nil: unchanged) as chown(2) does
// on Linux, for any caller and even to the same ids: a non-directory
// loses its set-user-ID bit, its set-group-ID bit where that means one
// (group execute set; without it the bit marks mandatory locking) and
// its file capabilities (security.capability).
func (f *FS) Chown(in *Inode, uid, gid *uint32) error {
	if err := f.refresh(in); err != nil {
		return err
	}
	a := SetAttr{UID: uid, GID: gid}
	if !in.IsDir() {
		if m := chownedMode(in.Mode) & 0o7777; m != in.Mode&0o7777 {
			a.Mode = &m
		}
		if err := f.RemoveXattr(in, capabilityXattr); err != nil && !errors.Is(err, syscall.ENODATA) {
			return err
		}
	}
	return f.setattrIno(in, a)
}

// capabilityXattr holds a file's capabilities (setcap(8)).
const capabilityXattr = "security.capability"

// chownedMode is a non-directory's mode after chown(2) by a caller with
// CAP_FSETID: no set-user-ID, no set-group-ID when group-executable.
func chownedMode(mode uint32) uint32 {
	mode &^= syscall.S_ISUID
	if mode&syscall.S_IXGRP != 0 {
		mode &^= syscall.S_ISGID
	}
	return mode
}

// Base returns the last element of an image path ("/" for the root).
func Base(p string) string { return path.Base(path.Clean("/" + p)) }

// refresh reloads in from the running state, in place.
func (f *FS) refresh(in *Inode) error {
	cur, err := f.Inode(in.Ino)
	if err != nil {
		return err
	}
	*in = *cur
	return nil
}

// SetProps are per-inode properties, inherited by new children.
type SetProps struct {
	Dedupe      *format.DedupeProp
	Compression *format.CompressProp
	// DataTier: the device tier new data goes to (0 inherit/default).
	DataTier *uint8
}

// SetProps changes an inode's properties; a new write follows them (a
// file's "did not compress" mark is cleared so it is tried again).
func (f *FS) SetProps(in *Inode, p SetProps) error {
	if err := f.refresh(in); err != nil {
		return err
	}
	if p.Dedupe != nil {
		in.Dedupe = *p.Dedupe
	}
	if p.Compression != nil {
		in.Compression = *p.Compression
		in.Flags &^= format.InodeNoCompress
	}
	if p.DataTier != nil {
		in.DataTier = *p.DataTier
	}
	in.Ctime = f.Now()
	return f.putInode(in)
}
