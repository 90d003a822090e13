package e2e

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// craftImage changes fs tree items of image in one committed transaction
// (checksums recomputed: a valid, hostile image).
func craftImage(t *testing.T, image string, change func(f *fsys.FS, tr *btree.Tree)) {
	t.Helper()
	st, err := store.Open([]string{image}, volume.Options{Write: true, NoScan: true})
	if err != nil {
		t.Fatal(err)
	}
	f, err := fsys.New(st, fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := st.Begin()
	if err != nil {
		t.Fatal(err)
	}
	change(f, tx.Tree(format.FSTree))
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

// openAtIno opens image read-only for a test to damage by hand once it
// has closed the store, and finds file p's inode number in it.
func openAtIno(t *testing.T, image, p string) (*store.FS, uint64) {
	t.Helper()
	st, err := store.Open([]string{image}, volume.Options{NoScan: true})
	if err != nil {
		t.Fatal(err)
	}
	f, err := fsys.New(st, fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st, resolveIno(t, f, p)
}

func resolveIno(t *testing.T, f *fsys.FS, p string) uint64 {
	t.Helper()
	in, err := f.Resolve(p, false)
	if err != nil {
		t.Fatal(err)
	}
	return in.Ino
}

// oneLine requires a single stderr line "ddfs: CMD: IMAGE:PATH: ..." and
// no panic (a Go panic exits 2 with a trace).
func oneLine(t *testing.T, r result, cmd, where string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if r.code != 1 || len(lines) != 1 || !strings.HasPrefix(lines[0], "ddfs: "+cmd+": ") || !strings.Contains(lines[0], where+": ") {
		t.Errorf("%s: exit %d, stderr %q: want exit 1 and one line naming %s", cmd, r.code, r.stderr, where)
	}
}

// TestCraftedExtentLengthCLI: a compressed extent whose disk_len claims
// 2^40 bytes used to panic `ddfs cat` and `fsck.ddfs --check-data`
// (makeslice: len out of range); now cat fails with one line and fsck
// reports problems (exit 4).
func TestCraftedExtentLengthCLI(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "text"), bytes.Repeat([]byte("compressible text "), 20000), 0o644)
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "--compress", "zstd:1", "disk.img"), 0)
	must(t, run(t, dir, "ddfs", "cp", "text", "disk.img:/text"), 0)
	craftImage(t, filepath.Join(dir, "disk.img"), func(f *fsys.FS, tr *btree.Tree) {
		ino := resolveIno(t, f, "/text")
		var keys []format.Key
		var vals [][]byte
		tr.Scan(format.Key{ObjectID: ino, Type: format.FileExtentKey}, format.Key{ObjectID: ino, Type: format.FileExtentKey + 1}, func(it format.Item) (bool, error) {
			keys, vals = append(keys, it.Key), append(vals, bytes.Clone(it.Data))
			return true, nil
		})
		for i, k := range keys {
			x, err := format.UnmarshalFileExtentItem(vals[i])
			if err != nil || x.Compression == format.CompressNone {
				t.Fatalf("extent %v: %+v %v", k, x, err)
			}
			x.DiskLen = 1 << 40
			if err := tr.Put(k, format.MarshalFileExtentItem(x)); err != nil {
				t.Fatal(err)
			}
		}
	})
	oneLine(t, run(t, dir, "ddfs", "cat", "disk.img:/text"), "cat", "disk.img:/text")
	if r := run(t, dir, "fsck.ddfs", "--check-data", "disk.img"); r.code != 4 || strings.Contains(r.stderr, "panic") {
		t.Errorf("fsck --check-data: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestCraftedNamespaceCLI: a directory reachable from a second entry is
// refused by every namespace walker of the CLI with one line naming the
// entry and exit 1, after the other files were handled; fsck flags it.
func TestCraftedNamespaceCLI(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"src/a", "src/b"} {
		os.MkdirAll(filepath.Join(dir, p), 0o755)
	}
	os.WriteFile(filepath.Join(dir, "src/a/f"), []byte("file a/f\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "src/b/g"), []byte("file b/g\n"), 0o644)
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "disk.img"), 0)
	must(t, run(t, dir, "ddfs", "cp", "-a", "src/a", "src/b", "disk.img:/"), 0)
	craftImage(t, filepath.Join(dir, "disk.img"), func(f *fsys.FS, tr *btree.Tree) {
		b, a := resolveIno(t, f, "/b"), resolveIno(t, f, "/a")
		e := format.DirEntry{Ino: a, Type: format.FileTypeDir, Name: "alias"}
		tr.Put(format.Key{ObjectID: b, Type: format.DirItemKey, Offset: format.NameHash([]byte("alias"))}, format.MarshalDirEntries([]format.DirEntry{e}))
		tr.Put(format.Key{ObjectID: b, Type: format.DirIndexKey, Offset: 1000}, format.MarshalDirEntry(e))
	})
	const bad = "disk.img:/b/alias"
	r := run(t, dir, "ddfs", "ls", "-R", "disk.img:/")
	oneLine(t, r, "ls", bad)
	if !strings.Contains(r.stdout, "\ng\n") || !strings.Contains(r.stdout, "\nf\n") {
		t.Errorf("ls -R: good entries missing: %q", r.stdout)
	}
	oneLine(t, run(t, dir, "ddfs", "du", "disk.img:/"), "du", bad)
	oneLine(t, run(t, dir, "ddfs", "cp", "-a", "disk.img:/", "out"), "cp", bad)
	if b, err := os.ReadFile(filepath.Join(dir, "out/b/g")); err != nil || string(b) != "file b/g\n" {
		t.Errorf("cp -a: good file not copied: %q %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "out/b/alias")); err == nil {
		t.Errorf("cp -a: refused entry copied")
	}
	oneLine(t, run(t, dir, "ddfs", "tar-out", "disk.img:/"), "tar-out", bad)
	if r := run(t, dir, "fsck.ddfs", "disk.img"); r.code != 4 {
		t.Errorf("fsck: exit %d, want 4\n%s", r.code, r.stdout)
	}
	oneLine(t, run(t, dir, "ddfs", "rm", "-r", "disk.img:/b"), "rm", bad)
}

// tarNames lists the entry names of a tar stream; the stream must end
// properly.
func tarNames(t *testing.T, stream string) []string {
	t.Helper()
	var names []string
	tarEach(t, []byte(stream), func(h *tar.Header, _ io.Reader) { names = append(names, h.Name) })
	return names
}

// tarEach calls fn with each header of a tar stream and its data; the
// stream must end properly.
func tarEach(t *testing.T, stream []byte, fn func(h *tar.Header, data io.Reader)) {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(stream))
	for n := 0; ; n++ {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("tar stream after %d entries: %v", n, err)
		}
		fn(h, tr)
	}
}

