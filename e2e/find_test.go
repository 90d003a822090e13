package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// findTree makes src/ on the host with files of sizes around the -size
// rounding edges, hidden names, a symlink, a fifo, an empty directory and
// an old file for -newer, and copies it into d.img with cp -a.
func findTree(t *testing.T, dir string) {
	t.Helper()
	src := filepath.Join(dir, "src")
	for _, d := range []string{"sub/deep", "emptydir", ".git/objects"} {
		os.MkdirAll(filepath.Join(src, d), 0o755)
	}
	for name, size := range map[string]int{"empty": 0, "one": 1, "b512": 512, "b513": 513, "k1": 1024, "sub/m1": 1 << 20,
		"sub/m1p": 1<<20 + 1, "sub/deep/a.txt": 10, "B.TXT": 3, ".hidden.txt": 4, ".git/objects/x": 7, "w3": 6, "w3p": 7} {
		os.WriteFile(filepath.Join(src, name), make([]byte, size), 0o644)
	}
	os.Symlink("one", filepath.Join(src, "link"))
	syscall.Mkfifo(filepath.Join(src, "fifo"), 0o644)
	old := time.Unix(1_600_000_000, 0)
	os.Chtimes(filepath.Join(src, "b512"), old, old)
	os.Chtimes(filepath.Join(src, "one"), old.Add(time.Hour), old.Add(time.Hour))
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "d.img"), 0)
	must(t, run(t, dir, "ddfs", "cp", "-a", "src", "d.img:/"), 0)
}

func sortedLines(s string) []string {
	l := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	sort.Strings(l)
	return l
}

// TestFindLikeGNU: ddfs find on the image prints what GNU find prints on
// the same host tree (GNU find is the model; the order is compared
// sorted, as ddfs walks in name order and GNU in readdir order).
func TestFindLikeGNU(t *testing.T) {
	if _, err := exec.LookPath("find"); err != nil {
		t.Skip("no find on the host")
	}
	dir := t.TempDir()
	findTree(t, dir)
	for _, q := range [][]string{
		{},
		{"-name", "*.txt"}, {"-iname", "*.TXT"}, {"-name", ".*"}, {"-name", "[!ab]*"}, {"-path", "*/sub/*"}, {"-ipath", "*SRC/SUB*"},
		{"-type", "f"}, {"-type", "d"}, {"-type", "l"}, {"-type", "p"}, {"-type", "f,l"},
		{"-type", "f", "-size", "-1M"}, {"-type", "f", "-size", "0"}, {"-type", "f", "-size", "1"}, {"-type", "f", "-size", "+1"},
		{"-type", "f", "-size", "2"}, {"-type", "f", "-size", "1k"}, {"-type", "f", "-size", "-2k"}, {"-type", "f", "-size", "1M"},
		{"-type", "f", "-size", "+1M"}, {"-type", "f", "-size", "2M"}, {"-type", "f", "-size", "1c"}, {"-type", "f", "-size", "-7c"},
		{"-type", "f", "-size", "1024k"}, {"-type", "f", "-size", "3w"}, {"-type", "f", "-size", "-1G"}, {"-type", "f", "-size", "1b"},
		{"-empty"}, {"-maxdepth", "1"}, {"-mindepth", "2"}, {"-maxdepth", "0"}, {"-mindepth", "1", "-maxdepth", "2", "-type", "d"},
		{"!", "-name", "*.txt"}, {"-not", "-type", "d"}, {"(", "-name", ".git", "-prune", ")", "-o", "-print"},
		{"-name", "one", "-o", "-name", "k1"}, {"-type", "f", "-a", "-name", "b*"}, {"(", "-name", "b*", "-o", "-name", "k*", ")", "-type", "f"},
		{"-type", "f", "-newer", "src/b512"}, {"-newer", "src/one", "-false"},
	} {
		host := exec.Command("find", append([]string{"src"}, q...)...)
		host.Dir = dir
		out, err := host.Output()
		if err != nil {
			t.Fatalf("host find %v: %v", q, err)
		}
		want := sortedLines(strings.ReplaceAll("\n"+string(out), "\nsrc", "\n/src")[1:])
		r := must(t, run(t, dir, "ddfs", append([]string{"find", "d.img:/src"}, q...)...), 0)
		if got := sortedLines(r.stdout); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("find %v:\n got %q\nwant %q", q, got, want)
		}
	}
	// -newer with a reference inside the image; -print0; name order.
	r := must(t, run(t, dir, "ddfs", "find", "d.img:/src", "-maxdepth", "1", "-type", "f", "-newer", "d.img:/src/b512", "-name", "[bo]*", "-print0"), 0)
	if r.stdout != "/src/b513\x00/src/one\x00" {
		t.Errorf("-newer IMG:REF -print0: %q", r.stdout)
	}
	if r := must(t, run(t, dir, "ddfs", "find", "d.img", "-maxdepth", "1"), 0); r.stdout != "/\n/src\n" {
		t.Errorf("bare image: %q", r.stdout)
	}
	// Usage errors exit 2; a missing start is reported and the others walked.
	for _, q := range [][]string{{"-bogus"}, {"-name"}, {"-type", "x"}, {"(", "-name", "a"}, {"-size", "1Q"}, {"-maxdepth", "-1"}} {
		must(t, run(t, dir, "ddfs", append([]string{"find", "d.img:/"}, q...)...), 2)
	}
	r = must(t, run(t, dir, "ddfs", "find", "d.img:/nope", "d.img:/src/one"), 1)
	if r.stdout != "/src/one\n" || r.stderr != "ddfs: find: d.img:/nope: No such file or directory\n" {
		t.Errorf("missing start: %q %q", r.stdout, r.stderr)
	}
	if r := must(t, run(t, dir, "ddfs", "find", "--help"), 0); !strings.Contains(r.stdout, "-size [+-]N[cwbkMG]") || !strings.Contains(r.stdout, "Exit status") {
		t.Errorf("--help: %q", r.stdout)
	}
}

// TestFindHostileLoop: a directory entry leading back to an ancestor and
// a second name of a directory are refused: find ends, lists the rest and
// fails naming the first refused entry.
func TestFindHostileLoop(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "d.img"), 0)
	must(t, run(t, dir, "ddfs", "mkdir", "-p", "d.img:/a/x", "d.img:/b"), 0)
	craftImage(t, filepath.Join(dir, "d.img"), func(f *fsys.FS, tr *btree.Tree) {
		for i, e := range []struct{ dir, target, name string }{{"/a/x", "/a", "up"}, {"/b", "/a/x", "alias"}} {
			d, target := resolveIno(t, f, e.dir), resolveIno(t, f, e.target)
			de := format.DirEntry{Ino: target, Type: format.FileTypeDir, Name: e.name}
			tr.Put(format.Key{ObjectID: d, Type: format.DirItemKey, Offset: format.NameHash([]byte(e.name))}, format.MarshalDirEntries([]format.DirEntry{de}))
			tr.Put(format.Key{ObjectID: d, Type: format.DirIndexKey, Offset: 1000 + uint64(i)}, format.MarshalDirEntry(de))
		}
	})
	r := run(t, dir, "ddfs", "find", "d.img:/")
	oneLine(t, r, "find", "d.img:/a/x/up")
	if r.stdout != "/\n/a\n/a/x\n/b\n" {
		t.Errorf("find: %q", r.stdout)
	}
}
