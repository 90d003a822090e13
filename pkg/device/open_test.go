package device

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSplitPartSpec(t *testing.T) {
	tests := []struct {
		spec string
		base string
		n    int
		ok   bool
	}{
		{"disk.img@2", "disk.img", 2, true},
		{"/a/b@c.img@10", "/a/b@c.img", 10, true},
		{"disk.img@0", "", 0, false},
		{"disk.img@", "", 0, false},
		{"@3", "", 0, false},
		{"disk.img@-1", "", 0, false},
		{"disk.img@2x", "", 0, false},
		{"disk.img", "", 0, false},
		{"disk.img@99999999999999999999", "", 0, false},
	}
	for _, tc := range tests {
		base, n, ok := splitPartSpec(tc.spec)
		if base != tc.base || n != tc.n || ok != tc.ok {
			t.Errorf("splitPartSpec(%q) = %q, %d, %v; want %q, %d, %v", tc.spec, base, n, ok, tc.base, tc.n, tc.ok)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.img")
	tests := []struct {
		name    string
		spec    string
		opt     OpenOptions
		wantIs  error
		wantMsg string
	}{
		{"missing", missing, OpenOptions{Mode: ReadWrite}, fs.ErrNotExist, "open " + missing},
		{"create read-only", missing, OpenOptions{Create: true, CreateSize: 4096}, nil, "needs ReadWrite"},
		{"create no size", missing, OpenOptions{Mode: ReadWrite, Create: true}, nil, "must be positive"},
		{"directory", dir, OpenOptions{}, nil, "not a regular file or block device"},
		{"bad mode", missing, OpenOptions{Mode: 7}, nil, "invalid mode"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Open(tc.spec, tc.opt)
			if err == nil {
				d.Close()
				t.Fatal("Open succeeded")
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("err = %v, want %v", err, tc.wantIs)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("err = %q, want it to contain %q", err, tc.wantMsg)
			}
		})
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("failed opens left %s behind: %v", missing, err)
	}
}

func TestOpenCreateExisting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "img")
	if err := os.WriteFile(path, pattern(1024, 5), 0o644); err != nil {
		t.Fatal(err)
	}
	// An existing file is opened as it is, whatever CreateSize says.
	d, err := Open(path, OpenOptions{Mode: ReadWrite, Create: true, CreateSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Size() != 1024 {
		t.Fatalf("Size = %d, want 1024", d.Size())
	}
	if d.Name() != path {
		t.Fatalf("Name = %q, want %q", d.Name(), path)
	}
}

// A file literally named "x@2" wins over partition 2 of "x".
func TestOpenLiteralAt(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "x")
	for _, p := range []string{base, base + "@2"} {
		if err := os.WriteFile(p, make([]byte, 4096), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, err := Open(base+"@2", OpenOptions{Mode: ReadOnly})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, ok := d.(*fileDevice); !ok || d.Size() != 4096 {
		t.Fatalf("got %T of size %d, want the plain file", d, d.Size())
	}
}

func TestIsBlockDevice(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if IsBlockDevice(path) || IsBlockDevice(filepath.Join(path, "nope")) {
		t.Fatal("regular file or missing path reported as block device")
	}
	if IsBlockDevice("/dev/null") {
		t.Fatal("/dev/null is a character device")
	}
}

func TestDiscardChunks(t *testing.T) {
	tests := []struct {
		name      string
		off, n    int64
		gran, max int64
		want      [][2]int64
	}{
		{"aligned", 0, 8192, 4096, 1 << 30, [][2]int64{{0, 8192}}},
		{"shrunk inward", 100, 10000, 4096, 1 << 30, [][2]int64{{4096, 4096}}},
		{"smaller than granule", 100, 4000, 4096, 1 << 30, nil},
		{"split by max", 0, 10 << 10, 1024, 4 << 10, [][2]int64{{0, 4096}, {4096, 4096}, {8192, 2048}}},
		{"max not granule multiple", 0, 12 << 10, 4096, 6 << 10, [][2]int64{{0, 4096}, {4096, 4096}, {8192, 4096}}},
		{"zero granularity means 512", 1, 1536, 0, 1 << 30, [][2]int64{{512, 1024}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := discardChunks(tc.off, tc.n, tc.gran, tc.max)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}
