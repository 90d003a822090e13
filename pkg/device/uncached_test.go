package device

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"unsafe"
)

func TestAlignedBuf(t *testing.T) {
	for _, n := range []int{1, 4096, 5000, 1 << 20} {
		b := AlignedBuf(n)
		if len(b) != n || cap(b) != n {
			t.Errorf("AlignedBuf(%d): len %d cap %d", n, len(b), cap(b))
		}
		if a := uintptr(unsafe.Pointer(unsafe.SliceData(b))) % DirectAlign; a != 0 {
			t.Errorf("AlignedBuf(%d) is %d bytes off alignment", n, a)
		}
	}
}

// TestReadUncached: aligned reads go past the cache and return what the
// cached descriptor wrote (not yet flushed); unaligned ones, reads at the
// end and wrappers keep ReadAt's answers.
func TestReadUncached(t *testing.T) {
	const size = 64 << 10
	path := filepath.Join(t.TempDir(), "d.img")
	dev, err := Open(path, OpenOptions{Mode: ReadWrite, Create: true, CreateSize: size})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	want := make([]byte, size) // no period: a read at the wrong offset shows
	rand.NewChaCha8([32]byte{1}).Read(want)
	if _, err := dev.WriteAt(want, 0); err != nil {
		t.Fatal(err)
	}
	c := NewCounting(dev)
	cases := []struct {
		off, n, skew int
		eof          bool
	}{
		{off: 8192, n: 16384},                  // direct
		{off: 0, n: size},                      // direct, the whole device
		{off: 100, n: 4096},                    // unaligned offset
		{off: 4096, n: 1000},                   // unaligned length
		{off: 4096, n: 4096, skew: 1},          // unaligned buffer
		{off: size - 4096, n: 8192, eof: true}, // clipped at the end
	}
	for _, tc := range cases {
		buf := AlignedBuf(tc.n + tc.skew)[tc.skew:]
		before := c.Stats().ReadBytes
		n, err := ReadUncached(c, buf, int64(tc.off))
		wantN := min(tc.n, size-tc.off)
		if tc.eof != errors.Is(err, io.EOF) || (!tc.eof && err != nil) || n != wantN {
			t.Errorf("off %d n %d skew %d: got %d, %v; want %d, eof %v", tc.off, tc.n, tc.skew, n, err, wantN, tc.eof)
			continue
		}
		if !bytes.Equal(buf[:n], want[tc.off:tc.off+n]) {
			t.Errorf("off %d n %d skew %d: wrong bytes", tc.off, tc.n, tc.skew)
		}
		if got := c.Stats().ReadBytes - before; got != uint64(n) {
			t.Errorf("off %d: counted %d bytes, read %d", tc.off, got, n)
		}
	}
	fd := dev.(*fileDevice)
	if fd.direct.f == nil {
		t.Skip("this file system refuses O_DIRECT opens: only the fallback was tested")
	}
	// Only an unaligned read reaching the direct descriptor disables it.
	if fd.direct.off.Load() {
		t.Error("direct reads were turned off by a refused read")
	}
}
