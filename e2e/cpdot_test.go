package e2e

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCpDotIsContents: as GNU cp, "cp -a DIR/. IMG:/existing" merges
// DIR's contents into the directory (an entry there already stays), and
// into a path that does not exist makes it a copy of DIR.
func TestCpDotIsContents(t *testing.T) {
	dir := t.TempDir()
	for p, s := range map[string]string{"src/a": "a\n", "src/sub/b": "b\n"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "64M", "x.img"), 0)
	must(t, run(t, dir, "ddfs", "mkdir", "x.img:/dst"), 0)
	must(t, run(t, dir, "ddfs", "touch", "x.img:/dst/kept"), 0)
	must(t, run(t, dir, "ddfs", "cp", "-a", "src/.", "x.img:/dst"), 0)
	must(t, run(t, dir, "ddfs", "cp", "-a", "src/.", "x.img:/new"), 0)
	if r := must(t, run(t, dir, "ddfs", "find", "x.img:/"), 0); r.stdout != "/\n/dst\n/dst/a\n/dst/kept\n/dst/sub\n/dst/sub/b\n/new\n/new/a\n/new/sub\n/new/sub/b\n" {
		t.Fatalf("find: %q", r.stdout)
	}
}

// TestDiffSnapshots: diff between two snapshots of one image (and a
// snapshot and the live tree) names exactly what changed, a same-size
// rewrite deep in unchanged directories included; it reads only what
// the trees do not share.
func TestDiffSnapshots(t *testing.T) {
	dir := t.TempDir()
	src, _ := filepath.Abs("../format")
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "s.img"), 0)
	must(t, run(t, dir, "ddfs", "cp", "-a", src, "s.img:/d"), 0)
	must(t, run(t, dir, "ddfs", "mkdir", "s.img:/d/deep"), 0)
	must(t, run(t, dir, "ddfs", "mkdir", "s.img:/d/deep/er"), 0)
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, run(t, dir, "ddfs", "cp", "f", "s.img:/d/deep/er/f"), 0)
	must(t, run(t, dir, "ddfs", "snapshot", "create", "s.img", "s1"), 0)
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, run(t, dir, "ddfs", "cp", "f", "s.img:/d/deep/er/f"), 0)
	must(t, run(t, dir, "ddfs", "rm", "s.img:/d/doc.go"), 0)
	must(t, run(t, dir, "ddfs", "snapshot", "create", "s.img", "s2"), 0)
	r := must(t, run(t, dir, "ddfs", "diff", "s.img@s1:/", "s.img@s2:/"), 1)
	if want := "Files s.img@s1:/d/deep/er/f and s.img@s2:/d/deep/er/f differ\nOnly in s.img@s1:/d: doc.go\n"; r.stdout != want {
		t.Fatalf("diff: %q, want %q", r.stdout, want)
	}
	must(t, run(t, dir, "ddfs", "diff", "s.img@s2:/", "s.img:/"), 0)
}
