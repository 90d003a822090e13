package fsys

import (
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
