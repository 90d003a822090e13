package transfer

import (
	"cmp"
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
	"github.com/ddfs/ddfs/pkg/zeros"
)

// outCopier writes below one host directory only. Every directory is
// entered as its own os.Root and every name used is a single checked
// component, so no name, ".." or symlink in an image can lead a write
// outside the destination, and no path is walked twice.
type outCopier struct {
	f     *fsys.FS
	o     Options
	buf   []byte
	links map[uint64]linkRef // image inode -> first copy, for -a
	dups  []*os.File         // directory handles the links refer to
	bad   refusal            // the first entry not copied, in the walk's order
	seq   int                // entries met so far: a refusal's place in the walk
	w     *outWriter         // makes small files beside the walk (trees)
	uid   int                // our euid: the owner a new file gets
	egid  int
	umask uint32 // what open takes from a new file's mode
}

// linkRef finds the first copy of a hard-linked file again.
type linkRef struct {
	dir  *os.File // kept open while links may point at it
	name string
}

// hostDir is a directory being filled: its root and an open handle for
// the *at calls os.Root does not offer (mknod, lutimes, linkat).
type hostDir struct {
	root *os.Root
	fd   *os.File
	dup  *os.File // a handle that outlives the directory walk, for hard links
	path string   // host path, for messages
	dfd  int      // fd's number (File.Fd costs two fcntl a call)
	gid  int      // the group a file made here gets (the directory's if setgid)
}

func openHostDir(r *os.Root, host string, egid int) (*hostDir, error) {
	fd, err := r.Open(".")
	if err != nil {
		return nil, err
	}
	d := &hostDir{root: r, fd: fd, path: host, dfd: int(fd.Fd()), gid: egid}
	var st unix.Stat_t
	if unix.Fstat(d.dfd, &st) != nil || st.Mode&unix.S_ISGID != 0 {
		d.gid = -1 // not known, or the directory's: chown every file
	}
	return d, nil
}

func (d *hostDir) close() {
	d.fd.Close()
	d.root.Close()
}

