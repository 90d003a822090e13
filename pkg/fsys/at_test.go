package fsys

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/check"
)

// atClean commits and wants fsck clean (with the data).
func atClean(t *testing.T, f *FS) {
	t.Helper()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	rep, err := check.CheckVolume(f.Store().Vol, check.Options{CheckData: true})
	if err != nil || !rep.Clean() {
		t.Fatalf("fsck: %v %v", err, rep.Problems)
	}
}

// refused wants errno and no transaction begun: a precondition failure
// changes nothing (the FUSE server relies on it to go on after one).
func refused(t *testing.T, f *FS, what string, err error, errno syscall.Errno) {
	t.Helper()
	if !errors.Is(err, errno) {
		t.Fatalf("%s: %v, want %v", what, err, errno)
	}
	if f.tx != nil {
		t.Fatalf("%s: a refused call began a transaction", what)
	}
}

func TestAtRefusals(t *testing.T) {
	f, _ := newTestFS(t, 256<<20, 1)
	root := uint64(format.RootDirIno)
	d, err := f.CreateAt(root, "d", Attr{Mode: syscall.S_IFDIR | 0o755})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.CreateAt(d.Ino, "x", Attr{Mode: 0o644}); err != nil {
		t.Fatal(err)
	}
	file, err := f.CreateAt(root, "f", Attr{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	atClean(t, f)
	_, err = f.CreateAt(root, strings.Repeat("n", 256), Attr{Mode: 0o644})
	refused(t, f, "create a 256-byte name", err, syscall.ENAMETOOLONG)
	_, err = f.CreateAt(root, "f", Attr{Mode: 0o644})
	refused(t, f, "create over a name", err, syscall.EEXIST)
	_, err = f.CreateAt(file.Ino, "y", Attr{Mode: 0o644})
	refused(t, f, "create in a file", err, syscall.ENOTDIR)
	_, err = f.LookupAt(root, "none")
	refused(t, f, "lookup of a missing name", err, syscall.ENOENT)
	refused(t, f, "unlink a directory", f.UnlinkAt(root, "d", false), syscall.EISDIR)
	refused(t, f, "rmdir a file", f.UnlinkAt(root, "f", true), syscall.ENOTDIR)
	refused(t, f, "rmdir a non-empty directory", f.UnlinkAt(root, "d", true), syscall.ENOTEMPTY)
	refused(t, f, "RENAME_NOREPLACE onto a name", f.RenameAt(root, "f", root, "d", RenameNoReplace), syscall.EEXIST)
	refused(t, f, "RENAME_EXCHANGE with a missing name", f.RenameAt(root, "f", root, "none", RenameExchange), syscall.ENOENT)
	refused(t, f, "both rename flags", f.RenameAt(root, "f", root, "g", RenameNoReplace|RenameExchange), syscall.EINVAL)
	refused(t, f, "RENAME_WHITEOUT", f.RenameAt(root, "f", root, "g", 4), syscall.EINVAL)
	refused(t, f, "exchange a directory below itself", f.RenameAt(root, "d", d.Ino, "x", RenameExchange), syscall.EINVAL)
	_, err = f.LinkAt(d.Ino, root, "dlink")
	refused(t, f, "hard link to a directory", err, syscall.EPERM)
	_, err = f.SymlinkAt(root, "s", strings.Repeat("t", 4096), Attr{})
	refused(t, f, "symlink target past PATH_MAX", err, syscall.ENAMETOOLONG)
}

// TestLinkAtEMLINK: the names of one inode in one directory share an
// INODE_REF item; once another would not fit a node, LinkAt and the
// path-based Link (ddfs ln) refuse with EMLINK before changing anything,
// and the links made stay consistent.
func TestLinkAtEMLINK(t *testing.T) {
	t.Run("LinkAt", func(t *testing.T) {
		testEMLINK(t, func(f *FS, ino uint64, name string) error {
			_, err := f.LinkAt(ino, format.RootDirIno, name)
			return err
		})
	})
	t.Run("Link", func(t *testing.T) {
		testEMLINK(t, func(f *FS, _ uint64, name string) error { return f.Link("/f", "/"+name) })
	})
}

func testEMLINK(t *testing.T, link func(f *FS, ino uint64, name string) error) {
	f, _ := newTestFS(t, 256<<20, 1)
	root := uint64(format.RootDirIno)
	in, err := f.CreateAt(root, "f", Attr{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	atClean(t, f)
	n := 1
	for ; n < 10000; n++ {
		if err = link(f, in.Ino, strings.Repeat("l", 200)+itoa(n)); err != nil {
			break
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	err = link(f, in.Ino, strings.Repeat("l", 200)+"x")
	var errno syscall.Errno
	if !errors.As(err, &errno) || errno != syscall.EMLINK {
		t.Fatalf("a link past the INODE_REF item's room: %v, want EMLINK", err)
	}
	got, err := f.Inode(in.Ino)
	if err != nil || got.Nlink != uint32(n) || n < 50 {
		t.Fatalf("nlink %d after %d names (%v)", got.Nlink, n, err)
	}
	atClean(t, f)
}

// TestExchangeAcrossDirs: swapping a directory and a file between two
// directories moves the ".." count, and fsck agrees.
func TestExchangeAcrossDirs(t *testing.T) {
	f, _ := newTestFS(t, 256<<20, 1)
	root := uint64(format.RootDirIno)
	a, _ := f.CreateAt(root, "a", Attr{Mode: syscall.S_IFDIR | 0o755})
	b, _ := f.CreateAt(root, "b", Attr{Mode: syscall.S_IFDIR | 0o755})
	x, _ := f.CreateAt(a.Ino, "x", Attr{Mode: syscall.S_IFDIR | 0o755})
	y, err := f.CreateAt(b.Ino, "y", Attr{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.RenameAt(a.Ino, "x", b.Ino, "y", RenameExchange); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]uint64{"/a/x": y.Ino, "/b/y": x.Ino} {
		if in, err := f.Resolve(name, false); err != nil || in.Ino != want {
			t.Fatalf("%s: %v %v, want inode %d", name, in, err, want)
		}
	}
	atClean(t, f)
}

// TestPunchHoleInline: a hole in the middle of inline data (which punch
// cannot split) reads as zeros, the rest intact.
func TestPunchHoleInline(t *testing.T) {
	f, _ := newTestFS(t, 256<<20, 1)
	in, err := f.CreateAt(format.RootDirIno, "f", Attr{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("abcdefgh"), 50)
	if err := f.WriteAt(in, data, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.PunchHole(in, 100, 50); err != nil {
		t.Fatal(err)
	}
	clear(data[100:150])
	got := make([]byte, len(data))
	if n, _ := f.ReadAt(in, got, 0); n != len(data) || !bytes.Equal(got, data) || in.Size != 400 {
		t.Fatalf("after punch: %d bytes, size %d, equal %v", n, in.Size, bytes.Equal(got, data))
	}
	atClean(t, f)
}

func itoa(n int) string { return strconv.Itoa(n) }
