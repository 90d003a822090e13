package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestManPagesCurrent regenerates every tool's man pages and wants them
// byte-identical to the checked-in man/ (run `make man` after a change to
// any --help), and a page for every command, with its examples.
func TestManPagesCurrent(t *testing.T) {
	dir := t.TempDir()
	for _, tool := range []string{"ddfs", "mkfs.ddfs", "fsck.ddfs", "dedupe-tool", "trimtool"} {
		cmd := exec.Command(filepath.Join(binDir, tool))
		cmd.Env = append(os.Environ(), "DDFS_GEN_MAN="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v %s", tool, err, out)
		}
	}
	got, _ := filepath.Glob(filepath.Join(dir, "*.8"))
	want, _ := filepath.Glob("../man/*.8")
	if len(got) != len(want) || len(got) < 40 {
		t.Fatalf("%d pages generated, %d in man/ (run make man)", len(got), len(want))
	}
	for _, p := range got {
		a, _ := os.ReadFile(p)
		b, err := os.ReadFile(filepath.Join("../man", filepath.Base(p)))
		if err != nil || string(a) != string(b) {
			t.Errorf("man/%s is not current (run make man)", filepath.Base(p))
		}
	}
	page, _ := os.ReadFile(filepath.Join(dir, "ddfs-chmod.8"))
	for _, s := range []string{"u+rwX,go-w", "EXAMPLE"} {
		if !strings.Contains(string(page), s) {
			t.Errorf("ddfs-chmod.8 lacks %q", s)
		}
	}
}
