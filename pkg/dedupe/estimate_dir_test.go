package dedupe

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestEstimateHostDir: AddDir on the known tree written to a host folder
// (small files read and hashed by the workers, the 1.5 MiB one through
// Add) gives exactly what AddFS gives, every row including cdc.
func TestEstimateHostDir(t *testing.T) {
	m, _, _ := knownTree()
	dir := t.TempDir()
	for p, f := range m {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a/f1", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	o := EstimateOptions{Blocks: []uint64{4 << 10, 128 << 10, 1 << 20}, CDC: 64 << 10}
	results := make([]*Estimate, 2)
	for i := range results {
		e, err := NewEstimator(o)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			err = e.AddFS(m, ".")
		} else {
			err = e.AddDir(dir)
		}
		if err != nil {
			t.Fatal(err)
		}
		if results[i], err = e.Result(); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(results[0], results[1]) {
		t.Fatalf("AddDir %+v\nAddFS  %+v", results[1], results[0])
	}
	if err := os.Chmod(filepath.Join(dir, "b/tail"), 0); err == nil && os.Getuid() != 0 {
		e, _ := NewEstimator(o)
		if e.AddDir(dir) == nil {
			t.Fatal("an unreadable file went unreported")
		}
	}
}
