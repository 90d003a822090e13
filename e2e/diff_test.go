package e2e

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// diffTrees makes host trees a/ and b/ that differ in every way diff -rq
// reports, and agree elsewhere.
func diffTrees(t *testing.T, dir string) {
	t.Helper()
	big := make([]byte, 3<<20+17) // several compare buffers
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	for _, side := range []string{"a", "b"} {
		root := filepath.Join(dir, side)
		for _, d := range []string{"sub/deep", "typechg", "onlydir-" + side} {
			os.MkdirAll(filepath.Join(root, d), 0o755)
		}
		write := func(name, data string) { os.WriteFile(filepath.Join(root, name), []byte(data), 0o644) }
		write("same.txt", "same\n")
		write("sub/deep/same", "deep\n")
		write("diff.txt", "one "+side+"\n")
		write("only-"+side, "x")
		write("onlydir-"+side+"/f", "x")
		b := append([]byte(nil), big...)
		if side == "b" {
			b[len(b)-3] ^= 1 // differs only in the last buffer
			write("size", "longer")
			write("typechg/f", "")
			write("emptyvs", "")
			os.Symlink("y", filepath.Join(root, "link"))
			os.Mkdir(filepath.Join(root, "filevsdir"), 0o755)
		} else {
			write("size", "short")
			os.Mkdir(filepath.Join(root, "typechg/f"), 0o755)
			os.Mkdir(filepath.Join(root, "emptyvs"), 0o755)
			os.Symlink("x", filepath.Join(root, "link"))
			write("filevsdir", "data")
		}
		os.WriteFile(filepath.Join(root, "big"), b, 0o644)
		os.WriteFile(filepath.Join(root, "bigsame"), big, 0o644)
		os.Symlink("same.txt", filepath.Join(root, "samelink"))
		syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644)
	}
}

// TestDiffLikeGNU: ddfs diff prints what 'diff -rq --no-dereference'
// prints for the same trees (GNU diff is the model), with the same exit
// code, image against host, image against image and within one image.
func TestDiffLikeGNU(t *testing.T) {
	if _, err := exec.LookPath("diff"); err != nil {
		t.Skip("no diff on the host")
	}
	dir := t.TempDir()
	diffTrees(t, dir)
	host := exec.Command("diff", "-rq", "--no-dereference", "a", "b")
	host.Dir, host.Env = dir, append(os.Environ(), "LC_ALL=C")
	out, err := host.Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("host diff: %v", err)
	}
	// Where ddfs differs on purpose: two fifos are the same.
	const fifos = "File a/fifo is a fifo while file b/fifo is a fifo\n"
	want := strings.Replace(string(out), fifos, "", 1)
	if !strings.Contains(want, "Files a/big and b/big differ") || !strings.Contains(string(out), fifos) {
		t.Fatalf("the trees do not differ as meant:\n%s", out)
	}
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "one.img"), 0)
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "two.img"), 0)
	must(t, run(t, dir, "ddfs", "cp", "-a", "a", "b", "one.img:/"), 0)
	must(t, run(t, dir, "ddfs", "cp", "-a", "b", "two.img:/"), 0)
	for _, c := range []struct{ a, b, showA, showB string }{
		{"one.img:/a", "b", "one.img:/a", "b"},
		{"a", "one.img:/b", "a", "one.img:/b"},
		{"one.img:/a", "one.img:/b", "one.img:/a", "one.img:/b"},
		{"one.img:/a", "two.img:/b", "one.img:/a", "two.img:/b"},
	} {
		r := must(t, run(t, dir, "ddfs", "diff", "-rq", c.a, c.b), 1)
		got := strings.ReplaceAll(strings.ReplaceAll(r.stdout, c.showA, "a"), c.showB, "b")
		if got != want || r.stderr != "" {
			t.Errorf("diff %s %s:\n%s\nwant\n%s\nstderr %q", c.a, c.b, got, want, r.stderr)
		}
	}
	for _, c := range [][2]string{{"one.img:/a", "a"}, {"one.img:/b", "two.img:/b"}, {"one.img:/a", "one.img:/a"}, {"one.img:/a/big", "a/big"}} {
		if r := must(t, run(t, dir, "ddfs", "diff", c[0], c[1]), 0); r.stdout != "" {
			t.Errorf("diff %v: %q", c, r.stdout)
		}
	}
	r := must(t, run(t, dir, "ddfs", "diff", "one.img:/a", "nope"), 2)
	if r.stderr != "ddfs: diff: nope: No such file or directory\n" {
		t.Errorf("missing: %q", r.stderr)
	}
	must(t, run(t, dir, "ddfs", "diff", "a", "b"), 2)
}

