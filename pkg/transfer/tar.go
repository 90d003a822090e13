package transfer

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/fsys"
)

const xattrPAX = "SCHILY.xattr."

// TarIn extracts a tar stream (GNU, PAX, ustar; gzip, zstd, xz or bzip2
// compressed) into image directory dir, keeping modes, owners, times,
// hard links, symlinks, device nodes and xattrs. The "./" entry applies
// to dir itself; dir is made when its parent exists. Directory times are
// set once their entries are in, as GNU tar does. Names with ".."
// components are refused.
func TarIn(f *fsys.FS, r io.Reader, dir string, o Options) error {
	r, done, err := decompressed(r)
	if err != nil {
		return err
	}
	defer done()
	if err := tarTarget(f, dir); err != nil {
		return err
	}
	tap := &tarTap{r: r}
	tr := tar.NewReader(tap)
	x := &tarExtract{f: f, dir: dir}
	parents := implicitDir(o)
	buf := make([]byte, bufSize)
	for first := true; ; first = false {
		h, err := tap.next(tr)
		if err == io.EOF {
			break
		}
		if err != nil {
			if first && errors.Is(err, tar.ErrHeader) {
				return fmt.Errorf("%w: %w", ErrNotTar, err)
			}
			return fmt.Errorf("read archive: %w", err)
		}
		rel, err := cleanTarName(h.Name)
		if err != nil {
			return err
		}
		if err := x.leave(rel); err != nil {
			return err
		}
		if rel == "" {
			if err := x.top(h, o); err != nil {
				return err
			}
			continue
		}
		dst := path.Join(dir, rel)
		if err := tarParents(f, dir, rel, parents); err != nil {
			return err
		}
		if err := f.CommitIfLow(uint64(max(h.Size, 0))); err != nil { // ENOSPC costs one entry
			return err
		}
		if err := tarEntry(f, tr, tap, h, dst, dir, buf, o); err != nil {
			return err
		}
		if h.Typeflag == tar.TypeDir {
			if err := x.enter(rel, dst, tarAttr(h, o)); err != nil {
				return err
			}
		}
		if err := f.MaybeCommit(); err != nil {
			return err
		}
	}
	if err := x.finish(); err != nil {
		return err
	}
	return f.Sync()
}

func cleanTarName(name string) (string, error) {
	n := strings.TrimLeft(name, "/")
	for _, part := range strings.Split(n, "/") {
		if part == ".." {
			return "", fmt.Errorf("archive entry %q leaves the target directory", name)
		}
	}
	n = path.Clean("/" + n)
	return strings.TrimPrefix(n, "/"), nil
}

func tarAttr(h *tar.Header, o Options) fsys.Attr {
	a := fsys.Attr{
		Mode: uint32(h.Mode) & 0o7777, UID: uint32(h.Uid), GID: uint32(h.Gid),
		Mtime: fsys.TimespecOf(h.ModTime), HasTimes: true,
	}
	a.Atime = a.Mtime
	if !h.AccessTime.IsZero() {
		a.Atime = fsys.TimespecOf(h.AccessTime)
	}
	a.Ctime, a.Btime = a.Mtime, a.Mtime
	if !h.ChangeTime.IsZero() {
		a.Ctime = fsys.TimespecOf(h.ChangeTime)
	}
	if o.ForceUID != nil {
		a.UID = *o.ForceUID
	}
	if o.ForceGID != nil {
		a.GID = *o.ForceGID
	}
	return a
}

