package foreign

import (
	"io"
	iofs "io/fs"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/ddfs/ddfs/format"
)

// FS is the image's tree as an io/fs file system (with Lstat and
// ReadLink: fs.ReadLinkFS), read-only, for walkers that take one (ddfs
// diff). Names are io/fs names ("." the root); every call goes through
// the Image, with its bounds and panic containment.
func (im *Image) FS() iofs.FS { return ioFS{im} }

type ioFS struct{ im *Image }

func (x ioFS) path(op, name string) (string, error) {
	if !iofs.ValidPath(strings.ToValidUTF8(name, "x")) { // its rules but for UTF-8: names are bytes
		return "", &iofs.PathError{Op: op, Path: name, Err: iofs.ErrInvalid}
	}
	if name == "." {
		return "/", nil
	}
	return "/" + name, nil
}

func (x ioFS) Open(name string) (iofs.File, error) {
	p, err := x.path("open", name)
	if err != nil {
		return nil, err
	}
	st, err := x.im.Stat(p)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return &ioDir{fs: x, p: p, st: st}, nil
	}
	f, err := x.im.Open(p)
	if err != nil {
		return nil, err
	}
	return ioFile{f}, nil
}

func (x ioFS) Lstat(name string) (iofs.FileInfo, error) {
	p, err := x.path("lstat", name)
	if err != nil {
		return nil, err
	}
	st, err := x.im.Lstat(p)
	if err != nil {
		return nil, err
	}
	return info{st}, nil
}

func (x ioFS) ReadLink(name string) (string, error) {
	p, err := x.path("readlink", name)
	if err != nil {
		return "", err
	}
	return x.im.Readlink(p)
}

func (x ioFS) ReadDir(name string) ([]iofs.DirEntry, error) {
	p, err := x.path("readdir", name)
	if err != nil {
		return nil, err
	}
	return x.entries(p)
}

func (x ioFS) entries(p string) ([]iofs.DirEntry, error) {
	sts, err := x.im.ReadDir(p)
	if err != nil {
		return nil, err
	}
	out := make([]iofs.DirEntry, len(sts))
	for i, st := range sts {
		out[i] = iofs.FileInfoToDirEntry(info{st})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// info is a Stat as an fs.FileInfo; Sys is the *Stat.
type info struct{ st *Stat }

func (i info) Name() string        { return i.st.Name }
func (i info) Size() int64         { return i.st.Size }
func (i info) ModTime() time.Time  { return i.st.Mtime }
func (i info) IsDir() bool         { return i.st.IsDir() }
func (i info) Sys() any            { return i.st }
func (i info) Mode() iofs.FileMode { return format.FSMode(i.st.Mode) }

type ioFile struct{ f *File }

func (f ioFile) Stat() (iofs.FileInfo, error) { return info{f.f.Stat()}, nil }
func (f ioFile) Read(b []byte) (int, error)   { return f.f.Read(b) }
func (f ioFile) Close() error                 { return f.f.Close() }

// ioDir is an opened directory (fs.ReadDirFile).
type ioDir struct {
	fs   ioFS
	p    string
	st   *Stat
	ents []iofs.DirEntry
	read bool
}

func (d *ioDir) Stat() (iofs.FileInfo, error) { return info{d.st}, nil }
func (d *ioDir) Read([]byte) (int, error) {
	return 0, &iofs.PathError{Op: "read", Path: d.p, Err: syscall.EISDIR}
}
func (d *ioDir) Close() error { return nil }

func (d *ioDir) ReadDir(n int) ([]iofs.DirEntry, error) {
	if !d.read {
		ents, err := d.fs.entries(d.p)
		if err != nil {
			return nil, err
		}
		d.ents, d.read = ents, true
	}
	if n <= 0 {
		out := d.ents
		d.ents = nil
		return out, nil
	}
	if len(d.ents) == 0 {
		return nil, io.EOF
	}
	k := min(n, len(d.ents))
	out := d.ents[:k]
	d.ents = d.ents[k:]
	return out, nil
}
