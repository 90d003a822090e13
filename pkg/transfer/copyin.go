// Package transfer copies trees between the host and an image (cp in and
// out, mkfs --rootdir) and streams tar archives in and out. Copying out
// goes through os.Root, so no name, ".." or symlink in an image can make
// it write outside the destination.
package transfer

import (
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
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// Options say what a copy keeps, as cp's flags do.
type Options struct {
	Recursive bool // -r: copy directories
	Archive   bool // -a: keep mode, owners, times, symlinks, hard links, xattrs, special files
	Preserve  bool // -p: keep mode, owners and times
	NoClobber bool // -n: never replace an existing file
	Follow    bool // -L: follow symlinks in the source
	// Owner normalisation (mkfs --all-root, --force-uid/--force-gid).
	ForceUID, ForceGID *uint32
	// Progress, if set, is told how many data bytes were copied.
	Progress func(n int64)
	// Clamp, if set, makes copies reproducible (SOURCE_DATE_EPOCH): every
	// time becomes Clamp, except mtimes that are older.
	Clamp *format.Timespec
	// Reflink is cp --reflink for copies from an image (ReflinkAuto,
	// ReflinkAlways, ReflinkNever).
	Reflink string
}

func (o *Options) keepAttrs() bool { return o.Archive || o.Preserve }

// bufSize is the copy buffer: one data extent.
const bufSize = 8 << 20

// smallFile is the size up to which copyData reads a file in one go.
const smallFile = 256 << 10

// copier holds the state of one copy-in.
type copier struct {
	f     *fsys.FS
	o     Options
	buf   []byte
	links map[[2]uint64]string // host (dev, ino) -> image path, for -a
	uid   uint32
	gid   uint32
}

// CopyIn copies the host path src to image path dst, as `cp SRC DST`
// would: into dst/base(src) when dst is a directory. When contentsOnly is
// set (mkfs --rootdir), the contents of the directory src go into dst.
func CopyIn(f *fsys.FS, src, dst string, o Options, contentsOnly bool) error {
	c := &copier{f: f, o: o, buf: make([]byte, bufSize), links: map[[2]uint64]string{}, uid: uint32(os.Getuid()), gid: uint32(os.Getgid())}
	st, err := c.stat(src, true)
	if err != nil {
		return err
	}
	if contentsOnly {
		if !st.IsDir() {
			return &fs.PathError{Op: "copy", Path: src, Err: syscall.ENOTDIR}
		}
		root, err := f.Resolve(dst, true)
		if err != nil {
			return err
		}
		if err := c.copyDirContents(src, dst, false); err != nil {
			return err
		}
		if o.keepAttrs() {
			if err := c.applyAttrs(root, src, st); err != nil {
				return err
			}
		}
		return f.Sync()
	}
	if st.IsDir() && !o.Recursive {
		return &OmitDirError{Path: src}
	}
	target := dst
	if in, err := f.Resolve(dst, true); err == nil && in.IsDir() {
		target = path.Join(dst, filepath.Base(filepath.Clean(src)))
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err // unreadable is not missing
	}
	if err := c.copy(src, target, st, false); err != nil {
		return err
	}
	return f.Sync()
}

// stat never follows a symlink unless -L asks: a symlink is copied as a
// symlink, even when named on the command line.
func (c *copier) stat(p string, top bool) (os.FileInfo, error) {
	if c.o.Follow {
		return os.Stat(p)
	}
	return os.Lstat(p)
}

// copyDirContents copies the entries of host directory src into image
// directory dst; fresh says dst was just made by us, so nothing in it
// can be in the way and no lookup is needed.
func (c *copier) copyDirContents(src, dst string, fresh bool) error {
	ents, err := os.ReadDir(src) // sorted: images come out the same every time
	if err != nil {
		return err
	}
	for _, e := range ents {
		sp := filepath.Join(src, e.Name())
		st, err := c.stat(sp, false)
		if err != nil {
			return err
		}
		if err := c.copy(sp, path.Join(dst, e.Name()), st, fresh); err != nil {
			return err
		}
	}
	return nil
}

// copy copies one host entry to image path dst (fresh: its directory
// was made by this copy).
func (c *copier) copy(src, dst string, st os.FileInfo, fresh bool) error {
	// Near full, what is copied is committed entry by entry, so ENOSPC
	// costs only the entry it hits.
	if err := c.f.CommitIfLow(uint64(max(st.Size(), 0))); err != nil {
		return err
	}
	sys, _ := st.Sys().(*syscall.Stat_t)
	if c.o.Archive && sys != nil && !st.IsDir() && sys.Nlink > 1 {
		id := [2]uint64{uint64(sys.Dev), sys.Ino}
		if first, ok := c.links[id]; ok {
			return c.f.Link(first, dst)
		}
		c.links[id] = dst
	}
	var existing *fsys.Inode
	var err error
	if fresh {
		existing, err = nil, fs.ErrNotExist
	} else {
		existing, err = c.f.Resolve(dst, false)
	}
	if err == nil {
		if existing.IsDir() && st.IsDir() {
			return c.fillDir(src, dst, existing, st, false)
		}
		if c.o.NoClobber {
			return nil
		}
		if existing.IsDir() {
			return &fs.PathError{Op: "copy", Path: dst, Err: syscall.EISDIR}
		}
		if err := c.f.Remove(dst); err != nil {
			return err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	a := c.attr(st)
	switch m := st.Mode(); {
	case m.IsDir():
		in, err := c.f.Mkdir(dst, a)
		if err != nil {
			return err
		}
		return c.fillDir(src, dst, in, st, true)
	case m&fs.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		in, err := c.f.Symlink(target, dst, a)
		if err != nil {
			return err
		}
		return c.finish(in, src, st)
	case m.IsRegular():
		in, err := c.f.Create(dst, a)
		if err != nil {
			return err
		}
		if err := c.copyData(src, dst, in, st.Size()); err != nil {
			return err
		}
		return c.finish(in, src, st)
	default:
		// Fifos, devices and sockets are made anew, as GNU cp -r does.
		if !c.o.Archive && !c.o.Recursive {
			return fmt.Errorf("%s: not a regular file, directory or symlink (use -r or -a to copy special files)", src)
		}
		if sys != nil {
			a.Rdev = uint64(sys.Rdev)
		}
		in, err := c.f.Create(dst, a)
		if err != nil {
			return err
		}
		return c.finish(in, src, st)
	}
}

// fillDir copies a directory's contents, then its attributes (times last,
// as the children change them).
func (c *copier) fillDir(src, dst string, in *fsys.Inode, st os.FileInfo, fresh bool) error {
	if err := c.copyDirContents(src, dst, fresh); err != nil {
		return err
	}
	in, err := c.f.Inode(in.Ino) // afresh: the children changed it
	if err != nil {
		return err
	}
	return c.finish(in, src, st)
}

// attr is the new inode's attributes from the host file.
func (c *copier) attr(st os.FileInfo) fsys.Attr {
	sys, _ := st.Sys().(*syscall.Stat_t)
	a := fsys.Attr{UID: c.uid, GID: c.gid}
	if sys != nil {
		a.Mode = sys.Mode
		if !c.o.keepAttrs() {
			a.Mode &^= syscall.S_ISUID | syscall.S_ISGID
		}
	} else {
		a.Mode = uint32(st.Mode().Perm())
	}
	if c.o.keepAttrs() && sys != nil {
		a.UID, a.GID = sys.Uid, sys.Gid
		now := c.f.Now()
		a.Atime = format.Timespec{Sec: sys.Atim.Sec, Nsec: uint32(sys.Atim.Nsec)}
		a.Mtime = format.Timespec{Sec: sys.Mtim.Sec, Nsec: uint32(sys.Mtim.Nsec)}
		a.Ctime, a.Btime, a.HasTimes = now, now, true
	}
	if t := c.o.Clamp; t != nil {
		a.Atime, a.Ctime, a.Btime, a.HasTimes = *t, *t, *t, true
		if a.Mtime.Sec > t.Sec || (a.Mtime.Sec == t.Sec && a.Mtime.Nsec > t.Nsec) || !c.o.keepAttrs() {
			a.Mtime = *t
		}
	}
	if c.o.ForceUID != nil {
		a.UID = *c.o.ForceUID
	}
	if c.o.ForceGID != nil {
		a.GID = *c.o.ForceGID
	}
	return a
}

// finish applies what must come after the data: xattrs, times, and the
// batch commit point (a file is whole before a commit can expose it).
func (c *copier) finish(in *fsys.Inode, src string, st os.FileInfo) error {
	if c.o.keepAttrs() {
		if err := c.applyAttrs(in, src, st); err != nil {
			return err
		}
	}
	return c.f.MaybeCommit()
}

func (c *copier) applyAttrs(in *fsys.Inode, src string, st os.FileInfo) error {
	if c.o.Archive {
		if err := c.copyXattrs(in, src); err != nil {
			return err
		}
	}
	a := c.attr(st)
	return c.f.SetattrInode(in, fsys.SetAttr{Atime: &a.Atime, Mtime: &a.Mtime})
}

func (c *copier) copyXattrs(in *fsys.Inode, src string) error {
	sz, err := unix.Llistxattr(src, nil)
	if err != nil || sz == 0 {
		return nil // no xattrs, or the host filesystem has none
	}
	names := make([]byte, sz)
	sz, err = unix.Llistxattr(src, names)
	if err != nil {
		return nil
	}
	for _, name := range splitNul(names[:sz]) {
		vs, err := unix.Lgetxattr(src, name, nil)
		if err != nil {
			continue
		}
		v := make([]byte, vs)
		vs, err = unix.Lgetxattr(src, name, v)
		if err != nil {
			continue
		}
		if err := c.f.SetXattr(in, name, v[:vs]); err != nil {
			return &fs.PathError{Op: "setxattr", Path: src, Err: err}
		}
	}
	return nil
}

func splitNul(b []byte) []string {
	var out []string
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != 0 {
			i++
		}
		if i > 0 {
			out = append(out, string(b[:i]))
		}
		if i < len(b) {
			i++
		}
		b = b[i:]
	}
	return out
}

// copyData copies a file's bytes, skipping the holes of a sparse source.
// Files bigger than the buffer are read ahead by a goroutine, so reading
// the source overlaps hashing, compression and writing in the image.
func (c *copier) copyData(src, dst string, in *fsys.Inode, size int64) error {
	// Raw calls: os.Open would add four fcntl and an epoll_ctl per file,
	// and on this VM each syscall costs microseconds (issue 16).
	flags := unix.O_RDONLY | unix.O_CLOEXEC
	if !c.o.Follow {
		flags |= unix.O_NOFOLLOW // it was a regular file at lstat; no link swapped in now
	}
	fd, err := unix.Open(src, flags, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: src, Err: err}
	}
	if size > 0 && size <= smallFile {
		// Small files in one read of size+1 bytes (size bytes back: the
		// whole file, no read for EOF), without the reader goroutine and
		// the hole seeks (fsys turns zero sectors into holes anyway): most
		// files of a tree are small, and per-file overhead dominates.
		n, err := readOnce(fd, c.buf[:size+1])
		if err != nil {
			unix.Close(fd)
			return &fs.PathError{Op: "read", Path: src, Err: err}
		}
		if n <= int(size) {
			unix.Close(fd)
			return c.writeSmall(dst, in, c.buf[:n])
		}
		// It grew since lstat: the general path below, from the start.
	}
	fh := os.NewFile(uintptr(fd), src)
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return err
	}
	size = st.Size()
	chunks := make(chan chunk, 1)
	free := make(chan []byte, 2)
	done := make(chan struct{})
	free <- c.buf
	if size > int64(len(c.buf)) {
		free <- make([]byte, len(c.buf)) // double buffering for big files
	}
	pol := c.f.Policy(in)
	go readChunks(fh, size, free, chunks, done, pol)
	// stop ends the reader and waits for it, so neither the buffers nor
	// the file are used after we return.
	stop := func() {
		close(done)
		drain(chunks)
	}
	for ch := range chunks {
		if ch.err != nil {
			stop()
			return ch.err
		}
		if werr := c.f.WriteAtHashed(in, ch.data, uint64(ch.off), ch.hashes); werr != nil {
			stop()
			return &fs.PathError{Op: "write", Path: dst, Err: unwrapErrno(werr)}
		}
		if c.o.Progress != nil {
			c.o.Progress(int64(len(ch.data)))
		}
		free <- ch.data[:cap(ch.data)]
	}
	if in.Size < uint64(size) { // a trailing hole
		return c.f.Truncate(in, uint64(size))
	}
	return nil
}

