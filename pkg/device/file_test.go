package device

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func allocated(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Blocks * 512
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

func TestFileSparse(t *testing.T) {
	const size int64 = 1 << 40
	const off int64 = 512 << 30
	path := filepath.Join(t.TempDir(), "big.img")
	d, err := Open(path, OpenOptions{Mode: ReadWrite, Create: true, CreateSize: size})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if got := d.Size(); got != size {
		t.Fatalf("Size = %d, want %d", got, size)
	}
	data := pattern(64<<10, 3)
	if n, err := d.WriteAt(data, off); err != nil || n != len(data) {
		t.Fatalf("WriteAt = %d, %v", n, err)
	}
	if err := d.Flush(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(data))
	if _, err := d.ReadAt(got, off); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatal("read back differs from write")
	}
	before := allocated(t, path)
	if before < int64(len(data)) || before >= 1<<20 {
		t.Fatalf("allocated %d bytes, want between %d and 1 MiB", before, len(data))
	}

	if err := d.Discard(off, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	if after := allocated(t, path); after >= before {
		t.Fatalf("discard did not punch: allocated %d -> %d", before, after)
	}
	if _, err := d.ReadAt(got, off); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, make([]byte, len(got))) {
		t.Fatal("discarded range does not read as zeros")
	}
}

func TestFileBounds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "small.img")
	d, err := Open(path, OpenOptions{Mode: ReadWrite, Create: true, CreateSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.WriteAt(pattern(4096, 1), 0); err != nil {
		t.Fatal(err)
	}

	reads := []struct {
		name    string
		off     int64
		n       int
		wantN   int
		wantErr error
	}{
		{"inside", 100, 100, 100, nil},
		{"to end", 4000, 96, 96, nil},
		{"across end", 4000, 200, 96, io.EOF},
		{"at end", 4096, 10, 0, io.EOF},
		{"past end", 1 << 20, 10, 0, io.EOF},
		{"negative", -1, 10, 0, ErrOutOfRange},
	}
	for _, tc := range reads {
		t.Run("read "+tc.name, func(t *testing.T) {
			n, err := d.ReadAt(make([]byte, tc.n), tc.off)
			if n != tc.wantN || !errors.Is(err, tc.wantErr) {
				t.Fatalf("ReadAt = %d, %v; want %d, %v", n, err, tc.wantN, tc.wantErr)
			}
		})
	}

	writes := []struct {
		name    string
		off     int64
		n       int
		wantErr error
	}{
		{"inside", 0, 4096, nil},
		{"across end", 4000, 200, ErrOutOfRange},
		{"past end", 8192, 1, ErrOutOfRange},
		{"negative", -512, 512, ErrOutOfRange},
	}
	for _, tc := range writes {
		t.Run("write "+tc.name, func(t *testing.T) {
			_, err := d.WriteAt(make([]byte, tc.n), tc.off)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("WriteAt err = %v, want %v", err, tc.wantErr)
			}
		})
	}
	if fi, _ := os.Stat(path); fi.Size() != 4096 {
		t.Fatalf("image grew to %d bytes", fi.Size())
	}
}

func TestFileReadOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ro.img")
	if err := os.WriteFile(path, pattern(8192, 9), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Open(path, OpenOptions{Mode: ReadOnly})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.WriteAt([]byte{1}, 0); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("WriteAt err = %v, want ErrReadOnly", err)
	}
	if err := d.Discard(0, 4096); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Discard err = %v, want ErrReadOnly", err)
	}
	got := make([]byte, 8192)
	if _, err := d.ReadAt(got, 0); err != nil || !bytes.Equal(got, pattern(8192, 9)) {
		t.Fatalf("ReadAt = %v, data equal %v", err, bytes.Equal(got, pattern(8192, 9)))
	}
	if p := PropsOf(d); p != (Props{}) {
		t.Fatalf("image Props = %+v, want zero", p)
	}
}
