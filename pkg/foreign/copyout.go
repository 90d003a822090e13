package foreign

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"
)

// CopyOptions are cp's options for a copy out of a foreign image.
type CopyOptions struct {
	Recursive bool // copy directories
	Preserve  bool // modes, owners (as root) and times (cp -p, -a)
	// Skipped is told of each entry not copied (the others still are):
	// a special file, a name the destination refuses, a read failing.
	Skipped func(error)
}

// maxCopyDepth bounds a copy's directory depth (a hostile image cannot
// recurse the copy without end).
const maxCopyDepth = 1024

// SkipError names an entry a copy left out and why.
type SkipError struct {
	Src, Dst string
	Err      error
}

func (e *SkipError) Error() string {
	return fmt.Sprintf("copy %s: not copied to %s: %v", e.Src, e.Dst, e.Err)
}
func (e *SkipError) Unwrap() error { return e.Err }

// CopyOut copies image path src to host path dst as cp does (into dst
// when it is a directory, else as dst). Every host call goes through an
// os.Root of the destination directory, so no name, ".." or symlink in
// the image (or already in the destination) makes it write outside.
// A file whose read fails is removed, never left partial.
func (im *Image) CopyOut(src, dst string, o CopyOptions) error {
	st, err := im.Lstat(src)
	if err != nil {
		return err
	}
	if st.IsDir() && !o.Recursive {
		return fmt.Errorf("%s: -r not specified; omitting directory", im.where(src))
	}
	dir, name := dst, path.Base(path.Clean("/"+src))
	if fi, err := os.Stat(dst); err != nil || !fi.IsDir() {
		dir, name = filepath.Dir(dst), filepath.Base(dst)
	}
	if name == "/" { // the image's root into an existing directory: its contents
		dir, name = dst, ""
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	c := &copier{im: im, o: o, seen: map[uint64]bool{}}
	if name == "" {
		return c.dirContents(root, src, dst, st, 0)
	}
	return c.entry(root, src, name, filepath.Join(dir, name), st, 0)
}

type copier struct {
	im   *Image
	o    CopyOptions
	seen map[uint64]bool // directories entered, by inode number where kept
	buf  []byte
}

func (c *copier) skip(src, dst string, err error) error {
	e := &SkipError{Src: c.im.where(src), Dst: dst, Err: err}
	if c.o.Skipped == nil {
		return e
	}
	c.o.Skipped(e)
	return nil
}

// entry copies src (described by st) to name in root (host path dst).
func (c *copier) entry(root *os.Root, src, name, dst string, st *Stat, depth int) error {
	switch {
	case st.IsDir():
		if err := root.Mkdir(name, 0o700); err != nil && !errors.Is(err, iofs.ErrExist) {
			return c.skip(src, dst, err)
		}
		sub, err := root.OpenRoot(name)
		if err != nil {
			return c.skip(src, dst, err)
		}
		err = c.dirContents(sub, src, dst, st, depth+1)
		sub.Close()
		if err != nil {
			return err
		}
	case st.IsSymlink():
		if err := root.Symlink(st.Target, name); err != nil {
			return c.skip(src, dst, err)
		}
	case st.IsRegular():
		if err := c.file(root, src, name, st); err != nil {
			return c.skip(src, dst, err)
		}
	default:
		return c.skip(src, dst, fmt.Errorf("%w: special file (mode %o)", ErrUnsupported, st.Mode&syscall.S_IFMT))
	}
	if c.o.Preserve {
		if err := preserve(root, name, st); err != nil {
			return c.skip(src, dst, err)
		}
	} else if st.IsDir() {
		return root.Chmod(name, os.FileMode(st.Mode&0o777|0o700)&^umask())
	}
	return nil
}

func (c *copier) dirContents(root *os.Root, src, dst string, st *Stat, depth int) error {
	if depth > maxCopyDepth {
		return c.skip(src, dst, fmt.Errorf("%w: directories nested over %d deep", ErrCorrupt, maxCopyDepth))
	}
	if st.Ino != 0 {
		if c.seen[st.Ino] {
			return c.skip(src, dst, fmt.Errorf("%w: directory inode %d reached twice", ErrCorrupt, st.Ino))
		}
		c.seen[st.Ino] = true
	}
	ents, err := c.im.ReadDir(src)
	if err != nil {
		return c.skip(src, dst, err)
	}
	for _, e := range ents {
		if err := c.entry(root, path.Join(src, e.Name), e.Name, filepath.Join(dst, e.Name), e, depth); err != nil {
			return err
		}
	}
	return nil
}

// file copies a regular file; one that does not read to its end is
// removed.
func (c *copier) file(root *os.Root, src, name string, st *Stat) error {
	in, err := c.im.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if c.buf == nil {
		c.buf = make([]byte, 1<<20)
	}
	_, err = io.CopyBuffer(out, struct{ io.Reader }{in}, c.buf)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		root.Remove(name)
		return err
	}
	if !c.o.Preserve {
		return root.Chmod(name, os.FileMode(st.Mode&0o777)&^umask())
	}
	return nil
}

// preserve sets owner (as root: the image's ids), mode and times.
func preserve(root *os.Root, name string, st *Stat) error {
	if os.Geteuid() == 0 {
		if err := root.Lchown(name, int(st.UID), int(st.GID)); err != nil {
			return err
		}
	}
	if st.IsSymlink() {
		return nil // no lutimes in os.Root; a link's mode does not exist
	}
	if err := root.Chmod(name, goMode(st.Mode)); err != nil {
		return err
	}
	if !st.Mtime.IsZero() {
		at := st.Atime
		if at.IsZero() {
			at = st.Mtime
		}
		return root.Chtimes(name, at, st.Mtime)
	}
	return nil
}

func goMode(m uint32) os.FileMode {
	g := os.FileMode(m & 0o777)
	for _, b := range specialBits {
		if m&b.u != 0 {
			g |= b.g
		}
	}
	return g
}

func umask() os.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return os.FileMode(m)
}
