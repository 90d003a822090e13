package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestSeveralSourcesNeedDir: cp, mv and ln with several sources refuse a
// target that is not a directory, or does not exist, as GNU cp does: one
// line naming it, exit 1, and nothing changed (GNU cp on the host is the
// model for the exit status).
func TestSeveralSourcesNeedDir(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a", "b", "file"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(n+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gnu := exec.Command("cp", "a", "b", "file")
	gnu.Dir = dir
	if r := runCmd(t, gnu); r.code != 1 {
		t.Fatalf("GNU cp a b file: exit %d, the model is 1", r.code)
	}
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "d.img"), 0)
	must(t, run(t, dir, "ddfs", "cp", "a", "b", "file", "d.img:/"), 0)
	for _, c := range [][]string{
		{"cp", "a", "b", "d.img:/file"},
		{"cp", "a", "b", "d.img:/missing"},
		{"cp", "d.img:/a", "d.img:/b", "d.img:/file"},
		{"cp", "d.img:/a", "b", "d.img:/missing"},
		{"mv", "d.img:/a", "d.img:/b", "d.img:/file"},
		{"mv", "d.img:/a", "d.img:/b", "d.img:/missing"},
		{"ln", "d.img:/a", "d.img:/b", "d.img:/file"},
		{"ln", "-s", "a", "b", "d.img:/missing"},
	} {
		target := c[len(c)-1]
		r := must(t, run(t, dir, "ddfs", c...), 1)
		if want := "ddfs: " + c[0] + ": target '" + target + "' is not a directory\n"; r.stderr != want {
			t.Errorf("%v: %q, want %q", c, r.stderr, want)
		}
		if r := must(t, run(t, dir, "ddfs", "ls", "d.img:/"), 0); r.stdout != "a\nb\nfile\n" {
			t.Errorf("%v changed the image: ls / is %q", c, r.stdout)
		}
		if r := must(t, run(t, dir, "ddfs", "cat", "d.img:/file"), 0); r.stdout != "file\n" {
			t.Errorf("%v changed /file: %q", c, r.stdout)
		}
	}
	// Into a directory they all work.
	must(t, run(t, dir, "ddfs", "mkdir", "d.img:/cp", "d.img:/ln", "d.img:/mv"), 0)
	must(t, run(t, dir, "ddfs", "cp", "a", "d.img:/b", "d.img:/cp"), 0)
	must(t, run(t, dir, "ddfs", "ln", "d.img:/a", "d.img:/b", "d.img:/ln"), 0)
	must(t, run(t, dir, "ddfs", "mv", "d.img:/a", "d.img:/b", "d.img:/mv"), 0)
	for _, d := range []string{"cp", "ln", "mv"} {
		if r := must(t, run(t, dir, "ddfs", "ls", "d.img:/"+d), 0); r.stdout != "a\nb\n" {
			t.Errorf("%s into a directory: %q", d, r.stdout)
		}
	}
	must(t, run(t, dir, "fsck.ddfs", "d.img"), 0)
}
