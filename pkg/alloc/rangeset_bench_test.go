package alloc

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkRangeSetFragmented: a block group's free map cut into 100,000
// one-sector holes (a file rewritten by 4K random writes, committed);
// each op takes a hole and frees another, as COW overwrites do.
func BenchmarkRangeSetFragmented(b *testing.B) {
	const n, ss = 100000, 4096
	s := &RangeSet{}
	for i := range n {
		if err := s.Add(uint64(2*i)*ss, ss); err != nil {
			b.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(1, 1))
	b.ResetTimer()
	for range b.N {
		at, ok := s.First(ss, ss, uint64(r.IntN(2*n))*ss)
		if !ok {
			b.Fatal("full")
		}
		if err := s.Add(at+ss, ss); err != nil { // the odd sector after it, used until now
			b.Fatal(err)
		}
		if err := s.Remove(at+ss, ss); err != nil {
			b.Fatal(err)
		}
		if err := s.Add(at, ss); err != nil {
			b.Fatal(err)
		}
	}
}
