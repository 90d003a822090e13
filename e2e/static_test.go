package e2e

import (
	"debug/elf"
	"os"
	"path/filepath"
	"testing"
)

// TestToolsStatic: the tools are built as make build builds them, without
// cgo, and link no shared library: fsck.ddfs must run from an initramfs or
// a rescue shell without libc, and a loader and libc mapped were 1.5 MB of
// dedupe-tool run's peak RSS. A new dependency on cgo fails here.
func TestToolsStatic(t *testing.T) {
	ents, err := os.ReadDir(binDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) == 0 {
		t.Fatal("no tools built")
	}
	for _, e := range ents {
		f, err := elf.Open(filepath.Join(binDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		libs, err := f.ImportedLibraries()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s: has a program interpreter (dynamically linked)", e.Name())
			}
		}
		if len(libs) > 0 {
			t.Errorf("%s: links %v", e.Name(), libs)
		}
		f.Close()
	}
}
