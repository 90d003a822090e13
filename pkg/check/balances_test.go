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
	m := &balancesModel{r: rand.New(rand.NewPCG(13, 13)), want: map[uint64]balance{}}
	most := 0
	for op := 0; op < 200000; op++ {
		k := m.randomMove(op)
		m.checkKey(t, op, k)
		most = max(most, len(m.want))
		if op == 100000 && len(m.pending) < 10000 {
			t.Fatalf("%d names pending at the peak: the test crowds nothing", len(m.pending))
		}
	}
	if most < 2000 {
		t.Fatalf("at most %d balances: the test crowds nothing", most)
	}
	for k, b := range m.want {
		if !m.tab.has(k) || m.tab.get(k) != b {
			t.Fatalf("key %d: %+v, map %+v", k, m.tab.get(k), b)
		}
	}
	for _, nm := range m.pending {
		m.move(nm.k, nm.mark, -1)
	}
	if m.tab.len() != 0 || len(m.want) != 0 {
		t.Fatalf("all taken away: %d left, map %d", m.tab.len(), len(m.want))
	}
}

// balancesModel moves names in a balances table and, alike, in a Go map
// (want) that the table must agree with.
type balancesModel struct {
	r       *rand.Rand
	tab     balances
	want    map[uint64]balance
	pending []balanceName // names added and not yet taken away
}

type balanceName struct{ k, mark uint64 }

// key draws a key that crowds the table: 0, one far apart, or one of a
// small range.
func (m *balancesModel) key() uint64 {
	switch m.r.IntN(10) {
	case 0:
		return 0
	case 1:
		return m.r.Uint64()
	default:
		return 256 + m.r.Uint64N(3000)
	}
}

// move adds (n > 0) or takes away a name of key k and mark in both.
func (m *balancesModel) move(k, mark uint64, n int64) {
	m.tab.add(k, mark, n)
	b := m.want[k]
	b.n += n
	if n > 0 {
		b.h += mark
	} else {
		b.h -= mark
	}
	if b.zero() {
		delete(m.want, k)
	} else {
		m.want[k] = b
	}
}

// randomMove, the op-th, adds a new name or takes a pending one away, and
// returns its key.
func (m *balancesModel) randomMove(op int) uint64 {
	var nm balanceName
	grow := 6 // in 10: the table fills in the first half, empties in the second
	if op >= 100000 {
		grow = 4
	}
	if len(m.pending) == 0 || m.r.IntN(10) < grow {
		nm = balanceName{m.key(), m.r.Uint64N(4)} // mark 0 too: the count alone must balance
		m.pending = append(m.pending, nm)
		m.move(nm.k, nm.mark, +1)
	} else {
		i := m.r.IntN(len(m.pending))
		nm = m.pending[i]
		m.pending[i] = m.pending[len(m.pending)-1]
		m.pending = m.pending[:len(m.pending)-1]
		m.move(nm.k, nm.mark, -1)
	}
	return nm.k
}

// checkKey fails the test unless the table agrees with the map on key k
// and on the number of balances.
func (m *balancesModel) checkKey(t *testing.T, op int, k uint64) {
	t.Helper()
	if _, ok := m.want[k]; m.tab.has(k) != ok || m.tab.len() != len(m.want) {
		t.Fatalf("op %d key %d: has %v, map %v; len %d, map %d", op, k, m.tab.has(k), ok, m.tab.len(), len(m.want))
	}
	if m.tab.get(k) != m.want[k] {
		t.Fatalf("op %d key %d: %+v, map %+v", op, k, m.tab.get(k), m.want[k])
	}
}
