package fsys

import (
	"errors"
	"io"
	"io/fs"
	"math"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ddfs/ddfs/format"
)

// IOFS returns a read-only io/fs view of f, for code written against the
// standard interfaces (fs.WalkDir, fstest, template.ParseFS, http.FS, ...).
//
// The value implements fs.FS, fs.ReadDirFS, fs.StatFS, fs.ReadFileFS and
// fs.ReadLinkFS. Names are io/fs names: unrooted, slash-separated, checked
// with fs.ValidPath, "." being the root of the image. Open, Stat, ReadDir
// and ReadFile follow symbolic links as os.DirFS does; Lstat and ReadLink
// do not. Links never leave the image: an absolute target resolves from
// the image root and ".." stops there (Resolve), and more than 40 links in
// one lookup fail with ELOOP.
//
// Opened files implement fs.File, fs.ReadDirFile, io.ReaderAt and
// io.Seeker; FileInfo.Sys returns the *Inode. Devices, fifos and sockets
// open and read as empty files. ReadDir lists are sorted by name. A name
// that is not a valid file name (such as "../x") is never listed: the
// format rejects it as corruption, failing the listing, and the view
// drops any that got through. Errors are *fs.PathError carrying the io/fs
// name, so errors.Is(err, fs.ErrNotExist) and friends work.
//
// Reading never begins a transaction: the view reads the committed trees,
// or the running transaction's view if the FS has one. The view serializes
// its own calls, so it may be used from several goroutines, but not while
// the FS is changed through its other methods. An open file keeps the inode
// it opened (size, times) and a small read-ahead window.
func (f *FS) IOFS() fs.FS { return &ioFS{f: f} }

// ioFS is the view IOFS returns.
type ioFS struct {
	mu sync.Mutex // serializes calls into f
	f  *FS
}

var (
	_ fs.ReadDirFS   = (*ioFS)(nil)
	_ fs.StatFS      = (*ioFS)(nil)
	_ fs.ReadFileFS  = (*ioFS)(nil)
	_ fs.ReadLinkFS  = (*ioFS)(nil)
	_ fs.ReadDirFile = (*ioFile)(nil)
	_ io.ReaderAt    = (*ioFile)(nil)
	_ io.Seeker      = (*ioFile)(nil)
)

// ReadFile refuses files larger than ioReadFileMax (no process holds a
// terabyte) and reads in steps that start at ioReadFileChunk.
const (
	ioReadFileMax   = 1 << 40
	ioReadFileChunk = 16 << 20
)

// ioWindow bounds the read-ahead window of an open file: reads smaller
// than this are served from one cached block, so byte-sized Read and
// ReadAt calls do not each walk the extent and csum trees. The block is
// as big as the reads so far warrant (ioAhead).
const ioWindow = 128 << 10

// Unix permission bits beyond rwx, as in InodeItem.Mode (FORMAT.md §6.2).
const (
	ioModeSetuid uint32 = 0o4000
	ioModeSetgid uint32 = 0o2000
	ioModeSticky uint32 = 0o1000
)

// ioImagePath turns a valid io/fs name into a path inside the image.
func ioImagePath(name string) string {
	if name == "." {
		return "/"
	}
	return "/" + name
}