// CopyOut copies image path src to host path dst as `cp SRC DST`: into
// dst/base(src) when dst is an existing directory.
func CopyOut(f *fsys.FS, src, dst string, o Options) error {
	in, err := f.Resolve(src, !o.Recursive && !o.Archive || o.Follow)
	if err != nil {
		return err
	}
	if in.IsDir() && !o.Recursive {
		return &OmitDirError{Path: src, InImage: true}
	}
	dir, name := filepath.Dir(filepath.Clean(dst)), filepath.Base(dst)
	st, err := os.Stat(dst)
	switch {
	case err == nil && st.IsDir():
		dir, name = dst, fsys.Base(src)
		if name == "/" {
			name = "."
		}
	case errors.Is(err, syscall.ENOTDIR):
		return err // "f/" of a file
	default:
		if err := slashTarget(dst, in.IsDir()); err != nil {
			return err
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	hd, err := openHostDir(root, dir, os.Getegid())
	if err != nil {
		root.Close()
		return err
	}
	defer hd.close()
	c := &outCopier{f: f, o: o, buf: make([]byte, bufSize), links: map[uint64]linkRef{}, uid: os.Geteuid(), egid: os.Getegid(), umask: processUmask()}
	if in.IsDir() {
		c.w = newOutWriter(c)
	}
	err = c.copy(in, src, hd, name, false)
	if c.w != nil {
		c.w.close() // before the folders and link handles it uses close
	}
	for _, d := range c.dups {
		d.Close()
	}
	if err != nil {
		return err
	}
	return c.bad.err
}

// copy writes inode in (image path src) as name inside d. fresh says d
// was just made by us, so nothing can be in the way.
func (c *outCopier) copy(in *fsys.Inode, src string, d *hostDir, name string, fresh bool) error {
	c.seq++
	seq := c.seq
	if name != "." && !format.ValidName(name) {
		return fmt.Errorf("%s: invalid name %q in image", src, name)
	}
	if !in.IsDir() && c.o.NoClobber && !fresh {
		if _, err := d.root.Lstat(name); err == nil {
			return nil
		}
	}
	if !in.IsDir() && !fresh {
		d.root.Remove(name) // replace; never write through what is there
	}
	if c.o.Archive && !in.IsDir() && in.Nlink > 1 {
		if first, ok := c.links[in.Ino]; ok {
			if c.w != nil {
				c.w.link(seq, first, src, d, name) // after the first copy's file
				return nil
			}
			return unix.Linkat(int(first.dir.Fd()), first.name, d.dfd, name, 0)
		}
		if d.dup == nil {
			dup, err := d.root.Open(".")
			if err != nil {
				return err
			}
			d.dup = dup
			c.dups = append(c.dups, dup)
		}
		c.links[in.Ino] = linkRef{d.dup, name}
	}
	switch {
	case in.IsDir():
		return c.copyDir(seq, in, src, d, name)
	case in.IsSymlink():
		target, err := c.f.Readlink(src)
		if err != nil {
			return err
		}
		if err := d.root.Symlink(target, name); err != nil { // made, never followed
			return err
		}
		if c.o.keepAttrs() {
			_ = unix.Fchownat(d.dfd, name, int(in.UID), int(in.GID), unix.AT_SYMLINK_NOFOLLOW)
			return c.utimes(d, name, in, unix.AT_SYMLINK_NOFOLLOW)
		}
		return nil
	case in.IsRegular() && c.w != nil && in.Size <= outJobMax:
		return c.w.file(seq, in, src, d, name)
	case in.IsRegular():
		return c.copyFile(in, src, d, name)
	default:
		if !c.o.Archive && !c.o.Recursive {
			return fmt.Errorf("%s: not a regular file, directory or symlink (use -r or -a to copy special files)", src)
		}
		if err := unix.Mknodat(d.dfd, name, in.Mode, int(in.Rdev)); err != nil {
			if errors.Is(err, syscall.EPERM) { // a device node, not root: name it, go on
				c.bad.add(seq, &fs.PathError{Op: "mknod", Path: src, Err: err})
				return nil
			}
			return &fs.PathError{Op: "mknod", Path: src, Err: err}
		}
		if c.o.keepAttrs() {
			_ = unix.Fchownat(d.dfd, name, int(in.UID), int(in.GID), unix.AT_SYMLINK_NOFOLLOW)
			_ = d.root.Chmod(name, fs.FileMode(in.Mode&0o777)|modeBits(in.Mode))
			return c.utimes(d, name, in, 0)
		}
		return nil
	}
}

func (c *outCopier) copyDir(seq int, in *fsys.Inode, src string, d *hostDir, name string) error {
	made := false
	if name != "." {
		err := d.root.Mkdir(name, 0o700)
		made = err == nil
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	sub, err := d.root.OpenRoot(name)
	if err != nil {
		return err
	}
	sd, err := openHostDir(sub, filepath.Join(d.path, name), c.egid)
	if err != nil {
		sub.Close()
		return err
	}
	kids, err := c.f.Children(in)
	if err := c.note(seq, src, err); err != nil {
		sd.close()
		return err
	}
	for _, k := range kids {
		// As cp: an entry that cannot be copied (a symlink in the way
		// that leads out of the destination, a read error) is reported
		// and the others are still copied; the exit status says so.
		ksrc := path.Join(src, k.Entry.Name)
		if err := c.copy(k.Inode, ksrc, sd, k.Entry.Name, made); err != nil {
			c.bad.add(c.seq, entryError(ksrc, filepath.Join(sd.path, k.Entry.Name), err))
		}
	}
	var xs []format.Xattr
	if c.o.Archive {
		xs, _ = c.f.ListXattrs(in) // none when they cannot be read, as for files
	}
	if c.w != nil {
		c.w.dir(c.seq, in, xs, src, d, name, sd) // after all that goes in it
		return nil
	}
	err = c.dirAttrs(in, xs, d, name, sd)
	sd.close()
	return err
}

// dirAttrs gives folder name in d, open as sd, its owner, mode, xattrs
// and times once everything in it is written.
func (c *outCopier) dirAttrs(in *fsys.Inode, xs []format.Xattr, d *hostDir, name string, sd *hostDir) error {
	if name == "." && !c.o.keepAttrs() {
		return nil
	}
	f := sd.fd
	if c.o.keepAttrs() {
		_ = f.Chown(int(in.UID), int(in.GID))
	}
	if err := f.Chmod(fs.FileMode(in.Mode&0o777) | modeBits(in.Mode)); err != nil {
		return err
	}
	if !c.o.keepAttrs() {
		return nil
	}
	setXattrs(xs, sd.dfd)
	return c.utimes(d, name, in, 0)
}

// note takes the error of listing directory dir (an image path) as
// fsys.Refused.Note does: an EntryError is remembered and the walk goes
// on; any other error stops it.
func (c *outCopier) note(seq int, dir string, err error) error {
	var ee *fsys.EntryError
	if err == nil || !errors.As(err, &ee) {
		return err
	}
	c.bad.add(seq, &fs.PathError{Op: "read", Path: path.Join(dir, ee.Name), Err: ee})
	return nil
}

// copyFile writes a regular file with raw calls on the directory's fd:
// os.Root.OpenFile and os.File add fcntl, epoll and fstat calls to every
// file, and on this VM each syscall costs microseconds (issue 16). The
// name is one checked component and O_CREAT|O_EXCL never follows a link,
// so this is as confined as os.Root.
func (c *outCopier) copyFile(in *fsys.Inode, src string, d *hostDir, name string) error {
	perm := in.Mode & 0o777
	fd, err := unix.Openat(d.dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC|unix.O_NOFOLLOW, perm)
	if err != nil {
		return &fs.PathError{Op: "open", Path: filepath.Join(d.path, name), Err: err}
	}
	w := fdWriter{fd: fd}
	werr, err := c.writeData(in, &w)
	if err != nil {
		err = &fs.PathError{Op: "read", Path: src, Err: err}
	}
	if err = cmp.Or(werr, err); err == nil && w.end != int64(in.Size) {
		err = unix.Ftruncate(fd, int64(in.Size))
	}
	if err == nil && c.o.keepAttrs() {
		var xs []format.Xattr
		if c.o.Archive {
			xs, _ = c.f.ListXattrs(in)
		}
		err = c.fileAttrs(fd, in, xs, d, name)
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		// A partial file would look complete: it goes (README, copy-out).
		unix.Unlinkat(d.dfd, name, 0)
	}
	return err
}

// fileAttrs gives a copied file its owner, mode, xattrs and times.
// Calls that would change nothing are left out: a new file's owner is
// our euid and the directory's group value (hostDir.gid), and its mode
// only differs from the one open asked for when umask or special bits do.
func (c *outCopier) fileAttrs(fd int, in *fsys.Inode, xs []format.Xattr, d *hostDir, name string) error {
	if int(in.UID) != c.uid || int(in.GID) != d.gid {
		_ = unix.Fchown(fd, int(in.UID), int(in.GID)) // as cp -p: not an error for a user
	}
	if in.Mode&0o7777 != in.Mode&0o777&^c.umask {
		// After chown, which clears setuid.
		if err := unix.Fchmod(fd, in.Mode&0o7777); err != nil {
			return err
		}
	}
	setXattrs(xs, fd)
	return c.utimes(d, name, in, 0)
}

// makeFile writes a regular file whose bytes were read already (the
// writer's files): as copyFile, holes where data has zero blocks.
func (c *outCopier) makeFile(in *fsys.Inode, data []byte, xs []format.Xattr, d *hostDir, name string) error {
	fd, err := unix.Openat(d.dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC|unix.O_NOFOLLOW, in.Mode&0o777)
	if err != nil {
		return &fs.PathError{Op: "open", Path: filepath.Join(d.path, name), Err: err}
	}
	w := fdWriter{fd: fd}
	err = writeNonZero(&w, data, 0)
	if err == nil && w.end != int64(in.Size) {
		err = unix.Ftruncate(fd, int64(in.Size))
	}
	if err == nil && c.o.keepAttrs() {
		err = c.fileAttrs(fd, in, xs, d, name)
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		unix.Unlinkat(d.dfd, name, 0) // a partial file would look complete
	}
	return err
}

// readError names a file whose bytes could not be read.
func readError(src string, err error) error {
	return &fs.PathError{Op: "read", Path: src, Err: cmp.Or(err, io.ErrUnexpectedEOF)}
}

// fdWriter writes at offsets of a raw fd and remembers the end of the
// last write (so a file whose size is already right is not truncated).
type fdWriter struct {
	fd  int
	end int64
}

func (w *fdWriter) WriteAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		m, err := unix.Pwrite(w.fd, p[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		n += m
	}
	w.end = max(w.end, off+int64(n))
	return n, nil
}

// entryError names an entry that was not copied by its image path and
// the host path it was to go to.
func entryError(src, host string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == src {
		err = pe.Err // the image path is said once
	}
	return &fs.PathError{Op: "copy", Path: src, Err: fmt.Errorf("not copied to %s: %w", host, err)}
}

// utimes sets atime and mtime (nanoseconds) of name in d.
func (c *outCopier) utimes(d *hostDir, name string, in *fsys.Inode, flags int) error {
	ts := []unix.Timespec{unix.NsecToTimespec(fsys.Time(in.Atime).UnixNano()), unix.NsecToTimespec(fsys.Time(in.Mtime).UnixNano())}
	if err := unix.UtimesNanoAt(d.dfd, name, ts, flags); err != nil {
		return &fs.PathError{Op: "utimes", Path: name, Err: err}
	}
	return nil
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

// setXattrs copies xattrs; namespaces the user may not write are skipped.
func setXattrs(xs []format.Xattr, fd int) {
	for _, x := range xs {
		_ = unix.Fsetxattr(fd, x.Name, x.Value, 0)
	}
}

// holeBlock is the granularity of holes made when copying out.
const holeBlock = 4096

// writeNonZero writes p at off except for its all-zero blocks.
func writeNonZero(w io.WriterAt, p []byte, off int64) error {
	for i := 0; i < len(p); {
		j := i
		for j < len(p) && !zeros.Is(p[j:min(j+holeBlock, len(p))]) {
			j = min(j+holeBlock, len(p))
		}
		if j > i {
			if _, err := w.WriteAt(p[i:j], off+int64(i)); err != nil {
				return err
			}
		}
		for j < len(p) && zeros.Is(p[j:min(j+holeBlock, len(p))]) {
			j = min(j+holeBlock, len(p))
		}
		i = j
	}
	return nil
}

// processUmask reads the umask (setting it back at once).
func processUmask() uint32 {
	m := unix.Umask(0)
	unix.Umask(m)
	return uint32(m)
}
