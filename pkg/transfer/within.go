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

// CopyWithin copies image path src to dst in the same image, as cp does
// (into dst/base(src) when dst is a directory). Data is copied, not
// shared (reflinks come with dedupe).
func CopyWithin(f *fsys.FS, src, dst string, o Options) error {
	in, err := f.Resolve(src, !o.Recursive || o.Follow)
	if err != nil {
		return err
	}
	if in.IsDir() && !o.Recursive {
		return fmt.Errorf("-r not specified; omitting directory '%s'", src)
	}
	target := dst
	if d, err := f.Resolve(dst, true); err == nil && d.IsDir() {
		target = path.Join(dst, fsys.Base(src))
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err // unreadable is not missing
	}
	s, t := path.Clean(src), path.Clean(target)
	if in.IsDir() && (t == s || strings.HasPrefix(t, s+"/")) {
		return fmt.Errorf("cannot copy a directory, '%s', into itself, '%s'", src, target)
	}
	w := &within{f: f, o: o, buf: make([]byte, bufSize), links: map[uint64]string{}}
	if err := w.copy(in, s, t); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return w.bad.Done(nil)
}

type within struct {
	f     *fsys.FS
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
		if old.Ino == in.Ino {
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
		kids, err := w.f.Children(in)
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
		target, err := w.f.Readlink(src)
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
			err := w.f.ReadData(in, w.buf, func(p []byte, off uint64) error { return w.f.WriteAt(out, p, off) })
			if err != nil {
				return err
			}
			if out.Size < in.Size {
				if err := w.f.Truncate(out, in.Size); err != nil {
					return err
				}
			}
		}
		if w.o.Archive {
			xs, err := w.f.ListXattrs(in)
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

// sameFileError is cp's refusal to copy a file onto itself; it is an
// EINVAL (a precondition: nothing was changed).
type sameFileError struct{ src, dst string }

func (e sameFileError) Error() string {
	return fmt.Sprintf("'%s' and '%s' are the same file", e.src, e.dst)
}

func (e sameFileError) Is(target error) bool { return target == syscall.EINVAL }
