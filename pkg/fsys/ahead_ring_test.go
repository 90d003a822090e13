package fsys

import (
	"math/rand/v2"
	"testing"
)

// TestAheadRingModel: random gets and puts (mostly oldest first, as
// BlockAhead gives pieces back, some late) against a map of the bytes
// each live piece owns: live pieces never overlap, stay inside the
// buffer, a get of at most free() bytes always succeeds, and a get fails
// only when no hole of that size lies where the ring may hand out next.
func TestAheadRingModel(t *testing.T) {
	const size = 1000
	rng := rand.New(rand.NewPCG(7, 9))
	r := newAheadRing(size)
	var live []*ringPiece
	owner := make([]*ringPiece, size)
	gets := 0
	for step := 0; step < 200000; step++ {
		if len(live) > 0 && rng.IntN(3) == 0 {
			i := 0
			if rng.IntN(8) == 0 {
				i = rng.IntN(len(live)) // late
			}
			p := live[i]
			for k := p.start; k < p.end; k++ {
				owner[k] = nil
			}
			live = append(live[:i], live[i+1:]...)
			r.put(p)
			continue
		}
		n := 1 + rng.IntN(size/3)
		if rng.IntN(20) == 0 {
			n = 1 + rng.IntN(size)
		}
		fits := n <= r.free()
		p, b := r.get(n)
		if p == nil {
			if fits {
				t.Fatalf("step %d: get(%d) failed with free() %d", step, n, r.free())
			}
			continue
		}
		gets++
		if !fits || len(b) != n || cap(b) != n || p.start < 0 || p.end > size || p.end-p.start != n {
			t.Fatalf("step %d: get(%d) = [%d,%d) len %d cap %d, free() said %v", step, n, p.start, p.end, len(b), cap(b), fits)
		}
		for k := p.start; k < p.end; k++ {
			if owner[k] != nil {
				t.Fatalf("step %d: [%d,%d) overlaps live [%d,%d)", step, p.start, p.end, owner[k].start, owner[k].end)
			}
			owner[k] = p
		}
		live = append(live, p)
	}
	for _, p := range live {
		r.put(p)
	}
	if p, _ := r.get(size); p == nil || gets < 50000 {
		t.Fatalf("after all back: whole buffer %v; %d gets", p != nil, gets)
	}
}
