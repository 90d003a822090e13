package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/foreign"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/send"
)

const diffLong = `Compares two trees as 'diff -rq --no-dereference' does: a line per difference,
"Only in DIR: NAME", "Files A and B differ", "File A is a directory while file B
is a regular file", "Symbolic links A and B differ" (links are compared by
target, never followed). Two fifos or two sockets are the same, two devices when
their numbers are (GNU diff calls fifos different). Each side is IMAGE:PATH or a host path, at least
one in an image; both may be in the same image (opened once), also as two of its
snapshots (IMAGE@A:/ IMAGE@B:/) or a snapshot and the live tree: then what the two
trees share is not read at all, and the cost follows what changed. Contents are
compared by streaming, in bounded memory; modes, owners and times are not
compared.`

const diffExamples = `  ddfs diff disk.img:/etc /etc                   # they differ: exit 1
  ddfs diff disk.img:/vm disk.img:/vm-snap
  ddfs diff old.img:/home new.img:/home && echo same
`

func newDiffCmd() *cobra.Command {
	c, fl, of := newCmd("diff [-r] [-q] IMAGE:PATH HOSTPATH|IMAGE:PATH\n\n"+diffLong, "compare two trees (an image and the host, or two images)", diffExamples)
	c.Annotations = map[string]string{cli.ExitCodesKey: "0 no differences, 1 differences, 2 trouble (an unreadable file, an entry fsck flags) or usage error"}
	fl.BoolP("recursive", "r", true, "recurse (always; accepted as diff -r)")
	fl.BoolP("brief", "q", true, "only say which files differ (always)")
	c.RunE = func(c *cobra.Command, args []string) error {
		if fl.NArg() != 2 {
			return usageErr("want two operands: IMAGE:PATH and HOSTPATH or IMAGE:PATH")
		}
		a, b := parseOperand(fl.Arg(0)), parseOperand(fl.Arg(1))
		if a.image == "" && b.image == "" {
			return usageErr("neither operand is in an image (use IMAGE:PATH)")
		}
		sides, done, err := openSides(of, a, b)
		if err != nil {
			return err
		}
		defer done()
		d := &differ{w: c.OutOrStdout(), stderr: c.ErrOrStderr(), prog: cli.Prog(c), bufA: make([]byte, 1<<20), bufB: make([]byte, 1<<20)}
		d.compare(sides[0], sides[1])
		switch {
		case d.trouble:
			return &cli.CodeError{Code: 2}
		case d.differ:
			return &cli.CodeError{Code: 1}
		}
		return nil
	}
	return c
}

// side is one tree being compared: an io/fs view, the name of the entry
// in it, and how to show it ("disk.img:/etc/x", "etc/x").
type side struct {
	fsys fs.FS
	name string
	show string
	f    *fsys.FS // the image's tree, or nil for the host
}

func (s side) child(name string) side {
	return side{s.fsys, path.Join(s.name, name), joinPath(s.show, name), s.f}
}

// openSides opens the images of the operands (one image once; two trees
// of one image, snapshots or the live one, on one store, so that their
// shared nodes tell what changed) and makes the two sides; done closes
// the images.
func openSides(of *openFlags, ops ...operand) ([]side, func(), error) {
	var ims []*image
	var fims []*foreign.Image
	done := func() {
		for _, im := range ims {
			im.close()
		}
		for _, fim := range fims {
			fim.Close()
		}
	}
	var sides []side
	for _, op := range ops {
		if op.image == "" {
			sides = append(sides, hostSide(op.path))
			continue
		}
		if fim, err := openForeign(op.image); fim != nil || err != nil {
			if err != nil {
				done()
				return nil, nil, err
			}
			// An ext4, squashfs, ISO 9660 or FAT image, read through
			// its io/fs view.
			fims = append(fims, fim)
			name := path.Clean(abs(op.path))[1:]
			if name == "" {
				name = "."
			}
			sides = append(sides, side{fim.FS(), name, op.String(), nil})
			continue
		}
		view, err := treeOf(of, &ims, op.image)
		if err != nil {
			done()
			return nil, nil, err
		}
		name := path.Clean(abs(op.path))[1:]
		if name == "" {
			name = "."
		}
		sides = append(sides, side{view.IOFS(), name, op.String(), view})
	}
	return sides, done, nil
}

