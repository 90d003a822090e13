package volume

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
)

// The model below is written from FORMAT.md §4.4 "Parity profiles" alone,
// by another route than parity.go: it lays each row out by rotating a
// list of roles, and computes P and Q with a shift-and-add GF(2^8)
// multiply, not the table-driven SIMD code.

const (
	tSL     = 4096
	tRows   = 24
	tOffset = 1 << 20 // every stripe starts here on its device
)

// modelRole is what stripe s holds in row: "P", "Q" or data index.
func modelRole(n, k int, row int, s int) (role string, i int) {
	roles := make([]string, n) // row 0: data 0.., then P (last), Q wraps to 0
	pPos := (n - 1 - row%n + n) % n
	roles[pPos] = "P"
	if k == 2 {
		roles[(pPos+1)%n] = "Q"
	}
	next := 0
	for j := 1; j <= n; j++ { // walk on from P, giving data indexes in order
		pos := (pPos + j) % n
		if roles[pos] == "" {
			roles[pos] = fmt.Sprint(next)
			next++
		}
	}
	if roles[s] == "P" || roles[s] == "Q" {
		return roles[s], -1
	}
	fmt.Sscan(roles[s], &i)
	return "D", i
}

func gfMul(a, b byte) byte {
	var p byte
	for b != 0 {
		if b&1 != 0 {
			p ^= a
		}
		hi := a & 0x80
		a <<= 1
		if hi != 0 {
			a ^= 0x1d
		}
		b >>= 1
	}
	return p
}

func gfPow2(i int) byte {
	g := byte(1)
	for range i {
		g = gfMul(g, 2)
	}
	return g
}

type paritySet struct {
	v    *Volume
	mems []*device.MemDevice
	item *format.ChunkItem
	n, k int
}

func newParitySet(t *testing.T, n int, p format.Profile) *paritySet {
	t.Helper()
	pi, _ := p.Info()
	ps := &paritySet{n: n, k: pi.Parity}
	var devs []*Dev
	item := &format.ChunkItem{Type: format.ChunkData, Profile: p, StripeLen: tSL, SubStripes: 1}
	d := n - pi.Parity
	item.Length = uint64(tRows * d * tSL)
	for i := range n {
		m := device.NewMemDevice(fmt.Sprintf("d%d", i), tOffset+tRows*tSL+tSL)
		ps.mems = append(ps.mems, m)
		devs = append(devs, &Dev{ID: uint64(i + 1), Dev: m})
		item.Stripes = append(item.Stripes, format.Stripe{DevID: uint64(i + 1), Offset: tOffset})
	}
	if err := item.Validate(); err != nil {
		t.Fatal(err)
	}
	ps.item = item
	ps.v = New(devs, nil, true)
	if err := ps.v.AddChunk(1<<30, item); err != nil {
		t.Fatal(err)
	}
	return ps
}

// check compares every device byte of every row with the model built from
// want (the chunk's logical bytes).
func (ps *paritySet) check(t *testing.T, want []byte) {
	t.Helper()
	d := ps.n - ps.k
	for row := range tRows {
		strips := make([][]byte, d)
		for i := range d {
			strips[i] = want[(row*d+i)*tSL : (row*d+i+1)*tSL]
		}
		for s := range ps.n {
			got := make([]byte, tSL)
			if _, err := ps.mems[s].ReadAt(got, int64(tOffset+row*tSL)); err != nil {
				t.Fatal(err)
			}
			role, i := modelRole(ps.n, ps.k, row, s)
			exp := make([]byte, tSL)
			switch role {
			case "D":
				copy(exp, strips[i])
			case "P", "Q":
				for j := range d {
					g := byte(1)
					if role == "Q" {
						g = gfPow2(j)
					}
					for x := range exp {
						exp[x] ^= gfMul(strips[j][x], g)
					}
				}
			}
			if !bytes.Equal(got, exp) {
				t.Fatalf("n=%d k=%d row %d stripe %d (%s %d) differs from the model", ps.n, ps.k, row, s, role, i)
			}
		}
	}
}

