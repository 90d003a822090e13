package fsys

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// BenchmarkReadAt4K: 4 KiB reads at random aligned offsets of a 32 MiB
// file (fio's randread on a mount, without FUSE): time and allocations
// per read.
func BenchmarkReadAt4K(b *testing.B) {
	f, _ := newTestFS(b, 256<<20, 1)
	const size = 32 << 20
	in := write(b, f, "/f", rnd(9, size))
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 4096)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		off := uint64(rng.IntN(size/4096)) * 4096
		if n, err := f.ReadAt(in, buf, off); n != len(buf) || err != nil {
			b.Fatal(n, err)
		}
	}
}

// TestReadAt4KNoAlloc: a 4K read of an uncompressed file (a FUSE mount's
// random reads) allocates nothing, and reads the file's bytes. Four
// allocations a read were a tenth of the mount server's CPU per request.
func TestReadAt4KNoAlloc(t *testing.T) {
	f, _ := newTestFS(t, 64<<20, 1)
	const size = 4 << 20
	want := rnd(9, size)
	in := write(t, f, "/f", want)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	off := uint64(0)
	allocs := testing.AllocsPerRun(200, func() {
		off = (off + 37*4096) % size
		if n, err := f.ReadAt(in, buf, off); n != len(buf) || err != nil {
			t.Fatal(n, err)
		}
		if !bytes.Equal(buf, want[off:off+4096]) {
			t.Fatalf("bytes at %d differ", off)
		}
	})
	if allocs != 0 {
		t.Fatalf("a 4K read allocates %v times", allocs)
	}
}
