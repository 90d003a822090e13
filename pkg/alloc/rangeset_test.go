package alloc

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRangeSetModel runs random adds, removes, overlap removes, contains
// and firsts on a RangeSet and on a byte map of a 512-byte space (the
// model), and compares every answer and the whole set after each step.
func TestRangeSetModel(t *testing.T) {
	const space = 512
	r := rand.New(rand.NewPCG(5, 6))
	for round := range 40 {
		s := &RangeSet{}
		var free [space]bool
		runs := func() []Range { // the model's ranges: maximal free runs
			var out []Range
			for i := 0; i < space; i++ {
				if free[i] && (i == 0 || !free[i-1]) {
					j := i
					for j < space && free[j] {
						j++
					}
					out = append(out, Range{uint64(i), uint64(j - i)})
				}
			}
			return out
		}
		allFree := func(a, n int) bool {
			for i := a; i < a+n; i++ {
				if i >= space || !free[i] {
					return false
				}
			}
			return true
		}
		anyFree := func(a, n int) bool {
			for i := a; i < min(a+n, space); i++ {
				if free[i] {
					return true
				}
			}
			return false
		}
		for step := range 600 {
			a, n := r.IntN(space), 1+r.IntN(24)
			n = min(n, space-a)
			switch r.IntN(5) {
			case 0:
				err := s.Add(uint64(a), uint64(n))
				if want := !anyFree(a, n); (err == nil) != want {
					t.Fatalf("round %d step %d: Add(%d,%d) = %v, model says ok=%v", round, step, a, n, err, want)
				}
				if err == nil {
					for i := a; i < a+n; i++ {
						free[i] = true
					}
				}
			case 1:
				err := s.Remove(uint64(a), uint64(n))
				if want := allFree(a, n); (err == nil) != want {
					t.Fatalf("round %d step %d: Remove(%d,%d) = %v, model says ok=%v", round, step, a, n, err, want)
				}
				if err == nil {
					for i := a; i < a+n; i++ {
						free[i] = false
					}
				}
			case 4:
				s.RemoveOverlap(uint64(a), uint64(n))
				for i := a; i < a+n; i++ {
					free[i] = false
				}
			case 2:
				if got, want := s.Contains(uint64(a), uint64(n)), allFree(a, n); got != want {
					t.Fatalf("round %d step %d: Contains(%d,%d) = %v, want %v", round, step, a, n, got, want)
				}
			case 3:
				align := 1 << r.IntN(4)
				hint := r.IntN(space + 8)
				want := -1
				for _, lo := range []int{hint, 0} { // at or after hint, then from the start
					for st := (lo + align - 1) &^ (align - 1); st+n <= space && want < 0; st += align {
						if allFree(st, n) {
							want = st
						}
					}
					if want >= 0 {
						break
					}
				}
				got, ok := s.First(uint64(n), uint64(align), uint64(hint))
				if ok != (want >= 0) || ok && int(got) != want {
					t.Fatalf("round %d step %d: First(%d,%d,%d) = %d %v, want %d", round, step, n, align, hint, got, ok, want)
				}
				if ok {
					for i := want; i < want+n; i++ {
						free[i] = false
					}
				}
			}
			total := 0
			for _, f := range free {
				if f {
					total++
				}
			}
			if got := s.Ranges(); !slices.Equal(got, runs()) || s.Total() != uint64(total) || s.Len() != len(got) {
				t.Fatalf("round %d step %d: set %v total %d, model %v total %d", round, step, got, s.Total(), runs(), total)
			}
		}
	}
}
