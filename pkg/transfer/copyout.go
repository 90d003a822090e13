package transfer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// outCopier writes below one host directory only: every path it touches
// is relative to an os.Root, which refuses "..", absolute paths and
// symlinks that lead out.
type outCopier struct {
	f     *fsys.FS
	o     Options
	root  *os.Root
	buf   []byte
	links map[uint64]string // image inode -> host path (relative to root), for -a
}

// CopyOut copies image path src to host path dst as `cp SRC DST`: into
// dst/base(src) when dst is an existing directory.
func CopyOut(f *fsys.FS, src, dst string, o Options) error {
	in, err := f.Resolve(src, !o.Recursive && !o.Archive || o.Follow)
	if err != nil {
		return err
	}
	if in.IsDir() && !o.Recursive {
		return fmt.Errorf("-r not specified; omitting directory '%s'", src)
	}
	dir, name := filepath.Dir(dst), filepath.Base(dst)
	if st, err := os.Stat(dst); err == nil && st.IsDir() {
		dir, name = dst, fsys.Base(src)
		if name == "/" {
			name = "."
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	c := &outCopier{f: f, o: o, root: root, buf: make([]byte, bufSize), links: map[uint64]string{}}
	return c.copy(in, src, name)
}

// copy writes inode in (image path src) to rel inside the root.
func (c *outCopier) copy(in *fsys.Inode, src, rel string) error {
	if c.o.Archive && !in.IsDir() && in.Nlink > 1 {
		if first, ok := c.links[in.Ino]; ok {
			c.root.Remove(rel)
			return c.root.Link(first, rel)
		}
		c.links[in.Ino] = rel
	}
	if !in.IsDir() && c.o.NoClobber {
		if _, err := c.root.Lstat(rel); err == nil {
			return nil
		}
	}
	perm := fs.FileMode(in.Mode & 0o777)
	switch {
	case in.IsDir():
		if rel != "." {
			if err := c.root.Mkdir(rel, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
		}
		var ents []fsys.DirEntry
		if err := c.f.ReadDir(in, func(e fsys.DirEntry) bool { ents = append(ents, e); return true }); err != nil {
			return err
		}
		for _, e := range ents {
			if !format.ValidName(e.Name) {
				return fmt.Errorf("%s: invalid name %q in image", src, e.Name)
			}
			child, err := c.f.Inode(e.Ino)
			if err != nil {
				return err
			}
			if err := c.copy(child, path.Join(src, e.Name), path.Join(rel, e.Name)); err != nil {
				return err
			}
		}
		if rel != "." {
			if err := c.root.Chmod(rel, perm|modeBits(in.Mode)); err != nil {
				return err
			}
		}
	case in.IsSymlink():
		target, err := c.f.Readlink(src)
		if err != nil {
			return err
		}
		c.root.Remove(rel)
		if err := c.root.Symlink(target, rel); err != nil { // created, never followed by us
			return err
		}
	case in.IsRegular():
		if err := c.copyData(in, src, rel, perm); err != nil {
			return err
		}
	default:
		if !c.o.Archive {
			return fmt.Errorf("%s: not a regular file, directory or symlink (use -a to copy special files)", src)
		}
		if err := c.mknod(in, rel); err != nil {
			return err
		}
	}
	return c.attrs(in, src, rel)
}

func (c *outCopier) copyData(in *fsys.Inode, src, rel string, perm fs.FileMode) error {
	c.root.Remove(rel) // replace, never write through an existing symlink
	fh, err := c.root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	defer fh.Close()
	for off := uint64(0); off < in.Size; {
		n, err := c.f.ReadAt(in, c.buf, off)
		if n > 0 {
			// Keep holes: write only the runs of non-zero blocks, then set the size.
			if werr := writeNonZero(fh, c.buf[:n], int64(off)); werr != nil {
				return werr
			}
			if c.o.Progress != nil {
				c.o.Progress(int64(n))
			}
			off += uint64(n)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return &fs.PathError{Op: "read", Path: src, Err: err}
		}
	}
	if err := fh.Truncate(int64(in.Size)); err != nil {
		return err
	}
	return nil
}

// holeBlock is the granularity of holes made when copying out.
const holeBlock = 4096

// writeNonZero writes p at off except for its all-zero blocks.
func writeNonZero(w io.WriterAt, p []byte, off int64) error {
	for i := 0; i < len(p); {
		j := i
		for j < len(p) && !allZero(p[j:min(j+holeBlock, len(p))]) {
			j = min(j+holeBlock, len(p))
		}
		if j > i {
			if _, err := w.WriteAt(p[i:j], off+int64(i)); err != nil {
				return err
			}
		}
		for j < len(p) && allZero(p[j:min(j+holeBlock, len(p))]) {
			j = min(j+holeBlock, len(p))
		}
		i = j
	}
	return nil
}

var zeroBlock = make([]byte, 64<<10)

func allZero(b []byte) bool {
	for len(b) > 0 {
		n := min(len(b), len(zeroBlock))
		if !bytes.Equal(b[:n], zeroBlock[:n]) {
			return false
		}
		b = b[n:]
	}
	return true
}

// mknod makes a device node, fifo or socket inside the root: the parent
// is opened through the root and the node made relative to it.
func (c *outCopier) mknod(in *fsys.Inode, rel string) error {
	parent, err := c.root.Open(path.Dir(rel))
	if err != nil {
		return err
	}
	defer parent.Close()
	err = unix.Mknodat(int(parent.Fd()), path.Base(rel), in.Mode, int(in.Rdev))
	if err != nil {
		return &fs.PathError{Op: "mknod", Path: rel, Err: err}
	}
	return nil
}

// attrs applies owners, xattrs and times as the options ask.
func (c *outCopier) attrs(in *fsys.Inode, src, rel string) error {
	if !c.o.keepAttrs() {
		return nil
	}
	if os.Geteuid() == 0 || c.o.Archive {
		// Like cp -p as a user: failing to chown is not an error.
		_ = c.root.Lchown(rel, int(in.UID), int(in.GID))
	}
	if in.IsSymlink() {
		return c.lutimes(in, rel)
	}
	if !in.IsDir() || rel != "." {
		_ = c.root.Chmod(rel, fs.FileMode(in.Mode&0o777)|modeBits(in.Mode))
	}
	if c.o.Archive {
		if err := c.setXattrs(in, rel); err != nil {
			return err
		}
	}
	return c.root.Chtimes(rel, fsys.Time(in.Atime), fsys.Time(in.Mtime))
}

func modeBits(m uint32) fs.FileMode {
	var out fs.FileMode
	if m&syscall.S_ISUID != 0 {
		out |= fs.ModeSetuid
	}
	if m&syscall.S_ISGID != 0 {
		out |= fs.ModeSetgid
	}
	if m&syscall.S_ISVTX != 0 {
		out |= fs.ModeSticky
	}
	return out
}

func (c *outCopier) setXattrs(in *fsys.Inode, rel string) error {
	xs, err := c.f.ListXattrs(in)
	if err != nil || len(xs) == 0 {
		return err
	}
	if !in.IsRegular() && !in.IsDir() {
		return nil
	}
	fh, err := c.root.Open(rel)
	if err != nil {
		return err
	}
	defer fh.Close()
	for _, x := range xs {
		// Some namespaces need privileges the user may lack; skip those.
		_ = unix.Fsetxattr(int(fh.Fd()), x.Name, x.Value, 0)
	}
	return nil
}

// lutimes sets a symlink's own times, relative to its parent opened
// through the root.
func (c *outCopier) lutimes(in *fsys.Inode, rel string) error {
	parent, err := c.root.Open(path.Dir(rel))
	if err != nil {
		return err
	}
	defer parent.Close()
	ts := []unix.Timespec{unix.NsecToTimespec(fsys.Time(in.Atime).UnixNano()), unix.NsecToTimespec(fsys.Time(in.Mtime).UnixNano())}
	return unix.UtimesNanoAt(int(parent.Fd()), path.Base(rel), ts, unix.AT_SYMLINK_NOFOLLOW)
}
