// Package export builds another filesystem's image from a ddfs tree:
// ISO 9660 (Rock Ridge) and FAT32 with go-diskfs's writers, squashfs
// with one of our own (squashfs.go: go-diskfs v1.9.4's cannot write a
// real tree). No writer is trusted: each image written is read back
// through pkg/foreign and compared with the tree, entry by entry and
// byte for byte, before it is kept.
package export

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/diskfs/go-diskfs/backend/file"
	"github.com/diskfs/go-diskfs/filesystem/iso9660"

	"github.com/ddfs/ddfs/pkg/foreign"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/transfer"
)

// Types are the formats written.
var Types = []string{"squashfs", "iso9660", "fat32"}

// Options shape an export.
type Options struct {
	Type  string // squashfs, iso9660 or fat32
	Label string // the ISO volume identifier or FAT label ("": go-diskfs's default)
	Size  int64  // fat32: the image's size (0: what the tree needs, 64 MiB at least)
}

// Stats counts what an export wrote and checked.
type Stats struct {
	Entries uint64 `json:"entries"`
	Bytes   uint64 `json:"data_bytes"`
}

// ErrMismatch: the image written does not read back as the tree.
var ErrMismatch = errors.New("the image written does not read back as the tree")

// Export writes the tree at src of f as a new image file out (which
// must not exist) and verifies it; a failed export leaves no file.
func Export(f *fsys.FS, src, out string, o Options) (st Stats, err error) {
	w, err := os.OpenFile(out, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return st, err
	}
	defer func() {
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(out)
		}
	}()
	switch o.Type {
	case "fat32":
		if err := exportFAT(f, src, w, o); err != nil {
			return st, err
		}
		return verify(f, src, out)
	case "squashfs":
		if err := writeSquashfs(f, src, w); err != nil {
			return st, err
		}
		return verify(f, src, out)
	}
	ws, finalize, err := create(w, o)
	if err != nil {
		return st, err
	}
	defer os.RemoveAll(ws)
	if err := fill(f, src, ws); err != nil {
		return st, err
	}
	if err := finalize(); err != nil {
		return st, fmt.Errorf("%s: %w", o.Type, err)
	}
	return verify(f, src, out)
}

// create makes the go-diskfs filesystem on w; it returns its workspace
// (the host folder the writer builds the image from) and the call that
// writes the image.
func create(w *os.File, o Options) (string, func() error, error) {
	b := file.New(w, false)
	switch o.Type {
	case "iso9660":
		fs, err := iso9660.Create(b, 0, 0, 0, "")
		if err != nil {
			return "", nil, err
		}
		return fs.Workspace(), func() error {
			if err := fs.Finalize(iso9660.FinalizeOptions{RockRidge: true, DeepDirectories: true, VolumeIdentifier: o.Label}); err != nil {
				return err
			}
			sec, ok := sourceDate()
			if !ok {
				return nil
			}
			fi, err := w.Stat()
			if err != nil {
				return err
			}
			return stampISO(w, fi.Size(), sec)
		}, nil
	}
	return "", nil, fmt.Errorf("export type %q: want squashfs, iso9660 or fat32: %w", o.Type, syscall.EINVAL)
}

// fill copies the tree's entries into the workspace as cp -a does (modes,
// owners as root, times, symlinks, hard links).
func fill(f *fsys.FS, src, ws string) error {
	in, err := f.Resolve(src, true)
	if err != nil {
		return err
	}
	if !in.IsDir() {
		return &os.PathError{Op: "export", Path: src, Err: syscall.ENOTDIR}
	}
	kids, err := f.Children(in)
	if err != nil {
		return err
	}
	o := transfer.Options{Recursive: true, Archive: true}
	for _, k := range kids {
		if err := transfer.CopyOut(f, path.Join(src, k.Entry.Name), ws, o); err != nil {
			return err
		}
	}
	mode := os.FileMode(in.Mode & 0o777)
	if err := os.Chmod(ws, mode); err != nil {
		return err
	}
	// The root's times too: filling it stamped the clock's.
	return os.Chtimes(ws, time.Unix(in.Atime.Sec, int64(in.Atime.Nsec)), time.Unix(in.Mtime.Sec, int64(in.Mtime.Nsec)))
}