// treeOf returns the tree operand image names: of an image opened
// already (the same operand, or another tree of its image), or newly
// opened and added to ims.
func treeOf(of *openFlags, ims *[]*image, image string) (*fsys.FS, error) {
	img, snap := splitSnapshot(image)
	for _, o := range *ims {
		if sameFile(o.name, image) {
			return o.f, nil
		}
	}
	for _, o := range *ims {
		if oi, _ := splitSnapshot(o.name); !sameFile(oi, img) {
			continue
		}
		live := o.f
		if o.live != nil {
			live = o.live
		}
		if snap == "" {
			return live, nil
		}
		v, err := live.OpenSnapshot(snap)
		if err != nil {
			return nil, cli.NameImage(image, err)
		}
		return v, nil
	}
	im, err := of.openImage(image, false)
	if err != nil {
		return nil, err
	}
	*ims = append(*ims, im)
	return im.f, nil
}

func sameFile(a, b string) bool {
	sa, ea := os.Stat(a)
	sb, eb := os.Stat(b)
	return a == b || ea == nil && eb == nil && os.SameFile(sa, sb)
}

// hostSide views a host path through its parent directory, so "..", "/"
// and absolute paths work as io/fs names.
func hostSide(p string) side {
	a, err := filepath.Abs(p)
	if err != nil || a == "/" {
		return side{hostFS("/"), ".", p, nil}
	}
	return side{hostFS(filepath.Dir(a)), filepath.Base(a), p, nil}
}

// hostFS is a host directory as io/fs names, as os.DirFS but for names
// that are not UTF-8 (os.DirFS refuses "caf\xe9": a Linux name is bytes).
type hostFS string

func (h hostFS) join(op, name string) (string, error) {
	if !fs.ValidPath(strings.ToValidUTF8(name, "x")) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	return filepath.Join(string(h), name), nil
}

func (h hostFS) Open(name string) (fs.File, error) {
	p, err := h.join("open", name)
	if err != nil {
		return nil, err
	}
	return os.Open(p)
}

func (h hostFS) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := h.join("readdir", name)
	if err != nil {
		return nil, err
	}
	return os.ReadDir(p)
}

func (h hostFS) Lstat(name string) (fs.FileInfo, error) {
	p, err := h.join("lstat", name)
	if err != nil {
		return nil, err
	}
	return os.Lstat(p)
}

func (h hostFS) ReadLink(name string) (string, error) {
	p, err := h.join("readlink", name)
	if err != nil {
		return "", err
	}
	return os.Readlink(p)
}

// differ is one diff run: what it printed and whether it had trouble.
type differ struct {
	w, stderr  io.Writer
	prog       string
	differ     bool
	trouble    bool
	bufA, bufB []byte
	// trees: for two trees of one image, what changed between them
	// (send.Changes), found once per pair.
	trees map[[2]*fsys.FS]*treeChanges
}

type treeChanges struct{ changed, dirty map[uint64]bool }

// unchanged reports whether a and b are the same inode of two trees of
// one image with no item changed between them, in it (file) or under it
// (directory): then they are equal without reading either. A failure to
// compare the trees only means reading them.
func (d *differ) unchanged(a, b side, ia, ib fs.FileInfo) bool {
	if a.f == nil || b.f == nil || a.f.Store() != b.f.Store() {
		return false
	}
	na, okA := ia.Sys().(*fsys.Inode)
	nb, okB := ib.Sys().(*fsys.Inode)
	if !okA || !okB || na.Ino != nb.Ino || na.Generation != nb.Generation || na.Mode != nb.Mode {
		return false
	}
	if a.f.TreeRoot() == b.f.TreeRoot() {
		return true // one tree
	}
	if d.trees == nil {
		d.trees = map[[2]*fsys.FS]*treeChanges{}
	}
	k := [2]*fsys.FS{a.f, b.f}
	tc, ok := d.trees[k]
	if !ok {
		changed, dirty, err := send.Changes(a.f, b.f)
		if err == nil {
			tc = &treeChanges{changed, dirty}
		}
		d.trees[k] = tc
	}
	return tc != nil && !tc.dirty[na.Ino]
}

