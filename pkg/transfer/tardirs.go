package transfer

import (
	"archive/tar"
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// tarExtract holds the directories of a TarIn whose times wait until
// their entries are in (each entry made in a directory changes its
// mtime), as GNU tar's delayed set-stat does.
type tarExtract struct {
	f   *fsys.FS
	dir string
	// pending are ancestors of the last entry (and that entry), outermost
	// first: an archive lists a directory's entries after it, so this
	// stays as deep as the tree, not as long as the archive.
	pending []pendingDir
}

type pendingDir struct {
	rel, dst     string // rel "" is the target directory ("./")
	ino          uint64
	atime, mtime format.Timespec
}

// leave sets the times of the pending directories that rel is not in.
func (x *tarExtract) leave(rel string) error {
	for n := len(x.pending); n > 0; n = len(x.pending) {
		p := x.pending[n-1]
		if p.rel == "" && rel != "" || strings.HasPrefix(rel, p.rel+"/") {
			return nil
		}
		x.pending = x.pending[:n-1]
		if err := x.setTimes(p); err != nil {
			return err
		}
	}
	return nil
}

// finish sets the times of every directory still pending.
func (x *tarExtract) finish() error {
	for n := len(x.pending); n > 0; n = len(x.pending) {
		p := x.pending[n-1]
		x.pending = x.pending[:n-1]
		if err := x.setTimes(p); err != nil {
			return err
		}
	}
	return nil
}

// enter makes directory entry rel (just extracted at dst) pending.
func (x *tarExtract) enter(rel, dst string, a fsys.Attr) error {
	in, err := x.f.Resolve(dst, false)
	if err != nil {
		return err
	}
	x.pending = append(x.pending, pendingDir{rel: rel, dst: dst, ino: in.Ino, atime: a.Atime, mtime: a.Mtime})
	return nil
}

// top applies the archive's "./" entry to the target directory: mode and
// owner now, times when the extraction ends.
func (x *tarExtract) top(h *tar.Header, o Options) error {
	if h.Typeflag != tar.TypeDir {
		return nil
	}
	a := tarAttr(h, o)
	in, err := x.f.Resolve(x.dir, true)
	if err != nil {
		return err
	}
	if err := x.f.SetattrInode(in, fsys.SetAttr{Mode: &a.Mode, UID: &a.UID, GID: &a.GID}); err != nil {
		return err
	}
	x.pending = append(x.pending, pendingDir{rel: "", dst: x.dir, ino: in.Ino, atime: a.Atime, mtime: a.Mtime})
	return nil
}

// setTimes stamps a pending directory if it is still the one extracted
// (a later entry may have replaced it).
func (x *tarExtract) setTimes(p pendingDir) error {
	in, err := x.f.Resolve(p.dst, p.rel == "")
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if in.Ino != p.ino || !in.IsDir() {
		return nil
	}
	return x.f.SetattrInode(in, fsys.SetAttr{Atime: &p.atime, Mtime: &p.mtime})
}

// tarTarget makes the target directory when it is missing and its parent
// exists, as cp -r makes its destination; else it names what is missing.
func tarTarget(f *fsys.FS, dir string) error {
	in, err := f.Resolve(dir, true)
	if err == nil {
		if !in.IsDir() {
			return &fs.PathError{Op: "extract", Path: dir, Err: syscall.ENOTDIR}
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	parent := path.Dir(dir)
	pin, err := f.Resolve(parent, true)
	if errors.Is(err, fs.ErrNotExist) {
		return &fs.PathError{Op: "extract", Path: parent, Err: syscall.ENOENT}
	}
	if err != nil {
		return err
	}
	if !pin.IsDir() {
		return &fs.PathError{Op: "extract", Path: parent, Err: syscall.ENOTDIR}
	}
	_, err = f.Mkdir(dir, fsys.Attr{Mode: 0o755, UID: uint32(os.Getuid()), GID: uint32(os.Getgid())})
	return err
}

// implicitDir is the attributes of a directory an archive has no entry
// for, made above one of its entries: mode 0755 (0777 less the usual
// umask, fixed so mkfs --tar stays reproducible), the extracting user
// (or the forced owner), the filesystem's clock (SOURCE_DATE_EPOCH under
// mkfs). An entry for it later in the archive sets its metadata.
func implicitDir(o Options) *fsys.Attr {
	a := &fsys.Attr{Mode: 0o755, UID: uint32(os.Getuid()), GID: uint32(os.Getgid())}
	if o.ForceUID != nil {
		a.UID = *o.ForceUID
	}
	if o.ForceGID != nil {
		a.GID = *o.ForceGID
	}
	return a
}
