package volume

import (
	"errors"
	"testing"

	"github.com/ddfs/ddfs/format"
)

// TestChunkMapAddBounds: chunks that touch are fine, one byte of overlap
// on either side is corruption, the same chunk twice is one chunk, and the
// same start with another length is an overlap.
func TestChunkMapAddBounds(t *testing.T) {
	item := func(length uint64) *format.ChunkItem {
		return &format.ChunkItem{Length: length, Type: format.ChunkData, Profile: format.ProfileSingle, StripeLen: format.DefaultStripeLen, SubStripes: 1, Stripes: stripes(1)}
	}
	var m ChunkMap
	for _, l := range []uint64{4 << 20, 2 << 20, 6 << 20} { // touching, added out of order
		if err := m.Add(l, item(2<<20)); err != nil {
			t.Fatalf("chunk at %d MiB: %v", l>>20, err)
		}
	}
	if err := m.Add(4<<20, item(2<<20)); err != nil || len(m.All()) != 3 {
		t.Fatalf("the same chunk again: %v, %d chunks", err, len(m.All()))
	}
	for _, c := range []struct{ logical, length uint64 }{
		{4 << 20, 1 << 20},      // same start, other length
		{8<<20 - 1, 1 << 20},    // one byte into the last chunk
		{1 << 20, 1<<20 + 1},    // one byte into the first from below
		{3<<20 + 4096, 1 << 20}, // inside
		{5 << 20, 4096},         // inside another
	} {
		if err := m.Add(c.logical, item(c.length)); !errors.Is(err, format.ErrCorrupt) {
			t.Fatalf("[%d,+%d): %v, want ErrCorrupt", c.logical, c.length, err)
		}
	}
	if err := m.Add(8<<20, item(1<<20)); err != nil || m.End() != 9<<20 {
		t.Fatalf("touching the end: %v, end %d", err, m.End())
	}
	if err := m.Add(1<<20, item(1<<20)); err != nil || m.All()[0].Logical != 1<<20 {
		t.Fatalf("touching the start: %v", err)
	}
}

// TestMapBounds: a range that ends at the chunk's end maps, one byte more
// does not, and a striped chunk's last byte maps to its last stripe.
func TestMapBounds(t *testing.T) {
	const sl = format.DefaultStripeLen
	c := &Chunk{Logical: 0, ChunkItem: &format.ChunkItem{Length: 4 * sl, Profile: format.ProfileRaid0, StripeLen: sl, SubStripes: 1, Stripes: stripes(1, 2)}}
	if segs, err := c.Map(4*sl-1, 1); err != nil || len(segs) != 1 || segs[0].Targets[0] != (Target{2, 2<<30 + sl + sl - 1}) {
		t.Fatalf("last byte: %+v %v", segs, err)
	}
	if _, err := c.Map(0, 4*sl); err != nil {
		t.Fatalf("whole chunk: %v", err)
	}
	if _, err := c.Map(4*sl, 0); err != nil {
		t.Fatalf("empty range at the end: %v", err)
	}
	for _, r := range [][2]uint64{{0, 4*sl + 1}, {4*sl + 1, 0}, {1, 4 * sl}} {
		if _, err := c.Map(r[0], r[1]); err == nil {
			t.Fatalf("[%d,+%d) of a %d-byte chunk mapped", r[0], r[1], 4*sl)
		}
	}
}