func tarEntry(f *fsys.FS, tr *tar.Reader, tap *tarTap, h *tar.Header, dst, dir string, buf []byte, o Options) error {
	a := tarAttr(h, o)
	// An entry replaces what is there, except a directory over a directory.
	if old, err := f.Resolve(dst, false); err == nil {
		if old.IsDir() && h.Typeflag == tar.TypeDir {
			// An earlier entry or a made parent takes this entry's
			// metadata (times: tarExtract.leave).
			if err := f.SetattrInode(old, fsys.SetAttr{Mode: &a.Mode, UID: &a.UID, GID: &a.GID}); err != nil {
				return err
			}
			return tarXattrs(f, old, h, dst)
		}
		if err := f.Remove(dst); err != nil {
			return err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	var in *fsys.Inode
	var err error
	typ := h.Typeflag
	if typ == tar.TypeGNUSparse { // old GNU sparse (tar -S in GNU format): a regular file
		typ = tar.TypeReg
	}
	switch typ {
	case tar.TypeDir:
		in, err = f.Mkdir(dst, a)
	case tar.TypeReg, tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		a.Mode |= map[byte]uint32{tar.TypeReg: syscall.S_IFREG, tar.TypeChar: syscall.S_IFCHR, tar.TypeBlock: syscall.S_IFBLK, tar.TypeFifo: syscall.S_IFIFO}[typ]
		a.Rdev = unix.Mkdev(uint32(h.Devmajor), uint32(h.Devminor))
		if in, err = f.Create(dst, a); err == nil && typ == tar.TypeReg {
			if isSparse1(h) {
				err = tarSparse(f, tap, h, in, dst, buf)
			} else if legacySparse(h) && h.Size > maxLegacySparse {
				// archive/tar expands these holes into zeros: refuse sizes
				// that would take minutes to stream.
				err = fmt.Errorf("archive entry %q: old GNU or sparse 0.x file of %d bytes (only sparse 1.0, tar --format=pax --sparse-version=1.0, is read hole by hole): %w", h.Name, h.Size, tar.ErrHeader)
			} else {
				err = tarData(f, tr, in, dst, buf)
			}
		}
	case tar.TypeSymlink:
		in, err = f.Symlink(h.Linkname, dst, a)
	case tar.TypeLink:
		target, terr := cleanTarName(h.Linkname)
		if terr != nil {
			return terr
		}
		if err := tarParents(f, dir, target, nil); err != nil {
			return err
		}
		return f.Link(path.Join(dir, target), dst)
	default:
		return nil // pax globals, GNU long names are handled by archive/tar; others skipped
	}
	if err != nil {
		return err
	}
	if err := tarXattrs(f, in, h, dst); err != nil {
		return err
	}
	if h.Typeflag != tar.TypeSymlink && h.Typeflag != tar.TypeDir {
		return f.SetattrInode(in, fsys.SetAttr{Atime: &a.Atime, Mtime: &a.Mtime})
	}
	return nil
}

// tarXattrs sets the xattrs of h's PAX records on in.
func tarXattrs(f *fsys.FS, in *fsys.Inode, h *tar.Header, dst string) error {
	for k, v := range h.PAXRecords {
		if name, ok := strings.CutPrefix(k, xattrPAX); ok {
			if err := f.SetXattr(in, name, []byte(v)); err != nil {
				return &fs.PathError{Op: "setxattr", Path: dst, Err: err}
			}
		}
	}
	return nil
}

func tarData(f *fsys.FS, r io.Reader, in *fsys.Inode, dst string, buf []byte) error {
	var off uint64
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			if werr := f.WriteAt(in, buf[:n], off); werr != nil {
				return &fs.PathError{Op: "write", Path: dst, Err: unwrapErrno(werr)}
			}
			off += uint64(n)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// tarSparse stores a GNU sparse 1.0 entry: its fragments where the map
// puts them, holes left as holes.
func tarSparse(f *fsys.FS, tap *tarTap, h *tar.Header, in *fsys.Inode, dst string, buf []byte) error {
	rs, err := tap.sparseFragments(h)
	if err != nil {
		return err
	}
	if err := tap.sparseData(f, in, rs, uint64(h.Size), buf); err != nil {
		return &fs.PathError{Op: "write", Path: dst, Err: unwrapErrno(err)}
	}
	return nil
}

// TarOut writes the tree at image path dir as a PAX tar stream, with
// xattrs, hard links, symlinks and device nodes. Names are relative to
// dir, after a "./" entry for dir itself.
func TarOut(f *fsys.FS, w io.Writer, dir string) error {
	return TarOutWith(f, nil, w, dir)
}

// TarOutWith is TarOut with the file data read from data, a second
// read-only instance of the same image, on other goroutines (tarPipe):
// the walk and the data reads then run on two cores. data nil: TarOut.
func TarOutWith(f, data *fsys.FS, w io.Writer, dir string) error {
	return TarOutReport(f, data, w, dir, nil)
}

// ErrEntriesSkipped ends a TarOutReport that went on past entries it
// could not archive (each given to its skipped function).
var ErrEntriesSkipped = errors.New("entries not archived")

// TarOutReport is TarOutWith going on past what it cannot archive, as
// cp -a does: an entry refused by the walk, a file of up to
// tarVerifyMax bytes whose data does not read (read before its header,
// so it is left out whole), a bigger file whose data stops reading (its
// header is out: the rest of its data is zeros, as GNU tar pads). Each is
// passed to skipped (never at once from two goroutines), and the stream
// stays a valid archive. With skipped nil the first one is returned.
func TarOutReport(f, data *fsys.FS, w io.Writer, dir string, skipped func(error)) error {
	in, err := f.Resolve(dir, true)
	if err != nil {
		return err
	}
	t := &tarWriter{f: f, links: map[uint64]string{}}
	t.skips.fn = skipped
	var flush func() error
	if data != nil {
		t.pipe = newTarPipe(data, w, &t.skips)
		t.w, flush = t.pipe, t.pipe.close // all data reads go to the pipe: no buf
	} else {
		t.out = newOutBuffer(w, tarOutBuffer)
		t.w, flush, t.buf = t.out, t.out.flush, make([]byte, bufSize)
	}
	tw := tar.NewWriter(t.w)
	t.tw = tw
	if in.IsDir() {
		// "./" first, as tar -C DIR . writes: the directory's own mode,
		// owner and times, which TarIn applies to its target.
		var h *tar.Header
		if h, err = t.header(in, "./"); err == nil {
			h.Typeflag = tar.TypeDir
			err = tw.WriteHeader(h)
		}
		if err == nil {
			err = t.dir(in, dir, "")
		}
	} else {
		err = t.entry(in, dir, fsys.Base(dir))
	}
	if err == nil {
		err = tw.Close()
	}
	// Flushed even after an error: the entries written before it go out.
	if ferr := flush(); err == nil || errors.Is(err, errPipeFailed) {
		err = ferr
	}
	if err != nil {
		return err
	}
	return t.skips.done()
}

// tarOutBuffer is TarOut's output buffer: w gets writes of this size
// (or larger ones, of a big file's data). Files up to half of it are read
// straight into it (tarWriter.small).
const tarOutBuffer = 1 << 20

type tarWriter struct {
	f     *fsys.FS
	w     io.Writer  // under tw, for entries archive/tar cannot write
	hbuf  []byte     // header blocks being made (appendPAXHeader)
	out   *outBuffer // the output without a pipe
	pipe  *tarPipe   // the output with one (TarOutWith)
	tw    *tar.Writer
	links map[uint64]string
	buf   []byte
	skips skipList
	// symlinks holds the names of the symlinks written so far: no later
	// entry may sit below one (an extractor would write through it).
	symlinks map[string]bool
}

func (t *tarWriter) dir(in *fsys.Inode, src, name string) error {
	kids, err := t.f.Children(in)
	skipped, err := refused(src, err)
	if err != nil {
		return err
	}
	if skipped != nil {
		t.skip(skipped)
	}
	for _, k := range kids {
		if err := t.entry(k.Inode, path.Join(src, k.Entry.Name), path.Join(name, k.Entry.Name)); err != nil {
			return err
		}
	}
	return nil
}

// header is inode in's header (owner, mode, times, xattrs) named name.
func (t *tarWriter) header(in *fsys.Inode, name string) (*tar.Header, error) {
	h := &tar.Header{
		Name: name, Mode: int64(in.Mode & 0o7777), Uid: int(in.UID), Gid: int(in.GID),
		ModTime: fsys.Time(in.Mtime), AccessTime: fsys.Time(in.Atime), ChangeTime: fsys.Time(in.Ctime),
		Format: tar.FormatPAX,
	}
	xs, err := t.f.ListXattrs(in)
	if err != nil {
		return nil, err
	}
	if len(xs) > 0 {
		h.PAXRecords, err = xattrRecords(xs)
	}
	return h, err
}

// errNotArchivable marks an entry a PAX archive cannot hold: TarOut
// refuses it alone and goes on.
var errNotArchivable = errors.New("cannot be written in a PAX tar header")

// paxXattrMax bounds the xattr records of one entry: a PAX header holds
// 1 MiB (archive/tar refuses more, reading or writing; GNU tar too),
// less room for the path, link name, times and sparse records.
const paxXattrMax = 1<<20 - 16<<10

// xattrRecords are the PAX records of xs, refused when a name holds '='
// or NUL (a record cannot) or the records pass paxXattrMax.
func xattrRecords(xs []format.Xattr) (map[string]string, error) {
	recs := make(map[string]string, len(xs))
	n := 0
	for _, x := range xs {
		if strings.ContainsAny(x.Name, "=\x00") {
			return nil, fmt.Errorf("xattr name %q holds '=' or NUL: %w", x.Name, errNotArchivable)
		}
		k := xattrPAX + x.Name
		recs[k] = string(x.Value)
		n += len(paxRecord(k, recs[k]))
	}
	if n > paxXattrMax {
		return nil, fmt.Errorf("xattrs take %d bytes, at most %d: %w", n, paxXattrMax, errNotArchivable)
	}
	return recs, nil
}

func (t *tarWriter) entry(in *fsys.Inode, src, name string) error {
	if t.underSymlink(name) {
		// Only a crafted image (a name listed twice) gets here: refuse the
		// entry, keep the stream safe to extract.
		t.skip(&fs.PathError{Op: "read", Path: src,
			Err: fmt.Errorf("archive name %q is at or below a symlink written before: %w", name, format.ErrCorrupt)})
		return nil
	}
	if in.IsSymlink() {
		if t.symlinks == nil {
			t.symlinks = map[string]bool{}
		}
		t.symlinks[name] = true
	}
	h, err := t.header(in, name)
	if errors.Is(err, errNotArchivable) {
		t.skip(&fs.PathError{Op: "read", Path: src, Err: err})
		if in.IsDir() {
			return t.dir(in, src, name) // its entries still go out
		}
		return nil
	}
	if err != nil {
		return err
	}
	if !in.IsDir() && in.Nlink > 1 {
		if first, ok := t.links[in.Ino]; ok {
			h.Typeflag, h.Linkname = tar.TypeLink, first
			_, err := t.header1(h)
			return err
		}
		t.links[in.Ino] = name
	}
	switch format.FileTypeOfMode(in.Mode) {
	case format.FileTypeDir:
		h.Typeflag, h.Name = tar.TypeDir, name+"/"
		if _, err := t.header1(h); err != nil {
			return err
		}
		return t.dir(in, src, name)
	case format.FileTypeSymlink:
		target, err := t.f.Readlink(src)
		if err != nil {
			return err
		}
		h.Typeflag, h.Linkname = tar.TypeSymlink, target
		_, err = t.header1(h)
		return err
	case format.FileTypeRegular:
		h.Typeflag, h.Size = tar.TypeReg, int64(in.Size)
		rs, err := t.f.DataRanges(in)
		if err != nil {
			return err
		}
		if holes(rs, in.Size) {
			return t.sparseEntry(h, in, rs, src)
		}
		return t.regular(h, in, src)
	default:
		switch format.FileTypeOfMode(in.Mode) {
		case format.FileTypeCharDev:
			h.Typeflag = tar.TypeChar
		case format.FileTypeBlockDev:
			h.Typeflag = tar.TypeBlock
		case format.FileTypeFIFO:
			h.Typeflag = tar.TypeFifo
		default:
			return nil // sockets cannot be archived, as GNU tar skips them
		}
		h.Devmajor, h.Devminor = int64(unix.Major(in.Rdev)), int64(unix.Minor(in.Rdev))
		return t.tw.WriteHeader(h)
	}
}

// underSymlink reports whether name, or a directory above it, is a
// symlink written earlier in the stream.
func (t *tarWriter) underSymlink(name string) bool {
	for p := name; p != "." && p != "/" && p != ""; p = path.Dir(p) {
		if t.symlinks[p] {
			return true
		}
	}
	return false
}

// tarParents refuses an entry whose path below dir passes through a
// symlink (an earlier entry "x -> /etc" must not let "x/passwd" write
// outside dir), as bsdtar does. With mk set, the missing directories
// above the entry are made with its attributes, as GNU tar makes the
// parents an archive has no entries for (tar -cf x.tar a/b/c); with mk
// nil the first missing one ends the walk (the entry itself will fail).
func tarParents(f *fsys.FS, dir, rel string, mk *fsys.Attr) error {
	parts := strings.Split(rel, "/")
	cur := dir
	for _, part := range parts[:len(parts)-1] {
		cur = path.Join(cur, part)
		in, err := f.Resolve(cur, false)
		if errors.Is(err, fs.ErrNotExist) {
			if mk == nil {
				return nil
			}
			in, err = f.Mkdir(cur, *mk)
		}
		if err != nil {
			return err // unreadable is not missing
		}
		if in.IsSymlink() {
			return fmt.Errorf("archive entry %q: cannot extract through symlink %s", rel, cur)
		}
	}
	return nil
}

// header1 writes h: its blocks made by appendPAXHeader and written
// straight to the stream when it can (raw: the entry's data and padding
// then go there too), else by archive/tar.
func (t *tarWriter) header1(h *tar.Header) (raw bool, err error) {
	var ok bool
	if t.hbuf, ok = appendPAXHeader(t.hbuf[:0], h); !ok {
		return false, t.tw.WriteHeader(h)
	}
	if err := t.tw.Flush(); err != nil { // pads archive/tar's last entry
		return true, err
	}
	_, err = t.w.Write(t.hbuf)
	return true, err
}

// readFull reads len(p) bytes of in at off; a file that ends first is
// corrupt (its size promised them).
func readFull(f *fsys.FS, in *fsys.Inode, p []byte, off uint64) error {
	for got := 0; got < len(p); {
		n, err := f.ReadAt(in, p[got:], off+uint64(got))
		got += n
		if err != nil && err != io.EOF {
			return err
		}
		if n == 0 && got < len(p) { // EOF, or no progress: never spin
			return fmt.Errorf("data ends at %d of %d bytes: %w", off+uint64(got), off+uint64(len(p)), format.ErrCorrupt)
		}
	}
	return nil
}