// ioErr puts err under the io/fs name: the errno of an fsys PathError is
// kept, its path (the image form) replaced.
func ioErr(op, name string, err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		err = pe.Err
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// resolve returns the inode name refers to, following a final symlink if
// follow is set.
func (v *ioFS) resolve(op, name string, follow bool) (*Inode, error) {
	// fs.ValidPath's rules but for UTF-8: a Linux name is bytes, and a
	// view that refused "caf\xe9" could not diff or copy a tree holding it.
	if !fs.ValidPath(strings.ToValidUTF8(name, "x")) {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	v.mu.Lock()
	in, err := v.f.Resolve(ioImagePath(name), follow)
	v.mu.Unlock()
	if err != nil {
		return nil, ioErr(op, name, err)
	}
	return in, nil
}

// Open opens name, following symlinks.
func (v *ioFS) Open(name string) (fs.File, error) {
	in, err := v.resolve("open", name, true)
	if err != nil {
		return nil, err
	}
	return &ioFile{v: v, name: name, in: in}, nil
}

// Stat describes name, following symlinks.
func (v *ioFS) Stat(name string) (fs.FileInfo, error) {
	in, err := v.resolve("stat", name, true)
	if err != nil {
		return nil, err
	}
	return &ioFileInfo{name: path.Base(name), in: in}, nil
}

// Lstat describes name; a final symlink is described itself.
func (v *ioFS) Lstat(name string) (fs.FileInfo, error) {
	in, err := v.resolve("lstat", name, false)
	if err != nil {
		return nil, err
	}
	return &ioFileInfo{name: path.Base(name), in: in}, nil
}

// ReadLink returns the target of the symlink name, as stored.
func (v *ioFS) ReadLink(name string) (string, error) {
	in, err := v.resolve("readlink", name, false)
	if err != nil {
		return "", err
	}
	if !in.IsSymlink() {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: syscall.EINVAL}
	}
	if in.Size > format.MaxSymlinkTarget {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: syscall.ENAMETOOLONG}
	}
	v.mu.Lock()
	target, err := v.f.readlinkIno(in)
	v.mu.Unlock()
	if err != nil {
		return "", ioErr("readlink", name, err)
	}
	return target, nil
}

// ReadFile returns the contents of name, following symlinks.
func (v *ioFS) ReadFile(name string) ([]byte, error) {
	in, err := v.resolve("open", name, true)
	if err != nil {
		return nil, err
	}
	if in.IsDir() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: syscall.EISDIR}
	}
	if in.Size > ioReadFileMax {
		return nil, &fs.PathError{Op: "read", Path: name, Err: syscall.EFBIG}
	}
	// The size comes from the image: memory grows with the data read,
	// not with what the inode claims.
	b := make([]byte, 0, min(in.Size, ioReadFileChunk))
	for uint64(len(b)) < in.Size {
		if len(b) == cap(b) {
			b = slices.Grow(b, int(min(in.Size-uint64(len(b)), uint64(len(b)))))
		}
		n, err := v.readAt(in, b[len(b):cap(b)], int64(len(b)))
		b = b[:len(b)+n]
		if err != nil && err != io.EOF { // before the n == 0 check: a failed read returns 0
			return nil, ioErr("read", name, err)
		}
		if err == io.EOF || n == 0 {
			break
		}
	}
	return b, nil
}

// ReadDir lists directory name, following symlinks, sorted by name.
func (v *ioFS) ReadDir(name string) ([]fs.DirEntry, error) {
	in, err := v.resolve("open", name, true)
	if err != nil {
		return nil, err
	}
	return v.list(name, in)
}

// readAt reads file data at off.
func (v *ioFS) readAt(in *Inode, p []byte, off int64) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.f.ReadAt(in, p, uint64(off))
}

// list returns the entries of directory in (named name), sorted by name.
func (v *ioFS) list(name string, in *Inode) ([]fs.DirEntry, error) {
	if !in.IsDir() {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: syscall.ENOTDIR}
	}
	var out []fs.DirEntry
	v.mu.Lock()
	err := v.f.ReadDir(in, func(e DirEntry) bool {
		if format.ValidName(e.Name) {
			out = append(out, &ioDirEntry{v: v, dir: name, dirI: in, e: e})
		}
		return true
	})
	v.mu.Unlock()
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	if err != nil {
		// Entries fsck flags are left out; the good ones come with the
		// error, as fs.ReadDirFS allows, so a walk can go on.
		return out, ioErr("readdir", name, err)
	}
	return out, nil
}

// ioFile is an open file or directory of the view.
type ioFile struct {
	v    *ioFS
	name string // as opened
	in   *Inode

	closed atomic.Bool
	win    atomic.Pointer[ioWin] // the last window read; never changed once stored
	ahead  ioAhead               // how much the next window reads

	mu     sync.Mutex // guards the Read position and the directory state
	off    int64      // Read and Seek position
	ents   []fs.DirEntry
	listed bool  // ents holds the listing, read at the first ReadDir
	pos    int   // next entry of ents
	bad    error // an entry the listing refused, reported once the rest is read
}