// TestDiffRefusedEntry: an entry fsck flags is trouble (exit 2, one line
// naming it); the rest is still compared.
func TestDiffRefusedEntry(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "t/d"), 0o755)
	os.WriteFile(filepath.Join(dir, "t/f"), []byte("f\n"), 0o644)
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "d.img"), 0)
	must(t, run(t, dir, "ddfs", "cp", "-a", "t", "d.img:/"), 0)
	must(t, run(t, dir, "ddfs", "diff", "d.img:/t", "t"), 0)
	craftImage(t, filepath.Join(dir, "d.img"), func(f *fsys.FS, tr *btree.Tree) {
		td, d := resolveIno(t, f, "/t"), resolveIno(t, f, "/t/d")
		e := format.DirEntry{Ino: d, Type: format.FileTypeDir, Name: "alias"}
		tr.Put(format.Key{ObjectID: td, Type: format.DirItemKey, Offset: format.NameHash([]byte("alias"))}, format.MarshalDirEntries([]format.DirEntry{e}))
		tr.Put(format.Key{ObjectID: td, Type: format.DirIndexKey, Offset: 1000}, format.MarshalDirEntry(e))
	})
	os.WriteFile(filepath.Join(dir, "t/f"), []byte("g\n"), 0o644)
	r := run(t, dir, "ddfs", "diff", "d.img:/t", "t")
	if r.code != 2 || !strings.HasPrefix(r.stderr, "ddfs: diff: read d.img:/t/alias: ") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	if r.stdout != "Files d.img:/t/f and t/f differ\n" {
		t.Errorf("stdout %q", r.stdout)
	}
}

// TestDiffHugeSparse: files of 2^62 bytes, holding 10000 bytes at 2^61
// or nothing (e), compare in time proportional to their extents (diff
// used to stream every byte of the holes: it never ended).
func TestDiffHugeSparse(t *testing.T) {
	dir := t.TempDir()
	for n, data := range map[string]string{"a": "same", "b": "same", "c": "diff"} {
		os.WriteFile(filepath.Join(dir, n), bytes.Repeat([]byte(data), 2500), 0o644)
	}
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "disk.img"), 0)
	os.WriteFile(filepath.Join(dir, "e"), nil, 0o644)
	must(t, run(t, dir, "ddfs", "cp", "a", "b", "c", "e", "disk.img:/"), 0)
	craftImage(t, filepath.Join(dir, "disk.img"), func(f *fsys.FS, tr *btree.Tree) {
		for _, p := range []string{"/a", "/b", "/c", "/e"} {
			ino := craftSize(t, f, tr, p, 1<<62)
			if p == "/e" {
				continue
			}
			xk := format.Key{ObjectID: ino, Type: format.FileExtentKey}
			x, err := tr.Get(xk)
			if err != nil {
				t.Fatal(err)
			}
			x = bytes.Clone(x)
			must1(t, tr.Delete(xk))
			xk.Offset = 1 << 61
			must1(t, tr.Put(xk, x))
		}
	})
	must(t, run(t, dir, "ddfs", "diff", "disk.img:/a", "disk.img:/b"), 0)
	if r := must(t, run(t, dir, "ddfs", "diff", "disk.img:/a", "disk.img:/c"), 1); r.stdout != "Files disk.img:/a and disk.img:/c differ\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	must(t, run(t, dir, "ddfs", "diff", "disk.img:/e", "disk.img:/a"), 1) // a's data against e's hole
}
