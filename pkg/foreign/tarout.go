package foreign

import (
	"archive/tar"
	"fmt"
	"io"
	"path"
	"syscall"
	"time"
)

// TarOptions shape a tar stream of a foreign tree.
type TarOptions struct {
	// Prefix is the name the tree's top gets in the stream; "" makes a
	// directory's contents the top entries and the directory "./" (the
	// form transfer.TarIn applies to its target).
	Prefix string
	// Skipped is told of each entry left out (a socket, a file that
	// cannot be read, such as an ext file with inline data); the others still
	// go. nil: the first such entry ends the stream with its error.
	Skipped func(error)
}

// TarOut writes the tree at src as a PAX tar stream, keeping what the
// format keeps: types, modes with the setuid, setgid and sticky bits,
// owners, nanosecond times, symlink targets, device numbers, and hard
// links where the format numbers inodes (ext). It streams: memory is
// bounded by the depth of the tree and the paths of files with several
// links. A file whose read fails half-way ends the stream with the error
// (its header is out: the archive is unusable either way).
func (im *Image) TarOut(w io.Writer, src string, o TarOptions) error {
	st, err := im.Lstat(src)
	if err != nil {
		return err
	}
	t := &tarrer{im: im, o: o, tw: tar.NewWriter(w), seen: map[uint64]bool{}, links: map[uint64]string{}}
	name := o.Prefix
	switch {
	case name != "":
	case st.IsDir():
		name = "."
	default:
		name = path.Base(path.Clean("/" + src))
	}
	if err := t.entry(src, name, st, 0); err != nil {
		return err
	}
	return t.tw.Close()
}

type tarrer struct {
	im    *Image
	o     TarOptions
	tw    *tar.Writer
	seen  map[uint64]bool   // directories entered, by inode number where kept
	links map[uint64]string // first name of each file with several links
	buf   []byte
}

func (t *tarrer) skip(src string, err error) error {
	e := &SkipError{Src: t.im.where(src), Dst: "the tar stream", Err: err}
	if t.o.Skipped == nil {
		return e
	}
	t.o.Skipped(e)
	return nil
}

// entry writes src (described by st) under name.
func (t *tarrer) entry(src, name string, st *Stat, depth int) error {
	h, err := tarHeader(name, st)
	if err != nil {
		return t.skip(src, err)
	}
	xs, err := t.im.Xattrs(src, st)
	if err == nil {
		h.PAXRecords, err = xattrPAX(xs)
	}
	if err != nil {
		return t.skip(src, err)
	}
	if st.IsRegular() && st.Nlink > 1 && st.Ino != 0 {
		if first, ok := t.links[st.Ino]; ok {
			h.Typeflag, h.Linkname, h.Size = tar.TypeLink, first, 0
			return t.tw.WriteHeader(h)
		}
		t.links[st.Ino] = name
	}
	switch {
	case st.IsRegular():
		return t.file(src, h)
	case st.IsDir():
		if err := t.tw.WriteHeader(h); err != nil {
			return err
		}
		return t.dir(src, name, st, depth+1)
	}
	return t.tw.WriteHeader(h)
}

// file writes a regular file's header and bytes; one that cannot be
// opened is skipped before its header goes out.
func (t *tarrer) file(src string, h *tar.Header) error {
	in, err := t.im.Open(src)
	if err != nil {
		return t.skip(src, err)
	}
	defer in.Close()
	if err := t.tw.WriteHeader(h); err != nil {
		return err
	}
	if t.buf == nil {
		t.buf = make([]byte, 1<<20)
	}
	_, err = io.CopyBuffer(t.tw, struct{ io.Reader }{in}, t.buf)
	return err
}

func (t *tarrer) dir(src, name string, st *Stat, depth int) error {
	if depth > maxCopyDepth {
		return t.skip(src, fmt.Errorf("%w: directories nested over %d deep", ErrCorrupt, maxCopyDepth))
	}
	if st.Ino != 0 {
		if t.seen[st.Ino] {
			return t.skip(src, fmt.Errorf("%w: directory inode %d reached twice", ErrCorrupt, st.Ino))
		}
		t.seen[st.Ino] = true
	}
	ents, err := t.im.ReadDir(src)
	if err != nil {
		return t.skip(src, err)
	}
	for _, e := range ents {
		if err := t.entry(path.Join(src, e.Name), path.Join(name, e.Name), e, depth); err != nil {
			return err
		}
	}
	return nil
}

// tarHeader is st as a PAX header named name.
func tarHeader(name string, st *Stat) (*tar.Header, error) {
	h := &tar.Header{
		Name: name, Mode: int64(st.Mode & 0o7777), Uid: int(st.UID), Gid: int(st.GID),
		ModTime: st.Mtime, AccessTime: st.Atime, ChangeTime: st.Ctime, Format: tar.FormatPAX,
	}
	if h.ModTime.IsZero() {
		h.ModTime = time.Unix(0, 0)
	}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFREG:
		h.Typeflag, h.Size = tar.TypeReg, st.Size
	case syscall.S_IFDIR:
		h.Typeflag, h.Name = tar.TypeDir, name+"/"
	case syscall.S_IFLNK:
		h.Typeflag, h.Linkname = tar.TypeSymlink, st.Target
	case syscall.S_IFCHR, syscall.S_IFBLK:
		h.Typeflag = tar.TypeChar
		if st.Mode&syscall.S_IFMT == syscall.S_IFBLK {
			h.Typeflag = tar.TypeBlock
		}
		// Linux's dev_t: major in bits 8-19 and 32-43, minor in 0-7 and 20-31.
		h.Devmajor = int64(st.Rdev>>8&0xfff | st.Rdev>>32&0xfffff000)
		h.Devminor = int64(st.Rdev&0xff | st.Rdev>>12&0xffffff00)
	case syscall.S_IFIFO:
		h.Typeflag = tar.TypeFifo
	default:
		return nil, fmt.Errorf("%w: no tar entry for file type %o", ErrUnsupported, st.Mode&syscall.S_IFMT)
	}
	return h, nil
}
