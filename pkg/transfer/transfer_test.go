package transfer

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
)

func newFS(t testing.TB, size int64) *fsys.FS {
	t.Helper()
	d := device.NewMemDevice("m", size)
	st, tx, err := store.CreateTx(store.CreateParams{FSID: [16]byte{5}, Csum: format.CsumCRC32C, NodeSize: 16384, SectorSize: 4096,
		Data: format.ProfileSingle, Metadata: format.ProfileDup, Devices: []store.NewDevice{{Dev: d, Path: "m"}}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := fsys.New(st, fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f.Adopt(tx)
	if err := f.InitRoot(fsys.Attr{Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	return f
}

// makeTree builds a host tree with every file type, hard links, xattrs,
// sparse and empty files, long and non-UTF-8 names.
func makeTree(t *testing.T, dir string) {
	t.Helper()
	r := rand.New(rand.NewPCG(3, 4))
	write := func(p string, data []byte, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, p), data, mode); err != nil {
			t.Fatal(err)
		}
	}
	rnd := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	os.MkdirAll(filepath.Join(dir, "a/b/c"), 0o750)
	write("empty", nil, 0o644)
	write("small", []byte("hello\n"), 0o600)
	write("a/mid", rnd(100_000), 0o644)
	write("a/b/big", rnd(9<<20+123), 0o755)
	write("setuid", []byte("x"), 0o4755)
	// Modes that open's umask (or its missing special bits) would not
	// give a copied-out file: the copy must chmod them.
	os.Chmod(filepath.Join(dir, "setuid"), os.ModeSetuid|0o755)
	write("open", []byte("all may write"), 0o777)
	os.Chmod(filepath.Join(dir, "open"), 0o777)
	write(strings.Repeat("L", 255), []byte("long name"), 0o644)
	write("bad\xffname", []byte("non-utf8"), 0o644)
	sp, _ := os.Create(filepath.Join(dir, "sparse"))
	sp.WriteAt([]byte("start"), 0)
	sp.WriteAt([]byte("end"), 64<<20)
	sp.Close()
	os.Symlink("a/b/big", filepath.Join(dir, "link-file"))
	os.Symlink("a/b", filepath.Join(dir, "link-dir"))
	os.Symlink("/nonexistent/abs", filepath.Join(dir, "link-dangling"))
	os.Link(filepath.Join(dir, "a/mid"), filepath.Join(dir, "a/b/c/hard"))
	os.Link(filepath.Join(dir, "a/mid"), filepath.Join(dir, "hard2"))
	syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o640)
	if os.Geteuid() == 0 {
		syscall.Mknod(filepath.Join(dir, "null"), syscall.S_IFCHR|0o666, int(unix.Mkdev(1, 3)))
	}
	if l, err := net.Listen("unix", filepath.Join(dir, "sock")); err == nil {
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		l.Close()
	}
	unix.Lsetxattr(filepath.Join(dir, "small"), "user.color", []byte("blue"), 0)
	unix.Lsetxattr(filepath.Join(dir, "a"), "user.dir", []byte{0, 1, 2}, 0)
	unix.Lsetxattr(filepath.Join(dir, "small"), "security.capability", []byte{1, 0, 0, 2, 0, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 0)
	past := time.Unix(1600000000, 123456789)
	os.Chtimes(filepath.Join(dir, "small"), past, past)
	os.Chown(filepath.Join(dir, "a/mid"), 1234, 5678)
}

type entry struct {
	mode    uint32
	uid     uint32
	gid     uint32
	mtime   int64
	size    int64
	data    string
	link    string
	rdev    uint64
	xattrs  string
	linkKey string
}

// snapshotTree records everything cp -a must keep.
func snapshotTree(t *testing.T, dir string) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	inos := map[uint64]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		var st syscall.Stat_t
		syscall.Lstat(p, &st)
		e := entry{mode: st.Mode, uid: st.Uid, gid: st.Gid, rdev: st.Rdev}
		if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			e.mtime = st.Mtim.Nano() // directory times change as entries are made
			e.size = st.Size
		}
		switch st.Mode & syscall.S_IFMT {
		case syscall.S_IFREG:
			b, _ := os.ReadFile(p)
			e.data = string(b)
			if first, ok := inos[st.Ino]; ok {
				e.linkKey = first
			} else {
				inos[st.Ino] = rel
				e.linkKey = rel
			}
		case syscall.S_IFLNK:
			e.link, _ = os.Readlink(p)
		}
		if rel != "." {
			sz, _ := unix.Llistxattr(p, nil)
			if sz > 0 {
				names := make([]byte, sz)
				unix.Llistxattr(p, names)
				var xs []string
				for _, n := range splitNul(names) {
					v := make([]byte, 256)
					vs, _ := unix.Lgetxattr(p, n, v)
					xs = append(xs, n+"="+string(v[:vs]))
				}
				sort.Strings(xs)
				e.xattrs = strings.Join(xs, ";")
			}
		}
		out[rel] = e
		return nil
	})
	return out
}