// ioWin is a window of file bytes, shared by concurrent ReadAt calls.
type ioWin struct {
	off  int64
	data []byte
}

func (fl *ioFile) errf(op string, err error) error {
	return &fs.PathError{Op: op, Path: fl.name, Err: err}
}

// Stat describes the file as opened.
func (fl *ioFile) Stat() (fs.FileInfo, error) {
	if fl.closed.Load() {
		return nil, fl.errf("stat", fs.ErrClosed)
	}
	return &ioFileInfo{name: path.Base(fl.name), in: fl.in}, nil
}

// Close releases the file; a second Close reports fs.ErrClosed.
func (fl *ioFile) Close() error {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if fl.closed.Swap(true) {
		return fl.errf("close", fs.ErrClosed)
	}
	fl.win.Store(nil)
	fl.ents = nil
	return nil
}

// readable reports why op cannot read file data, if it cannot.
func (fl *ioFile) readable(op string) error {
	if fl.closed.Load() {
		return fl.errf(op, fs.ErrClosed)
	}
	if fl.in.IsDir() {
		return fl.errf(op, syscall.EISDIR)
	}
	return nil
}

// Read reads from the current position.
func (fl *ioFile) Read(p []byte) (int, error) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if err := fl.readable("read"); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	n, err := fl.readAt(p, fl.off)
	fl.off += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

// ReadAt reads at off, as io.ReaderAt (io.EOF with a short count at the
// end); parallel calls are allowed.
func (fl *ioFile) ReadAt(p []byte, off int64) (int, error) {
	if err := fl.readable("read"); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, fl.errf("read", fs.ErrInvalid)
	}
	return fl.readAt(p, off)
}

// readAt serves reads smaller than ioWindow from the cached window and
// reads larger ones directly.
func (fl *ioFile) readAt(p []byte, off int64) (int, error) {
	size := int64(fl.in.Size)
	if fl.in.Size > math.MaxInt64 {
		size = math.MaxInt64
	}
	if off >= size {
		return 0, io.EOF
	}
	want := len(p)
	if int64(len(p)) > size-off {
		p = p[:size-off]
	}
	n := 0
	for n < len(p) {
		pos := off + int64(n)
		if w := fl.win.Load(); w != nil && pos >= w.off && pos < w.off+int64(len(w.data)) {
			n += copy(p[n:], w.data[pos-w.off:])
			continue
		}
		if len(p)-n >= ioWindow {
			m, err := fl.v.readAt(fl.in, p[n:], pos)
			n += m
			if err != nil && err != io.EOF {
				return n, fl.errf("read", err)
			}
			if m == 0 {
				break
			}
			continue
		}
		start, end := fl.ahead.window(pos, len(p)-n, n > 0 || off == fl.ahead.next.Load(), size)
		buf := make([]byte, end-start)
		m, err := fl.v.readAt(fl.in, buf, start)
		if err != nil && err != io.EOF {
			return n, fl.errf("read", err)
		}
		if int64(m) <= pos-start {
			break // the inode's data ends early; report a short read
		}
		fl.win.Store(&ioWin{off: start, data: buf[:m]})
	}
	fl.ahead.next.Store(off + int64(n))
	if n < want {
		return n, io.EOF
	}
	return n, nil
}

// DataRanges is fsys.DataRanges of the file: where its data lies.
func (fl *ioFile) DataRanges() ([]Range, error) {
	if err := fl.readable("read"); err != nil {
		return nil, err
	}
	fl.v.mu.Lock()
	defer fl.v.mu.Unlock()
	rs, err := fl.v.f.DataRanges(fl.in)
	if err != nil {
		return nil, fl.errf("read", err)
	}
	return rs, nil
}