// Random writes of random lengths land, with their parity, where the model
// says, on raid5 and raid6 of every width from the minimum to 6.
func TestParityLayoutModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, p := range []format.Profile{format.ProfileRaid5, format.ProfileRaid6} {
		pi, _ := p.Info()
		// 12 stripes: raid6's Q multipliers pass 0x80 (g^7), where the
		// field's polynomial starts to count.
		for _, n := range []int{pi.MinDevices, 3, 4, 5, 6, 12} {
			ps := newParitySet(t, n, p)
			want := make([]byte, ps.item.Length)
			for range 40 {
				off := rng.IntN(len(want))
				ln := 1 + rng.IntN(min(len(want)-off, 3*tSL*(n-pi.Parity)))
				if rng.IntN(4) == 0 { // whole rows too
					rl := tSL * (n - pi.Parity)
					off = off / rl * rl
					ln = min(rl*(1+rng.IntN(3)), len(want)-off)
				}
				b := make([]byte, ln)
				for i := range b {
					b[i] = byte(rng.Uint32())
				}
				copy(want[off:], b)
				if err := ps.v.Write(1<<30+uint64(off), b); err != nil {
					t.Fatal(err)
				}
			}
			ps.check(t, want)
			// Every copy reads back the same bytes.
			for m := 0; m < ps.v.Copies(1<<30); m++ {
				got := make([]byte, len(want))
				if err := ps.v.ReadCopy(1<<30, got, m); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("%v n=%d: copy %d differs", p, n, m)
				}
			}
		}
	}
}

// Every set of lost devices the profile survives (one for raid5, any two
// for raid6) on 3..6 devices reads back everything, from copy 0; one more
// loss is an error, never wrong bytes.
func TestParityDegradedReads(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, p := range []format.Profile{format.ProfileRaid5, format.ProfileRaid6} {
		pi, _ := p.Info()
		for n := 3; n <= 6; n++ {
			ps := newParitySet(t, n, p)
			want := make([]byte, ps.item.Length)
			for i := range want {
				want[i] = byte(rng.Uint32())
			}
			if err := ps.v.Write(1<<30, want); err != nil {
				t.Fatal(err)
			}
			for mask := 1; mask < 1<<n; mask++ {
				lost := bitsSet(mask)
				var devs []*Dev
				for i := range n {
					if mask&(1<<i) == 0 {
						devs = append(devs, &Dev{ID: uint64(i + 1), Dev: ps.mems[i]})
					}
				}
				v := New(devs, nil, false)
				if err := v.AddChunk(1<<30, ps.item); err != nil {
					t.Fatal(err)
				}
				got := make([]byte, len(want))
				err := v.ReadCopy(1<<30, got, 0)
				c, _ := v.Chunks.Lookup(1 << 30)
				gone := func(id uint64) bool { return mask&(1<<(id-1)) != 0 }
				switch {
				case lost <= pi.Parity && (err != nil || !bytes.Equal(got, want)):
					t.Fatalf("%v n=%d lost %b: err %v, equal %v", p, n, mask, err, bytes.Equal(got, want))
				case lost > pi.Parity && err == nil:
					t.Fatalf("%v n=%d lost %b: read served with %d devices gone", p, n, mask, lost)
				case lost > pi.Parity && !errors.Is(err, ErrMissingDevice):
					t.Fatalf("%v n=%d lost %b: %v, want ErrMissingDevice", p, n, mask, err)
				case c.LostWithout(gone) != (lost > pi.Parity):
					t.Fatalf("%v n=%d lost %b: LostWithout %v", p, n, mask, c.LostWithout(gone))
				}
			}
		}
	}
}

func bitsSet(m int) int {
	n := 0
	for ; m != 0; m &= m - 1 {
		n++
	}
	return n
}

