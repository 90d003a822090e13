package volume

import (
	"errors"
	"reflect"
	"testing"

	"github.com/ddfs/ddfs/format"
)

func stripes(devs ...uint64) []format.Stripe {
	var s []format.Stripe
	for i, d := range devs {
		s = append(s, format.Stripe{DevID: d, Offset: uint64(i+1) << 30})
	}
	return s
}

// TestChunkMap pins the logical-to-physical math of every profile
// (FORMAT.md §4.4).
func TestChunkMap(t *testing.T) {
	const sl = format.DefaultStripeLen
	for _, tc := range []struct {
		name   string
		c      format.ChunkItem
		off, n uint64
		want   []Segment
	}{
		{"single", format.ChunkItem{Length: 1 << 20, Profile: format.ProfileSingle, StripeLen: sl, SubStripes: 1, Stripes: stripes(1)}, 4096, 8192,
			[]Segment{{0, 8192, []Target{{1, 1<<30 + 4096}}}}},
		{"raid1", format.ChunkItem{Length: 1 << 20, Profile: format.ProfileRaid1, StripeLen: sl, SubStripes: 1, Stripes: stripes(1, 2)}, 100, 10,
			[]Segment{{0, 10, []Target{{1, 1<<30 + 100}, {2, 2<<30 + 100}}}}},
		// raid0 on 2 devices: stripe 0 on dev 1, stripe 1 on dev 2, stripe 2 on dev 1 row 1.
		{"raid0 crossing", format.ChunkItem{Length: 4 * sl, Profile: format.ProfileRaid0, StripeLen: sl, SubStripes: 1, Stripes: stripes(1, 2)}, sl - 10, sl + 20,
			[]Segment{{0, 10, []Target{{1, 1<<30 + sl - 10}}}, {10, sl, []Target{{2, 2 << 30}}}, {10 + sl, 10, []Target{{1, 1<<30 + sl}}}}},
		// raid10 on 4 devices: data stripe 1 is the mirror pair (3, 4).
		{"raid10", format.ChunkItem{Length: 4 * sl, Profile: format.ProfileRaid10, StripeLen: sl, SubStripes: 2, Stripes: stripes(1, 2, 3, 4)}, sl + 5, 5,
			[]Segment{{0, 5, []Target{{3, 3<<30 + 5}, {4, 4<<30 + 5}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Chunk{Logical: 1 << 20, ChunkItem: &tc.c}
			got, err := c.Map(tc.off, tc.n)
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, %v\nwant %+v", got, err, tc.want)
			}
		})
	}
	c := &Chunk{Logical: 0, ChunkItem: &format.ChunkItem{Length: 100, Profile: format.ProfileSingle, StripeLen: sl, SubStripes: 1, Stripes: stripes(1)}}
	if _, err := c.Map(90, 20); err == nil {
		t.Fatal("a range past the chunk mapped")
	}
}

func TestChunkMapOverlap(t *testing.T) {
	var m ChunkMap
	item := &format.ChunkItem{Length: 1 << 20, Type: format.ChunkData, Profile: format.ProfileSingle, StripeLen: format.DefaultStripeLen, SubStripes: 1, Stripes: stripes(1)}
	if err := m.Add(1<<20, item); err != nil {
		t.Fatal(err)
	}
	if err := m.Add(1<<20+4096, item); !errors.Is(err, format.ErrCorrupt) {
		t.Fatalf("overlap: %v", err)
	}
	if c, ok := m.Lookup(2<<20 - 1); !ok || c.Logical != 1<<20 {
		t.Fatal("lookup of the last byte")
	}
	if _, ok := m.Lookup(2 << 20); ok {
		t.Fatal("lookup past the end")
	}
}
