package check

import (
	"math/rand/v2"
	"testing"
)

// TestBalancesAgainstMap: 200k random moves of names balances, half
// adding a name and half taking a pending one away again (so entries keep
// reaching zero and are deleted, as in a check), on keys that crowd the
// table (a small range, key 0, and keys far apart), agree with a Go map
// after every move and in the end.
func TestBalancesAgainstMap(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 13))
	var tab balances
	want := map[uint64]balance{}
	type name struct{ k, mark uint64 }
	var pending []name
	key := func() uint64 {
		switch r.IntN(10) {
		case 0:
			return 0
		case 1:
			return r.Uint64()
		default:
			return 256 + r.Uint64N(3000)
		}
	}
	move := func(k, mark uint64, n int64) {
		tab.add(k, mark, n)
		b := want[k]
		b.n += n
		if n > 0 {
			b.h += mark
		} else {
			b.h -= mark
		}
		if b.zero() {
			delete(want, k)
		} else {
			want[k] = b
		}
	}
	most := 0
	for op := 0; op < 200000; op++ {
		var nm name
		grow := 6 // in 10: the table fills in the first half, empties in the second
		if op >= 100000 {
			grow = 4
		}
		if len(pending) == 0 || r.IntN(10) < grow {
			nm = name{key(), r.Uint64N(4)} // mark 0 too: the count alone must balance
			pending = append(pending, nm)
			move(nm.k, nm.mark, +1)
		} else {
			i := r.IntN(len(pending))
			nm = pending[i]
			pending[i] = pending[len(pending)-1]
			pending = pending[:len(pending)-1]
			move(nm.k, nm.mark, -1)
		}
		if _, ok := want[nm.k]; tab.has(nm.k) != ok || tab.len() != len(want) {
			t.Fatalf("op %d key %d: has %v, map %v; len %d, map %d", op, nm.k, tab.has(nm.k), ok, tab.len(), len(want))
		}
		if tab.get(nm.k) != want[nm.k] {
			t.Fatalf("op %d key %d: %+v, map %+v", op, nm.k, tab.get(nm.k), want[nm.k])
		}
		most = max(most, len(want))
		if op == 100000 && len(pending) < 10000 {
			t.Fatalf("%d names pending at the peak: the test crowds nothing", len(pending))
		}
	}
	if most < 2000 {
		t.Fatalf("at most %d balances: the test crowds nothing", most)
	}
	for k, b := range want {
		if !tab.has(k) || tab.get(k) != b {
			t.Fatalf("key %d: %+v, map %+v", k, tab.get(k), b)
		}
	}
	for _, nm := range pending {
		move(nm.k, nm.mark, -1)
	}
	if tab.len() != 0 || len(want) != 0 {
		t.Fatalf("all taken away: %d left, map %d", tab.len(), len(want))
	}
}
