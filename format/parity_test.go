package format

import (
	"errors"
	"testing"
)

// The worked example of FORMAT.md §4.4 "Parity profiles", and the device
// bytes a stripe takes when the last row is partial.
func TestParityGeometry(t *testing.T) {
	// raid5 on 4 stripes, sl 16 KiB, o = 100 KiB: row 2, i 0, P 1, s 2.
	if p, s := ParityStripe(4, 2), DataStripe(4, 1, 2, 0); p != 1 || s != 2 {
		t.Fatalf("P %d, data 0 on %d; want 1 and 2", p, s)
	}
	if q := QStripe(4, 3); q != 1 { // P of row 3 is stripe 0
		t.Fatalf("Q of row 3 on %d, want 1", q)
	}
	c := parityChunk(ProfileRaid5, 5*ParityStripeLen, 1, 2, 3) // D 2: 2.5 rows
	if got := c.StripeLength(); got != 3*ParityStripeLen {
		t.Fatalf("stripe length %d, want 3 strips", got)
	}
	c = parityChunk(ProfileRaid6, 6*ParityStripeLen, 1, 2, 3, 4, 5) // D 3: 2 rows
	if got := c.StripeLength(); got != 2*ParityStripeLen {
		t.Fatalf("stripe length %d, want 2 strips", got)
	}
	if got := (&ChunkItem{Length: mib, Profile: ProfileRaid6, Stripes: make([]Stripe, 1)}).StripeLength(); got != mib {
		t.Fatalf("a chunk with too few stripes: %d (no division by zero)", got)
	}
}

func TestCheckChunkAgainst(t *testing.T) {
	sb := &Superblock{SectorSize: 4096, NodeSize: 32768, Incompat: IncompatRaid56}
	data := parityChunk(ProfileRaid5, mib, 1, 2)
	meta := parityChunk(ProfileRaid6, mib, 1, 2, 3)
	meta.Type = ChunkMetadata
	meta.StripeLen = 32768
	for _, tc := range []struct {
		name string
		c    *ChunkItem
		sb   Superblock
		bad  bool
	}{
		{"data", data, *sb, false},
		{"metadata with node-size strips", meta, *sb, false},
		{"without incompat", data, Superblock{SectorSize: 4096, NodeSize: 32768}, true},
		{"metadata strip below the node size", func() *ChunkItem { c := *meta; c.StripeLen = 16384; return &c }(), *sb, true},
		{"data strip below the sector", data, Superblock{SectorSize: 65536, NodeSize: 65536, Incompat: IncompatRaid56}, true},
		{"raid1 needs nothing", chunk(ProfileRaid1, mib, 1, 2), Superblock{}, false},
	} {
		err := CheckChunkAgainst(tc.c, &tc.sb)
		if tc.bad != (err != nil) || (err != nil && !errors.Is(err, ErrCorrupt)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
