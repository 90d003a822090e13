package transfer

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/ddfs/ddfs/pkg/fsys"
)

// countWriter records the size of every write it gets.
type countWriter struct {
	bytes.Buffer
	writes []int
	fail   error
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.fail != nil {
		return 0, c.fail
	}
	c.writes = append(c.writes, len(p))
	return c.Buffer.Write(p)
}

// TestOutBuffer: reserved space written in place, copies, a write larger
// than the buffer passing through, and the order of it all kept; writes
// reach w only as full buffers or big pieces.
func TestOutBuffer(t *testing.T) {
	var w countWriter
	b := newOutBuffer(&w, 16)
	var want bytes.Buffer
	put := func(p []byte) {
		t.Helper()
		want.Write(p)
		if n, err := b.Write(p); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	put([]byte("head"))
	p := b.reserve(10)
	copy(p, "0123456789")
	put(p)
	if b.n != 14 || w.Len() != 0 {
		t.Fatalf("after an in-place write: fill %d, %d bytes out", b.n, w.Len())
	}
	p = b.reserve(8) // does not fit: the 14 bytes go out first
	if len(w.writes) != 1 || w.writes[0] != 14 {
		t.Fatalf("reserve past the end: writes %v, want [14]", w.writes)
	}
	copy(p, "abcdefgh")
	put(p)
	put(bytes.Repeat([]byte("Z"), 40)) // bigger than the buffer
	put([]byte("tail"))
	if b.reserve(17) != nil {
		t.Fatal("reserve of more than the buffer")
	}
	if err := b.flush(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(w.Bytes(), want.Bytes()) {
		t.Fatalf("stream %q, want %q", w.Bytes(), want.Bytes())
	}
	if fmt.Sprint(w.writes) != "[14 8 40 4]" {
		t.Fatalf("writes %v", w.writes)
	}
	// The first failure sticks: no more writes, no reservations.
	w.fail = errors.New("pipe closed")
	b.Write([]byte("x"))
	if err := b.flush(); !errors.Is(err, w.fail) {
		t.Fatalf("flush after a failed write: %v", err)
	}
	if _, err := b.Write([]byte("y")); !errors.Is(err, w.fail) || b.reserve(1) != nil {
		t.Fatalf("write after a failure: %v", err)
	}
}

// TestTarOutSmallFiles: files read straight into the output buffer (up to
// half of it) and through the read buffer (above) come out byte for byte,
// in order, also when the buffer fills between them.
func TestTarOutSmallFiles(t *testing.T) {
	f := newFS(t, 256<<20)
	sizes := []int{0, 1, 511, 4096, 100000, tarOutBuffer/2 - 1, tarOutBuffer / 2, tarOutBuffer/2 + 1, 300000, 3 << 20}
	data := func(i, n int) []byte {
		b := make([]byte, n)
		for j := range b {
			b[j] = byte(i*7 + j*13 + j>>9)
		}
		return b
	}
	for i, n := range sizes {
		in, err := f.Create(fmt.Sprintf("/f%02d", i), fsys.Attr{Mode: 0o644})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.WriteAt(in, data(i, n), 0); err != nil {
			t.Fatal(err)
		}
	}
	var w countWriter
	if err := TarOut(f, &w, "/"); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(w.Bytes()))
	seen := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var i int
		if _, err := fmt.Sscanf(h.Name, "f%02d", &i); err != nil {
			continue // "./"
		}
		got, err := io.ReadAll(tr)
		if err != nil || !bytes.Equal(got, data(i, sizes[i])) {
			t.Fatalf("%s: %d bytes (want %d), differ: %v", h.Name, len(got), sizes[i], err)
		}
		seen++
	}
	if seen != len(sizes) {
		t.Fatalf("%d files in the archive, want %d", seen, len(sizes))
	}
	for _, n := range w.writes[:len(w.writes)-1] {
		if n < tarOutBuffer/2 {
			t.Fatalf("a write of %d bytes before the last (writes %v)", n, w.writes)
		}
	}
}
