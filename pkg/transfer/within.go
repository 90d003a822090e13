package transfer

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"syscall"

	"github.com/ddfs/ddfs/pkg/fsys"
)

// Reflink modes of Options.Reflink (cp --reflink=WHEN).
const (
	ReflinkAuto   = ""       // share data inside one image, copy across images
	ReflinkAlways = "always" // share data or fail (EXDEV across images)
	ReflinkNever  = "never"  // always copy the bytes
)

// CopyWithin copies image path src to dst in the same image, as cp does
// (into dst/base(src) when dst is a directory). Unless o.Reflink is
// "never", regular files share their data extents with the source (a
// reflink copy: copy on write).
func CopyWithin(f *fsys.FS, src, dst string, o Options) error {
	return CopyBetween(f, f, src, dst, o)
}

// CopyBetween copies path src of image sf to dst in image df (the same
// FS or another one): across images data is copied and goes through df's
// write path (its dedupe and compression apply on the way in).
func CopyBetween(sf, df *fsys.FS, src, dst string, o Options) error {
	if sf != df && o.Reflink == ReflinkAlways {
		return fmt.Errorf("cannot reflink between two images: %w", syscall.EXDEV)
	}
	in, err := sf.Resolve(src, !o.Recursive || o.Follow)
	if err != nil {
		return err
	}
	if in.IsDir() && !o.Recursive {
		return &OmitDirError{Path: src, InImage: true}
	}
	target := dst
	if d, err := df.Resolve(dst, true); err == nil && d.IsDir() {
		target = path.Join(dst, fsys.Base(src))
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err // unreadable is not missing
	}
	if err := slashTarget(target, in.IsDir()); err != nil {
		return err
	}
	s, t := path.Clean(src), path.Clean(target)
	if sf == df && in.IsDir() && (t == s || strings.HasPrefix(t, strings.TrimSuffix(s, "/")+"/")) { // "/" holds every path
		return fmt.Errorf("cannot copy a directory, '%s', into itself, '%s'", src, target)
	}
	w := &within{sf: sf, f: df, o: o, buf: make([]byte, bufSize), links: map[uint64]string{}}
	if err := w.copy(in, s, t); err != nil {
		return err
	}
	if err := df.Sync(); err != nil {
		return err
	}
	return w.bad.Done(nil)
}

// OmitDirError is cp's refusal of a directory source without -r; Path is
// the source as named (an image path when InImage), which the CLI
// prefixes with its image: "omitting directory 'd.img:/dir'".
type OmitDirError struct {
	Path    string
	InImage bool
}

func (e *OmitDirError) Error() string {
	return fmt.Sprintf("-r not specified; omitting directory '%s'", e.Path)
}

// slashTarget refuses to make a non-directory at a path ending in a
// slash (it names a directory): ENOTDIR, as cp's "cannot create regular
// file 'x/'".
func slashTarget(target string, dir bool) error {
	if dir || !fsys.DirOnly(target) {
		return nil
	}
	return &fs.PathError{Op: "copy", Path: target, Err: syscall.ENOTDIR}
}

// within copies a tree from sf to f (the destination).
type within struct {
	sf, f *fsys.FS
	o     Options
	buf   []byte
	links map[uint64]string
	bad   fsys.Refused
}

func (w *within) copy(in *fsys.Inode, src, dst string) error {
	if w.o.Archive && !in.IsDir() && in.Nlink > 1 {
		if first, ok := w.links[in.Ino]; ok {
			return w.f.Link(first, dst)
		}
		w.links[in.Ino] = dst
	}
	if old, err := w.f.Resolve(dst, false); err == nil {
		if w.sf == w.f && old.Ino == in.Ino {
			return sameFileError{src, dst}
		}
		if w.o.NoClobber || (old.IsDir() && in.IsDir()) {
			if !in.IsDir() {
				return nil
			}
		} else if err := w.f.Remove(dst); err != nil {
			return err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	a := fsys.Attr{Mode: in.Mode, UID: in.UID, GID: in.GID, Rdev: in.Rdev}
	keep := w.o.keepAttrs()
	if keep {
		a.Atime, a.Mtime, a.Ctime, a.Btime, a.HasTimes = in.Atime, in.Mtime, w.f.Now(), w.f.Now(), true
	}
	switch {
	case in.IsDir():
		d, err := w.f.Resolve(dst, false)
		if errors.Is(err, fs.ErrNotExist) {
			d, err = w.f.Mkdir(dst, a)
		}
		if err != nil {
			return err
		}
		kids, err := w.sf.Children(in)
		if err := w.bad.Note(src, err); err != nil {
			return err
		}
		for _, k := range kids {
			if err := w.copy(k.Inode, path.Join(src, k.Entry.Name), path.Join(dst, k.Entry.Name)); err != nil {
				return err
			}
		}
		if keep {
			return w.f.SetattrInode(d, fsys.SetAttr{Atime: &in.Atime, Mtime: &in.Mtime})
		}
		return nil
	case in.IsSymlink():
		target, err := w.sf.Readlink(src)
		if err != nil {
			return err
		}
		_, err = w.f.Symlink(target, dst, a)
		return err
	default:
		out, err := w.f.Create(dst, a)
		if err != nil {
			return err
		}
		if in.IsRegular() {
			if err := w.data(in, out); err != nil {
				return err
			}
		}
		if w.o.Archive {
			xs, err := w.sf.ListXattrs(in)
			if err != nil {
				return err
			}
			for _, x := range xs {
				if err := w.f.SetXattr(out, x.Name, x.Value); err != nil {
					return err
				}
			}
		}
		if keep {
			if err := w.f.SetattrInode(out, fsys.SetAttr{Atime: &in.Atime, Mtime: &in.Mtime}); err != nil {
				return err
			}
		}
		return w.f.MaybeCommit()
	}
}

// data copies a regular file's data: shared inside one image, bytes
// otherwise.
func (w *within) data(in, out *fsys.Inode) error {
	if w.sf == w.f && w.o.Reflink != ReflinkNever {
		if err := w.f.CloneData(in, out); err != nil {
			return err
		}
		if w.o.Progress != nil {
			w.o.Progress(int64(in.Size))
		}
		return nil
	}
	// Data ranges only: holes stay holes and cost nothing (O(extents)).
	err := w.sf.ReadData(in, w.buf, func(p []byte, off uint64) error {
		if w.o.Progress != nil {
			w.o.Progress(int64(len(p)))
		}
		return w.f.WriteAt(out, p, off)
	})
	if err != nil {
		return err
	}
	if out.Size < in.Size {
		return w.f.Truncate(out, in.Size)
	}
	return nil
}

// sameFileError is cp's refusal to copy a file onto itself; it is an
// EINVAL (a precondition: nothing was changed).
type sameFileError struct{ src, dst string }

func (e sameFileError) Error() string {
	return fmt.Sprintf("'%s' and '%s' are the same file", e.src, e.dst)
}

func (e sameFileError) Is(target error) bool { return target == syscall.EINVAL }
