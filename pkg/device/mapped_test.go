package device

import (
	"path/filepath"
	"testing"
)

// TestMapped: an image file's data counts, its holes and punched ranges
// do not, also through a counting wrapper; a window in a hole is 0.
func TestMapped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.img")
	d, err := Open(path, OpenOptions{Mode: ReadWrite, Create: true, CreateSize: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, off := range []int64{1 << 20, 8 << 20} {
		if _, err := d.WriteAt(pattern(2<<20, 1), off); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Discard(8<<20, 1<<20); err != nil {
		t.Fatal(err)
	}
	c := NewCounting(d)
	for _, tc := range []struct{ off, n, want int64 }{
		{0, 64 << 20, 3 << 20},
		{2 << 20, 8 << 20, 2 << 20}, // last MiB of the first write, the second MiB of the other
		{32 << 20, 1 << 20, 0},
	} {
		got, ok, err := MappedOf(c, tc.off, tc.n)
		if err != nil || !ok || got != tc.want {
			t.Errorf("MappedOf(%d, %d) = %d, %v, %v; want %d", tc.off, tc.n, got, ok, err, tc.want)
		}
	}
	if _, ok, _ := MappedOf(NewMemDevice("mem", 1<<20), 0, 1<<20); ok {
		t.Error("a memory device claims to know what it maps")
	}
}