// readOnce reads p from fd, again only after a short count (a regular
// file returns less than asked for only at its end or on a signal).
func readOnce(fd int, p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := unix.Read(fd, p[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if m == 0 || n+m == len(p)-1 { // EOF, or the size the caller expects
			return n + m, nil
		}
		n += m
	}
	return n, nil
}

// writeSmall writes a whole small file read in one go.
func (c *copier) writeSmall(dst string, in *fsys.Inode, p []byte) error {
	if err := c.f.WriteAt(in, p, 0); err != nil {
		return &fs.PathError{Op: "write", Path: dst, Err: unwrapErrno(err)}
	}
	if c.o.Progress != nil {
		c.o.Progress(int64(len(p)))
	}
	if in.Size < uint64(len(p)) {
		return c.f.Truncate(in, uint64(len(p)))
	}
	return nil
}

// chunk is a piece of a source file (or the error that ended reading).
type chunk struct {
	off    int64
	data   []byte
	hashes *fsys.Hashes // dedupe hashes computed by the reader
	err    error
}

func drain(ch <-chan chunk) {
	for range ch {
	}
}

// readChunks reads the data ranges of f (SEEK_DATA/SEEK_HOLE) into
// buffers taken from free and sends them on out, which it closes.
func readChunks(f *os.File, size int64, free chan []byte, out chan<- chunk, done <-chan struct{}, pol fsys.DataPolicy) {
	defer close(out)
	for off := int64(0); off < size; {
		data, err := unix.Seek(int(f.Fd()), off, unix.SEEK_DATA)
		if err != nil {
			if errors.Is(err, syscall.ENXIO) {
				return // only a hole is left
			}
			data = off // no SEEK_DATA: copy everything
		}
		hole, err := unix.Seek(int(f.Fd()), data, unix.SEEK_HOLE)
		if err != nil {
			hole = size
		}
		for p := data; p < hole; {
			var buf []byte
			select {
			case buf = <-free:
			case <-done:
				return
			}
			n, err := f.ReadAt(buf[:min(int64(len(buf)), hole-p)], p)
			if n > 0 {
				select {
				case out <- chunk{off: p, data: buf[:n], hashes: pol.Hashes(buf[:n], uint64(p))}:
				case <-done:
					return
				}
				p += int64(n)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				select {
				case out <- chunk{err: err}:
				case <-done:
				}
				return
			}
		}
		off = hole
	}
}

// unwrapErrno narrows err to its errno for "IMG:/f: Input/output error";
// a network device's failure keeps the device's name, so the line can say
// which server failed.
func unwrapErrno(err error) error {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return err
	}
	var re *device.RemoteError
	if errors.As(err, &re) {
		return &device.RemoteError{Device: re.Device, Err: errno}
	}
	return errno
}