// sourceDate is SOURCE_DATE_EPOCH, when set to a number.
func sourceDate() (int64, bool) {
	v, ok := os.LookupEnv("SOURCE_DATE_EPOCH")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// verify reads the image written through pkg/foreign and compares every
// entry with the tree: names, types, sizes, bytes, symlink targets.
func verify(f *fsys.FS, src, out string) (Stats, error) {
	var st Stats
	im, err := foreign.Open(out)
	if err != nil {
		return st, fmt.Errorf("%w: %v", ErrMismatch, err)
	}
	defer im.Close()
	root, err := f.Resolve(src, true)
	if err != nil {
		return st, err
	}
	v := &verifier{f: f, im: im, buf: make([]byte, 1<<20)}
	if im.Kind() == foreign.Squashfs { // the root's own attributes (the walk compares its entries')
		g, err := im.Lstat("/")
		if err == nil {
			err = v.xattrs(src, "/", root, g)
		}
		if err != nil {
			return v.st, err
		}
	}
	err = v.dir(src, "/", root, 0)
	return v.st, err
}

// verifier compares a tree with the image written of it.
type verifier struct {
	f   *fsys.FS
	im  *foreign.Image
	st  Stats
	buf []byte // the tree's file data, read to be hashed (one buffer for every file)
}

func (v *verifier) dir(p, q string, dir *fsys.Inode, depth int) error {
	f, im := v.f, v.im
	if depth > 1024 {
		return fmt.Errorf("%s: nested over 1024 deep: %w", p, syscall.ELOOP)
	}
	kids, err := f.Children(dir)
	if err != nil {
		return err
	}
	got, err := im.ReadDir(q)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrMismatch, q, err)
	}
	if len(got) != len(kids) {
		return fmt.Errorf("%w: %s holds %d entries, the tree %d", ErrMismatch, q, len(got), len(kids))
	}
	names := map[string]*foreign.Stat{}
	for _, g := range got {
		names[g.Name] = g
	}
	for _, k := range kids {
		g, ok := names[k.Entry.Name]
		if !ok {
			return fmt.Errorf("%w: %s: %q missing", ErrMismatch, q, k.Entry.Name)
		}
		if err := v.entry(path.Join(p, k.Entry.Name), path.Join(q, k.Entry.Name), k.Inode, g, depth); err != nil {
			return err
		}
	}
	return nil
}

func (v *verifier) entry(p, q string, in *fsys.Inode, g *foreign.Stat, depth int) error {
	f, im := v.f, v.im
	v.st.Entries++
	if in.Mode&syscall.S_IFMT != g.Mode&syscall.S_IFMT {
		return fmt.Errorf("%w: %s: type %o, the tree's %o", ErrMismatch, q, g.Mode&syscall.S_IFMT, in.Mode&syscall.S_IFMT)
	}
	if im.Kind() == foreign.Squashfs { // written by ddfs: it keeps every bit, owner and attribute
		if g.Mode&0o7777 != in.Mode&0o7777 || g.UID != in.UID || g.GID != in.GID {
			return fmt.Errorf("%w: %s: mode %#o %d:%d, the tree's %#o %d:%d", ErrMismatch, q, g.Mode&0o7777, g.UID, g.GID, in.Mode&0o7777, in.UID, in.GID)
		}
		if err := v.xattrs(p, q, in, g); err != nil {
			return err
		}
	}
	switch {
	case in.IsDir():
		return v.dir(p, q, in, depth+1)
	case in.IsSymlink():
		want, err := f.ReadlinkInode(in)
		if err != nil {
			return err
		}
		if got, err := im.Readlink(q); err != nil || got != want {
			return fmt.Errorf("%w: %s: target %q (%v), the tree's %q", ErrMismatch, q, got, err, want)
		}
	case in.IsRegular():
		if uint64(g.Size) != in.Size {
			return fmt.Errorf("%w: %s: %d bytes, the tree's %d", ErrMismatch, q, g.Size, in.Size)
		}
		return v.data(p, q, in)
	}
	return nil
}

// xattrs compares an entry's extended attributes.
func (v *verifier) xattrs(p, q string, in *fsys.Inode, g *foreign.Stat) error {
	want, err := v.f.ListXattrs(in)
	if err != nil {
		return fmt.Errorf("%s: xattrs: %w", p, err)
	}
	got, err := v.im.Xattrs(q, g)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrMismatch, q, err)
	}
	sort.Slice(want, func(i, j int) bool { return want[i].Name < want[j].Name })
	same := len(got) == len(want)
	for i := 0; same && i < len(got); i++ {
		same = got[i].Name == want[i].Name && bytes.Equal(got[i].Value, want[i].Value)
	}
	if !same {
		return fmt.Errorf("%w: %s: %d extended attributes read back, the tree's %d differ", ErrMismatch, q, len(got), len(want))
	}
	return nil
}

// data compares a file's bytes by hash, streaming both sides.
func (v *verifier) data(p, q string, in *fsys.Inode) error {
	r, err := v.im.Open(q)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrMismatch, q, err)
	}
	defer r.Close()
	hg := sha256.New()
	if _, err := io.CopyBuffer(hg, struct{ io.Reader }{r}, v.buf); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrMismatch, q, err)
	}
	hw := sha256.New()
	buf := v.buf
	for off := uint64(0); off < in.Size; { // holes read as zeros, as the image's reader gives them
		n, err := v.f.ReadAt(in, buf[:min(uint64(len(buf)), in.Size-off)], off)
		if n == 0 && err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		hw.Write(buf[:n])
		off += uint64(n)
	}
	if !bytes.Equal(hg.Sum(nil), hw.Sum(nil)) {
		return fmt.Errorf("%w: %s: its bytes differ from the tree's", ErrMismatch, q)
	}
	v.st.Bytes += in.Size
	return nil
}