// Seek sets the Read position. On a directory only Seek(0, io.SeekStart)
// works; it restarts ReadDir.
func (fl *ioFile) Seek(offset int64, whence int) (int64, error) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if fl.closed.Load() {
		return 0, fl.errf("seek", fs.ErrClosed)
	}
	if fl.in.IsDir() {
		if offset != 0 || whence != io.SeekStart {
			return 0, fl.errf("seek", fs.ErrInvalid)
		}
		fl.ents, fl.listed, fl.pos, fl.bad = nil, false, 0, nil
		return 0, nil
	}
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = fl.off + offset
	case io.SeekEnd:
		abs = int64(fl.in.Size) + offset
	default:
		return 0, fl.errf("seek", fs.ErrInvalid)
	}
	if abs < 0 {
		return 0, fl.errf("seek", fs.ErrInvalid)
	}
	fl.off = abs
	return abs, nil
}

// ReadDir returns the next n entries (all remaining if n <= 0), sorted by
// name, as fs.ReadDirFile: with n > 0 an empty remainder is io.EOF, with
// n <= 0 it is an empty list and nil. An entry the listing refused
// (fsys.EntryError) takes the place of that end, after the good entries.
func (fl *ioFile) ReadDir(n int) ([]fs.DirEntry, error) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if fl.closed.Load() {
		return nil, fl.errf("readdir", fs.ErrClosed)
	}
	if !fl.listed {
		ents, err := fl.v.list(fl.name, fl.in)
		if err != nil && !errors.As(err, new(*EntryError)) {
			return nil, err
		}
		fl.ents, fl.listed, fl.bad = ents, true, err
	}
	rest := fl.ents[fl.pos:]
	if n <= 0 {
		fl.pos = len(fl.ents)
		return rest[:len(rest):len(rest)], fl.bad
	}
	if len(rest) == 0 {
		if fl.bad != nil {
			return nil, fl.bad
		}
		return nil, io.EOF
	}
	k := min(n, len(rest))
	fl.pos += k
	return rest[:k:k], nil
}

// ioFileInfo is the fs.FileInfo of an inode.
type ioFileInfo struct {
	name string
	in   *Inode
}

func (fi *ioFileInfo) Name() string       { return fi.name }
func (fi *ioFileInfo) Size() int64        { return int64(fi.in.Size) }
func (fi *ioFileInfo) Mode() fs.FileMode  { return format.FSMode(fi.in.Mode) }
func (fi *ioFileInfo) ModTime() time.Time { return Time(fi.in.Mtime) }
func (fi *ioFileInfo) IsDir() bool        { return fi.in.IsDir() }
func (fi *ioFileInfo) Sys() any           { return fi.in }
func (fi *ioFileInfo) String() string     { return fs.FormatFileInfo(fi) }

// ioDirEntry is the fs.DirEntry of a directory entry; Info reads the inode
// when first asked.
type ioDirEntry struct {
	v    *ioFS
	dir  string // io/fs name of the directory listed
	dirI *Inode // the directory listed
	e    DirEntry
	info *ioFileInfo // guarded by v.mu
}

func (d *ioDirEntry) Name() string { return d.e.Name }
func (d *ioDirEntry) IsDir() bool  { return d.e.Type == format.FileTypeDir }

// Type is the type bits of the entry's file type (ModeIrregular for an
// invalid one).
func (d *ioDirEntry) Type() fs.FileMode {
	if !d.e.Type.Valid() {
		return fs.ModeIrregular
	}
	return format.FSMode(d.e.Type.Mode()).Type()
}

// Info describes the entry itself (a symlink is not followed).
func (d *ioDirEntry) Info() (fs.FileInfo, error) {
	d.v.mu.Lock()
	defer d.v.mu.Unlock()
	if d.info != nil {
		return d.info, nil
	}
	in, err := d.v.f.EntryInode(d.dirI, d.e)
	if err != nil {
		return nil, ioErr("stat", path.Join(d.dir, d.e.Name), err)
	}
	d.info = &ioFileInfo{name: d.e.Name, in: in}
	return d.info, nil
}

func (d *ioDirEntry) String() string { return fs.FormatDirEntry(d) }
