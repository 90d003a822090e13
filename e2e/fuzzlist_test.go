package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFuzzListOwnPackages: make fuzz-list (the targets make fuzz runs)
// names the fuzz targets of the module's own packages, not those of a
// copy of a package lying in the tree: make demo copies pkg/ out to
// demo/_out-pkg, and make fuzz used to fuzz that copy too. Run on a
// small module of its own with this repository's Makefile.
func TestFuzzListOwnPackages(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("needs make")
	}
	mk, err := filepath.Abs("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fuzzTest := func(name string) string {
		return "package a\n\nimport \"testing\"\n\nfunc " + name + "(f *testing.F) { f.Fuzz(func(*testing.T, []byte) {}) }\n"
	}
	for path, text := range map[string]string{
		"go.mod":                    "module example.com/m\n\ngo 1.22\n",
		"a/a.go":                    "package a\n",
		"a/a_test.go":               fuzzTest("FuzzOwn"),
		"b/b_test.go":               "package b\n\nimport \"testing\"\n\nfunc TestNoFuzz(*testing.T) {}\n",
		"demo/_out-pkg/a/a.go":      "package a\n",
		"demo/_out-pkg/a/a_test.go": fuzzTest("FuzzStray"),
		"a/testdata/copy/a_test.go": fuzzTest("FuzzTestdata"),
	} {
		p := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("make", "-s", "--no-print-directory", "-f", mk, "fuzz-list")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make fuzz-list: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "example.com/m/a FuzzOwn" {
		t.Fatalf("make fuzz-list listed:\n%s\nwant only example.com/m/a FuzzOwn", got)
	}
}