func TestArchiveRoundTrip(t *testing.T) {
	src := t.TempDir()
	makeTree(t, src)
	f := newFS(t, 2<<30)
	if err := CopyIn(f, src, "/", Options{Recursive: true, Archive: true}, true); err != nil {
		t.Fatal(err)
	}
	// Sparse stays sparse in the image.
	sp, err := f.Resolve("/sparse", false)
	if err != nil || sp.Size != 64<<20+3 || sp.NBytes > 64<<10 {
		t.Fatalf("sparse in image: %+v %v", sp, err)
	}
	out := t.TempDir()
	if err := CopyOut(f, "/", out, Options{Recursive: true, Archive: true}); err != nil {
		t.Fatal(err)
	}
	compareTrees(t, src, out)
	var st syscall.Stat_t
	syscall.Stat(filepath.Join(out, "sparse"), &st)
	if st.Blocks*512 > 1<<20 {
		t.Fatalf("sparse file copied out with %d bytes allocated", st.Blocks*512)
	}
	// Tar out of the image, into a second image, out again: same tree.
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	tb, err := tarBoth(t, f, "/") // and the same bytes with a pipe
	if err != nil {
		t.Fatal(err)
	}
	tarBuf := bytes.NewBuffer(tb)
	g := newFS(t, 2<<30)
	if err := TarIn(g, tarBuf, "/", Options{}); err != nil {
		t.Fatal(err)
	}
	out2 := t.TempDir()
	if err := CopyOut(g, "/", out2, Options{Recursive: true, Archive: true}); err != nil {
		t.Fatal(err)
	}
	withoutSock := snapshotTree(t, src)
	delete(withoutSock, "sock") // tar cannot hold sockets
	compareSnapshots(t, withoutSock, snapshotTree(t, out2))
}

func compareTrees(t *testing.T, a, b string) {
	t.Helper()
	compareSnapshots(t, snapshotTree(t, a), snapshotTree(t, b))
}

func compareSnapshots(t *testing.T, sa, sb map[string]entry) {
	t.Helper()
	for p, ea := range sa {
		eb, ok := sb[p]
		if !ok {
			t.Errorf("%q missing in copy", p)
			continue
		}
		if p == "." {
			continue
		}
		if ea != eb {
			t.Errorf("%q differs:\n  src  %s\n  copy %s", p, describe(ea), describe(eb))
		}
	}
	for p := range sb {
		if _, ok := sa[p]; !ok {
			t.Errorf("%q only in copy", p)
		}
	}
}

func describe(e entry) string {
	d := e.data
	if len(d) > 16 {
		d = fmt.Sprintf("%d bytes", len(d))
	}
	return fmt.Sprintf("mode %o uid %d gid %d mtime %d size %d data %q link %q rdev %d xattrs %q hard %q", e.mode, e.uid, e.gid, e.mtime, e.size, d, e.link, e.rdev, e.xattrs, e.linkKey)
}