// fail reports trouble (exit 2) and goes on, as diff does.
func (d *differ) fail(s side, err error) {
	var ee *fsys.EntryError
	if errors.As(err, &ee) {
		err = &fs.PathError{Op: "read", Path: joinPath(s.show, ee.Name), Err: ee}
	} else {
		err = pathErrOf("diff", s.show, err)
	}
	cli.Report(d.stderr, d.prog, err)
	d.trouble = true
}

func (d *differ) say(format string, args ...any) {
	fmt.Fprintf(d.w, format+"\n", args...)
	d.differ = true
}

// compare compares a and b, recursively for two directories.
func (d *differ) compare(a, b side) {
	ia, err := fs.Lstat(a.fsys, a.name)
	if err != nil {
		d.fail(a, err)
		return
	}
	ib, err := fs.Lstat(b.fsys, b.name)
	if err != nil {
		d.fail(b, err)
		return
	}
	ta, tb := ia.Mode().Type(), ib.Mode().Type()
	switch {
	case d.unchanged(a, b, ia, ib):
	case ta != tb:
		d.say("File %s is a %s while file %s is a %s", a.show, kindName(ia), b.show, kindName(ib))
	case ta == fs.ModeDir:
		d.compareDirs(a, b)
	case ta == fs.ModeSymlink:
		la, erra := fs.ReadLink(a.fsys, a.name)
		lb, errb := fs.ReadLink(b.fsys, b.name)
		switch {
		case erra != nil:
			d.fail(a, erra)
		case errb != nil:
			d.fail(b, errb)
		case la != lb:
			d.say("Symbolic links %s and %s differ", a.show, b.show)
		}
	case ta.IsRegular():
		if ia.Size() != ib.Size() {
			d.say("Files %s and %s differ", a.show, b.show)
		} else if same, ok := d.sameData(a, b); ok && !same {
			d.say("Files %s and %s differ", a.show, b.show)
		}
	case ta == fs.ModeNamedPipe || ta == fs.ModeSocket || rdev(ia) == rdev(ib):
		// Nothing but the type to compare (GNU diff calls two fifos
		// different: a tree copied with cp -a would never compare equal).
	default:
		d.say("File %s is a %s while file %s is a %s", a.show, kindName(ia), b.show, kindName(ib))
	}
}

// compareDirs merges the sorted listings: names on one side only, then
// the rest compared in name order.
func (d *differ) compareDirs(a, b side) {
	ea, err := fs.ReadDir(a.fsys, a.name)
	if err != nil {
		d.fail(a, err) // the good entries came with it
	}
	eb, err := fs.ReadDir(b.fsys, b.name)
	if err != nil {
		d.fail(b, err)
	}
	for i, j := 0, 0; i < len(ea) || j < len(eb); {
		switch {
		case j == len(eb) || i < len(ea) && ea[i].Name() < eb[j].Name():
			d.say("Only in %s: %s", a.show, ea[i].Name())
			i++
		case i == len(ea) || eb[j].Name() < ea[i].Name():
			d.say("Only in %s: %s", b.show, eb[j].Name())
			j++
		default:
			d.compare(a.child(ea[i].Name()), b.child(eb[j].Name()))
			i, j = i+1, j+1
		}
	}
}

// sameData streams both files through fixed buffers; ok is false when
// one could not be read (reported).
func (d *differ) sameData(a, b side) (same, ok bool) {
	fa, err := a.fsys.Open(a.name)
	if err != nil {
		d.fail(a, err)
		return false, false
	}
	defer fa.Close()
	fb, err := b.fsys.Open(b.name)
	if err != nil {
		d.fail(b, err)
		return false, false
	}
	defer fb.Close()
	ra, okA := fa.(io.ReaderAt)
	rb, okB := fb.(io.ReaderAt)
	if okA && okB {
		return d.sameRanges(a, b, fa, fb, ra, rb)
	}
	for {
		na, erra := io.ReadFull(fa, d.bufA)
		nb, errb := io.ReadFull(fb, d.bufB)
		if !eofOK(erra) {
			d.fail(a, erra)
			return false, false
		}
		if !eofOK(errb) {
			d.fail(b, errb)
			return false, false
		}
		if na != nb || !bytes.Equal(d.bufA[:na], d.bufB[:nb]) {
			return false, true
		}
		if erra != nil || na == 0 {
			return true, true
		}
	}
}