// A strip that reads back wrong is fixed by the copies that rebuild it
// (raid6: from P and from Q); a parity copy is never written on its own,
// and CheckRowParity finds and rewrites a wrong P.
func TestParityCopies(t *testing.T) {
	ps := newParitySet(t, 5, format.ProfileRaid6)
	want := bytes.Repeat([]byte("0123456789abcdef"), int(ps.item.Length)/16)
	if err := ps.v.Write(1<<30, want); err != nil {
		t.Fatal(err)
	}
	// Damage data strip 1 of row 0 (stripe index per the model).
	var s int
	for s = range ps.n {
		if role, i := modelRole(ps.n, ps.k, 0, s); role == "D" && i == 1 {
			break
		}
	}
	if _, err := ps.mems[s].WriteAt(bytes.Repeat([]byte{0xee}, 100), tOffset+50); err != nil {
		t.Fatal(err)
	}
	at := uint64(1<<30 + tSL + 50)
	for m, good := range []bool{false, true, true} {
		got := make([]byte, 100)
		if err := ps.v.ReadCopy(at, got, m); err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(got, want[tSL+50:tSL+150]) != good {
			t.Fatalf("copy %d: good %v, want %v", m, !good, good)
		}
	}
	if err := ps.v.WriteCopy(at, want[tSL+50:tSL+150], 0); err != nil {
		t.Fatal(err)
	}
	ps.check(t, want)
	// Now damage P of row 0: copy 1 differs, copies 0 and 2 agree, and
	// WriteCopy of copy 1 rewrites P.
	for s = range ps.n {
		if role, _ := modelRole(ps.n, ps.k, 0, s); role == "P" {
			break
		}
	}
	if _, err := ps.mems[s].WriteAt([]byte{1, 2, 3}, tOffset+10); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 16)
	if err := ps.v.ReadCopy(1<<30, got, 1); err != nil || bytes.Equal(got, want[:16]) {
		t.Fatalf("copy 1 over a damaged P: err %v, equal %v", err, bytes.Equal(got, want[:16]))
	}
	if err := ps.v.ReadCopy(1<<30, got, 2); err != nil || !bytes.Equal(got, want[:16]) {
		t.Fatalf("copy 2 (from Q) over a damaged P: err %v, equal %v", err, bytes.Equal(got, want[:16]))
	}
	if err := ps.v.WriteCopy(1<<30, want[:16], 1); !errors.Is(err, ErrParityCopy) {
		t.Fatalf("a parity copy was written on its own: %v", err)
	}
	c, _ := ps.v.Chunks.Lookup(1 << 30)
	if bad, err := ps.v.CheckRowParity(c, 0, true); err != nil || len(bad) != 1 || bad[0] != 0 {
		t.Fatalf("row 0 parity: bad %v, %v; want P alone", bad, err)
	}
	ps.check(t, want)
	if bad, err := ps.v.CheckRowParity(c, 0, false); err != nil || len(bad) != 0 {
		t.Fatalf("row 0 after the fix: bad %v, %v", bad, err)
	}
}

// Discards of a parity chunk cover whole free rows on every stripe.
func TestParityDiscardMap(t *testing.T) {
	ps := newParitySet(t, 4, format.ProfileRaid5) // D = 3, rows of 12 KiB
	c, _ := ps.v.Chunks.Lookup(1 << 30)
	rl := uint64(3 * tSL)
	for _, tc := range []struct{ off, n, first, rows uint64 }{
		{0, rl - 1, 0, 0},                         // less than a row
		{1, 2 * rl, 1, 1},                         // row 1 only is whole
		{rl, 2 * rl, 1, 2},                        // rows 1 and 2
		{rl + 5, c.Length - rl - 5, 2, tRows - 2}, // to the end
	} {
		segs, err := c.DiscardMap(tc.off, tc.n)
		if err != nil {
			t.Fatal(err)
		}
		if tc.rows == 0 {
			if len(segs) != 0 {
				t.Fatalf("[%d,+%d): discards %v", tc.off, tc.n, segs)
			}
			continue
		}
		if len(segs) != ps.n {
			t.Fatalf("[%d,+%d): %d segments, want one a stripe", tc.off, tc.n, len(segs))
		}
		for _, sg := range segs {
			if sg.Targets[0].Physical != tOffset+tc.first*tSL || uint64(sg.Len) != tc.rows*tSL {
				t.Fatalf("[%d,+%d): %+v, want rows %d+%d", tc.off, tc.n, sg, tc.first, tc.rows)
			}
		}
	}
}

// AppendRows lists the rows ranges touch, ascending, each once: checked
// against the row of every byte, for ranges in ascending order of start
// that overlap, nest and abut.
func TestParityAppendRows(t *testing.T) {
	ps := newParitySet(t, 4, format.ProfileRaid5) // D = 3, rows of 12 KiB
	c, _ := ps.v.Chunks.Lookup(1 << 30)
	rl := uint64(3 * tSL)
	ranges := [][2]uint64{{0, 1}, {5, rl}, {rl + 1, 3}, {2*rl - 1, 1}, {2 * rl, 0}, {3*rl + 7, 2 * rl}, {4 * rl, 10}, {7 * rl, rl}}
	var rows []uint64
	want := map[uint64]bool{}
	for _, r := range ranges {
		rows = c.AppendRows(rows, r[0], r[1])
		for b := r[0]; b < r[0]+r[1]; b++ {
			want[b/rl] = true
		}
	}
	if len(rows) != len(want) {
		t.Fatalf("rows %v, want the %d rows of %v", rows, len(want), want)
	}
	for i, r := range rows {
		if !want[r] || (i > 0 && rows[i-1] >= r) {
			t.Fatalf("rows %v: %d not touched or out of order", rows, r)
		}
	}
}
