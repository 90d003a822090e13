package rescue

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ddfs/ddfs/format"
)

// host is the destination folder. Every call goes through os.Root, so no
// name from the image and no symlink already in the folder leads a write
// outside it.
type host struct {
	root *os.Root
	// owners: ownership is kept only when running as root (as cp -a).
	owners bool
}

// ErrExists: the host already has an entry of that name; it is kept.
var ErrExists = errors.New("exists on the host; not overwritten")

func newHost(dst string) (*host, error) {
	if err := os.Mkdir(dst, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	r, err := os.OpenRoot(dst)
	if err != nil {
		return nil, err
	}
	return &host{root: r, owners: os.Geteuid() == 0}, nil
}

func (h *host) close() { h.root.Close() }

// mkdir makes a folder (0700 until its attributes are set, so its
// entries can be made whatever its mode); an existing folder is merged.
func (h *host) mkdir(rel string) error {
	err := h.root.Mkdir(rel, 0o700)
	if errors.Is(err, fs.ErrExist) {
		if fi, serr := h.root.Lstat(rel); serr == nil && fi.IsDir() {
			return nil
		}
		return ErrExists
	}
	return err
}

// create makes a new file; an existing one is never opened.
func (h *host) create(rel string) (*os.File, error) {
	f, err := h.root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil, ErrExists
	}
	return f, err
}

// attrs sets xattrs (those the host takes), owner, mode and times of a file or folder through
// an open descriptor, mode after owner (chown clears set-id bits).
func (h *host) attrs(f *os.File, rel string, in *format.InodeItem, xs []format.Xattr) error {
	fd := int(f.Fd())
	var errs []error
	for _, x := range xs {
		// As ddfs cp -a: an xattr the host refuses (a namespace the
		// user may not write, a value its kernel rejects) is skipped.
		_ = unix.Fsetxattr(fd, x.Name, x.Value, 0)
	}
	if h.owners {
		errs = append(errs, unix.Fchown(fd, int(in.UID), int(in.GID)))
	}
	errs = append(errs, unix.Fchmod(fd, in.Mode&0o7777))
	a, m := time.Unix(epochFor(in.Atime)), time.Unix(epochFor(in.Mtime))
	errs = append(errs, h.root.Chtimes(rel, a, m)) // rel is what this call made: no link

	return errors.Join(errs...)
}

// dirAttrs sets a folder's attributes once everything in it is made.
func (h *host) dirAttrs(rel string, in *format.InodeItem, xs []format.Xattr) error {
	f, err := h.root.OpenFile(rel, os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return h.attrs(f, rel, in, xs)
}

// symlink makes a link with its times (and owner, as root); Linux has no
// link modes.
func (h *host) symlink(target, rel string, in *format.InodeItem) error {
	err := h.root.Symlink(target, rel)
	if errors.Is(err, fs.ErrExist) {
		return ErrExists
	}
	if err == nil && h.owners {
		err = h.root.Lchown(rel, int(in.UID), int(in.GID))
	}
	if err == nil {
		err = h.inParent(rel, func(fd int, name string) error { return linkTimes(fd, name, in) })
	}
	return err
}

func (h *host) link(first, rel string) error {
	err := h.root.Link(first, rel)
	if errors.Is(err, fs.ErrExist) {
		return ErrExists
	}
	return err
}

// special makes a fifo, socket or device node (a device only as root,
// as cp -a).
func (h *host) special(rel string, in *format.InodeItem) error {
	return h.inParent(rel, func(fd int, name string) error {
		err := unix.Mknodat(fd, name, in.Mode, int(in.Rdev))
		if errors.Is(err, fs.ErrExist) {
			return ErrExists
		}
		if err == nil && h.owners {
			err = unix.Fchownat(fd, name, int(in.UID), int(in.GID), unix.AT_SYMLINK_NOFOLLOW)
		}
		if err == nil {
			err = unix.Fchmodat(fd, name, in.Mode&0o7777, 0)
		}
		if err == nil {
			err = linkTimes(fd, name, in)
		}
		return err
	})
}

// linkTimes sets the times of name itself (a symlink is not followed).
func linkTimes(fd int, name string, in *format.InodeItem) error {
	ts := []unix.Timespec{unix.NsecToTimespec(in.Atime.Sec*1e9 + int64(in.Atime.Nsec)), unix.NsecToTimespec(in.Mtime.Sec*1e9 + int64(in.Mtime.Nsec))}
	return unix.UtimesNanoAt(fd, name, ts, unix.AT_SYMLINK_NOFOLLOW)
}

// inParent runs fn with a descriptor of rel's folder (opened inside the
// root, so it is one) and rel's last name: the calls os.Root lacks.
func (h *host) inParent(rel string, fn func(fd int, name string) error) error {
	d, err := h.root.OpenFile(path.Dir(rel), os.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer d.Close()
	return fn(int(d.Fd()), path.Base(rel))
}