// sameRanges compares the union of the two files' data ranges; outside
// it both read as zeros. Two sparse files of 2^62 bytes cost their
// extents, not their size.
func (d *differ) sameRanges(a, b side, fa, fb fs.File, ra, rb io.ReaderAt) (same, ok bool) {
	st, err := fa.Stat()
	if err != nil {
		d.fail(a, err)
		return false, false
	}
	size := uint64(st.Size())
	xa, err := dataRanges(fa, size)
	if err != nil {
		d.fail(a, err)
		return false, false
	}
	xb, err := dataRanges(fb, size)
	if err != nil {
		d.fail(b, err)
		return false, false
	}
	for _, r := range unionRanges(xa, xb) {
		for off, end := r.Off, r.Off+r.Len; off < end; {
			n := int(min(uint64(len(d.bufA)), end-off))
			na, erra := ra.ReadAt(d.bufA[:n], int64(off))
			nb, errb := rb.ReadAt(d.bufB[:n], int64(off))
			if erra != nil && erra != io.EOF {
				d.fail(a, erra)
				return false, false
			}
			if errb != nil && errb != io.EOF {
				d.fail(b, errb)
				return false, false
			}
			if na != n || nb != n || !bytes.Equal(d.bufA[:n], d.bufB[:n]) {
				return false, true
			}
			off += uint64(n)
		}
	}
	return true, true
}

// dataRanges is where f may hold data below size: its extents for an
// image file, SEEK_DATA and SEEK_HOLE for a host file, else all of it.
func dataRanges(f fs.File, size uint64) ([]fsys.Range, error) {
	if r, ok := f.(interface{ DataRanges() ([]fsys.Range, error) }); ok {
		return r.DataRanges()
	}
	hf, ok := f.(*os.File)
	if !ok {
		return []fsys.Range{{Off: 0, Len: size}}, nil
	}
	var rs []fsys.Range
	for off := int64(0); off < int64(size); {
		data, err := unix.Seek(int(hf.Fd()), off, unix.SEEK_DATA)
		if errors.Is(err, syscall.ENXIO) {
			break // only a hole is left
		}
		if err != nil {
			data = off // no SEEK_DATA: all the rest
		}
		hole, err := unix.Seek(int(hf.Fd()), data, unix.SEEK_HOLE)
		if err != nil || hole > int64(size) {
			hole = int64(size)
		}
		if hole > data {
			rs = append(rs, fsys.Range{Off: uint64(data), Len: uint64(hole - data)})
		}
		off = max(hole, off+1)
	}
	return rs, nil
}

// unionRanges merges two sorted range lists into one, sorted, with
// overlapping and touching ranges joined.
func unionRanges(a, b []fsys.Range) []fsys.Range {
	var out []fsys.Range
	for len(a) > 0 || len(b) > 0 {
		var r fsys.Range
		if len(b) == 0 || len(a) > 0 && a[0].Off <= b[0].Off {
			r, a = a[0], a[1:]
		} else {
			r, b = b[0], b[1:]
		}
		if n := len(out); n > 0 && r.Off <= out[n-1].Off+out[n-1].Len {
			out[n-1].Len = max(out[n-1].Len, r.Off+r.Len-out[n-1].Off)
		} else {
			out = append(out, r)
		}
	}
	return out
}

func eofOK(err error) bool {
	return err == nil || err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF)
}

// kindName names a file type as GNU diff does.
func kindName(fi fs.FileInfo) string {
	switch t := fi.Mode().Type(); {
	case t.IsRegular() && fi.Size() == 0:
		return "regular empty file"
	case t.IsRegular():
		return "regular file"
	case t == fs.ModeDir:
		return "directory"
	case t == fs.ModeSymlink:
		return "symbolic link"
	case t == fs.ModeNamedPipe:
		return "fifo"
	case t == fs.ModeSocket:
		return "socket"
	case t&fs.ModeCharDevice != 0:
		return "character special file"
	case t == fs.ModeDevice:
		return "block special file"
	}
	return "weird file"
}

// rdev is the device number of an image inode or a host file.
func rdev(fi fs.FileInfo) uint64 {
	switch s := fi.Sys().(type) {
	case *fsys.Inode:
		return s.Rdev
	case *syscall.Stat_t:
		return uint64(s.Rdev)
	case *foreign.Stat:
		return s.Rdev
	}
	return 0
}