// TestTarOutRefusesOneEntry: an entry a PAX header cannot hold (an xattr
// name with '=', more than 1 MiB of xattrs) used to end the whole stream
// with an unnamed archive/tar error; now that entry alone is refused,
// named, exit 1, and the others are written in a stream that ends well;
// every refused entry is named, not only the first.
func TestTarOutRefusesOneEntry(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a", "b", "c"} {
		os.WriteFile(filepath.Join(dir, n), []byte(n+"\n"), 0o644)
	}
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-n", "64K", "-b", "256M", "disk.img"), 0)
	must(t, run(t, dir, "ddfs", "cp", "a", "b", "c", "disk.img:/"), 0)
	must(t, run(t, dir, "ddfs", "xattr", "set", "disk.img:/a", "user.x=y", "v"), 0)
	big := strings.Repeat("v", 60000)
	for i := range 18 { // 1.08 MB of records
		must(t, run(t, dir, "ddfs", "xattr", "set", "disk.img:/b", fmt.Sprintf("user.big%d", i), big), 0)
	}
	// Each refused entry has its line, in the walk's order.
	r := run(t, dir, "ddfs", "tar-out", "disk.img:/")
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if r.code != 1 || len(lines) != 2 || !strings.HasPrefix(lines[0], "ddfs: tar-out: disk.img:/a: ") || !strings.HasPrefix(lines[1], "ddfs: tar-out: disk.img:/b: ") {
		t.Errorf("tar-out: exit %d, stderr %q: want exit 1 and a line for /a, then /b", r.code, r.stderr)
	}
	if got := tarNames(t, r.stdout); !slices.Equal(got, []string{"./", "c"}) {
		t.Errorf("refusing /a and /b: entries %q", got)
	}
	must(t, run(t, dir, "ddfs", "xattr", "rm", "disk.img:/a", "user.x=y"), 0)
	r = run(t, dir, "ddfs", "tar-out", "disk.img:/")
	oneLine(t, r, "tar-out", "disk.img:/b")
	if got := tarNames(t, r.stdout); !slices.Equal(got, []string{"./", "a", "c"}) {
		t.Errorf("refusing /b: entries %q", got)
	}
}

// must1 fails the test on err (crafting steps).
func must1(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// craftSize sets the size of image file p to size (no extent changes)
// and returns its inode number.
func craftSize(t *testing.T, f *fsys.FS, tr *btree.Tree, p string, size uint64) uint64 {
	t.Helper()
	ino := resolveIno(t, f, p)
	ik := format.Key{ObjectID: ino, Type: format.InodeItemKey}
	b, err := tr.Get(ik)
	if err != nil {
		t.Fatal(err)
	}
	in, err := format.UnmarshalInodeItem(b)
	if err != nil {
		t.Fatal(err)
	}
	in.Size = size
	must1(t, tr.Put(ik, format.MarshalInodeItem(in)))
	return ino
}

// TestTotalsSaturate: five files of 2^62 bytes made du -sb print 4 (the
// sum wrapped); totals now stop at the largest uint64.
func TestTotalsSaturate(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "disk.img"), 0)
	names := []string{"f1", "f2", "f3", "f4", "f5"}
	for _, n := range names {
		os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644)
		must(t, run(t, dir, "ddfs", "cp", n, "disk.img:/"), 0)
	}
	craftImage(t, filepath.Join(dir, "disk.img"), func(f *fsys.FS, tr *btree.Tree) {
		for _, n := range names {
			craftSize(t, f, tr, "/"+n, 1<<62)
		}
	})
	if r := must(t, run(t, dir, "ddfs", "du", "-sb", "disk.img:/"), 0); r.stdout != "18446744073709551615\tdisk.img:/\n" {
		t.Errorf("du -sb: %q", r.stdout)
	}
}