// TestCopyOutNeverEscapes: a crafted image whose root holds a symlink
// "d" to a folder outside and a second entry "d" that is a directory
// with a file cannot make a copy write outside the destination.
func TestCopyOutNeverEscapes(t *testing.T) {
	f := newFS(t, 256<<20)
	outside := t.TempDir()
	dst := t.TempDir()
	f.Symlink(outside, "/d", fsys.Attr{})
	f.Symlink("../../../../../../"+outside, "/rel", fsys.Attr{})
	x, _ := f.Mkdir("/x", fsys.Attr{Mode: 0o755})
	in, _ := f.Create("/x/victim", fsys.Attr{Mode: 0o644})
	f.WriteAt(in, []byte("pwned"), 0)
	f.Sync()
	// Surgery: a second root entry named "d" for directory /x.
	tx, err := f.Store().Begin()
	if err != nil {
		t.Fatal(err)
	}
	dup := format.MarshalDirEntry(format.DirEntry{Ino: x.Ino, Type: format.FileTypeDir, Name: "d"})
	if err := tx.Tree(format.FSTree).Insert(format.Key{ObjectID: format.RootDirIno, Type: format.DirIndexKey, Offset: 1 << 40}, dup); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	err = CopyOut(f, "/", dst, Options{Recursive: true, Archive: true})
	if err == nil {
		t.Fatal("copy of the crafted image succeeded")
	}
	ents, _ := os.ReadDir(outside)
	if len(ents) != 0 {
		t.Fatalf("wrote outside the destination: %v", ents)
	}
	// The relative symlink is created as a symlink, never followed.
	if target, err := os.Readlink(filepath.Join(dst, "rel")); err != nil || !strings.HasPrefix(target, "../") {
		t.Fatalf("rel: %q %v", target, err)
	}
}

// TestSmallSparseFile: a small file with several data ranges copies whole.
func TestSmallSparseFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s")
	fh, _ := os.Create(p)
	for i := int64(0); i < 8; i++ {
		fh.WriteAt([]byte("data"), i*256<<10)
	}
	fh.Close()
	f := newFS(t, 256<<20)
	if err := CopyIn(f, p, "/s", Options{}, false); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(p)
	in, _ := f.Resolve("/s", false)
	got := make([]byte, in.Size)
	f.ReadAt(in, got, 0)
	if !bytes.Equal(got, want) {
		t.Fatal("small sparse file differs")
	}
}

// TestReviewFixes covers what an independent review found: a symlink
// entry cannot redirect later tar entries, cp of a file onto itself is
// refused, and a write error on a big file does not hang the copy.
func TestReviewFixes(t *testing.T) {
	f := newFS(t, 256<<20)
	if _, err := f.Mkdir("/etc", fsys.Attr{Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	in, _ := f.Create("/etc/passwd", fsys.Attr{Mode: 0o644})
	f.WriteAt(in, []byte("root"), 0)
	f.Mkdir("/opt", fsys.Attr{Mode: 0o755})
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Name: "evil", Typeflag: tar.TypeSymlink, Linkname: "/etc", Mode: 0o777})
	tw.WriteHeader(&tar.Header{Name: "evil/passwd", Typeflag: tar.TypeReg, Mode: 0o644, Size: 5})
	tw.Write([]byte("owned"))
	tw.Close()
	if err := TarIn(f, &b, "/opt", Options{}); err == nil || !strings.Contains(err.Error(), "through symlink") {
		t.Fatalf("tar through a symlink: %v", err)
	}
	f.Abort()
	g := newFS(t, 256<<20)
	a, _ := g.Create("/a", fsys.Attr{Mode: 0o644})
	g.WriteAt(a, bytes.Repeat([]byte("x"), 65536), 0)
	g.Sync()
	if err := CopyWithin(g, "/a", "/a", Options{}); err == nil {
		t.Fatal("cp a a succeeded")
	}
	if got := make([]byte, 65536); true {
		a, _ = g.Resolve("/a", false)
		g.ReadAt(a, got, 0)
		if !bytes.Equal(got, bytes.Repeat([]byte("x"), 65536)) {
			t.Fatal("cp a a damaged a")
		}
	}
	// A 100 MiB file into a 64 MiB image: ENOSPC, no hang.
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	fh, _ := os.Create(big)
	r := rand.New(rand.NewPCG(1, 2))
	chunk := make([]byte, 1<<20)
	for i := 0; i < 100; i++ {
		for j := range chunk {
			chunk[j] = byte(r.Uint32())
		}
		fh.Write(chunk)
	}
	fh.Close()
	h := newFS(t, 64<<20)
	done := make(chan error, 1)
	go func() { done <- CopyIn(h, big, "/big", Options{}, false) }()
	select {
	case err := <-done:
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("got %v, want ENOSPC", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("copy of a file bigger than the image hangs")
	}
}
