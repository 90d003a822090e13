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
	dir, bin := t.TempDir(), t.TempDir()
	for tool, pkg := range map[string]string{"ddfs": "../ddfs", "mkfs.ddfs": "../mkfs", "fsck.ddfs": "../fsck", "dedupe-tool": "../dedupe-tool", "trimtool": "../trimtool"} {
		// The page writer is in tools built with -tags ddfs_man only.
		if out, err := exec.Command("go", "build", "-tags", "ddfs_man", "-o", filepath.Join(bin, tool), pkg).CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v %s", tool, err, out)
		}
		cmd := exec.Command(filepath.Join(bin, tool))
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
	// Every page has the EXIT STATUS of man-pages(7), the --help text.
	for _, p := range got {
		if a, _ := os.ReadFile(p); !strings.Contains(string(a), ".SH EXIT STATUS\n.nf\n") {
			t.Errorf("%s has no EXIT STATUS", filepath.Base(p))
		}
	}
	for page, want := range map[string]string{"fsck.ddfs.8": "\n  32  cancelled (SIGINT, SIGTERM)", "ddfs-ls.8": "\n0 success, 1 error, 2 usage error\n.fi\n"} {
		if a, _ := os.ReadFile(filepath.Join(dir, page)); !strings.Contains(string(a), want) {
			t.Errorf("%s: EXIT STATUS lacks %q", page, want)
		}
	}
	page, _ := os.ReadFile(filepath.Join(dir, "ddfs-chmod.8"))
	for _, s := range []string{"u+rwX,go-w", "EXAMPLE"} {
		if !strings.Contains(string(page), s) {
			t.Errorf("ddfs-chmod.8 lacks %q", s)
		}
	}
}
