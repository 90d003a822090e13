package alloc

import (
	"reflect"
	"testing"

	"github.com/ddfs/ddfs/format"
)

// TestPlaceRestripeExact pins where each new stripe goes, written out by
// hand from the rules in PlaceRestripe's and byFree's comments: the
// preferred device first, then rank, then the largest hole, then devid;
// within a device the lowest hole that fits (the reserved ranges at 0,
// 64 MiB and 256 GiB split the holes); a stripe that ends exactly at the
// device's end stays.
func TestPlaceRestripeExact(t *testing.T) {
	const m = 1 << 20
	st := func(id, off uint64) format.Stripe { return format.Stripe{DevID: id, Offset: off} }
	single := func(l uint64, s ...format.Stripe) *format.ChunkItem {
		return &format.ChunkItem{Length: l, Profile: format.ProfileSingle, Stripes: s}
	}
	raid1 := &format.ChunkItem{Length: 32 * m, Profile: format.ProfileRaid1, Stripes: []format.Stripe{st(1, 2*m), st(2, 2*m)}}
	raid0 := &format.ChunkItem{Length: 192 * m, Profile: format.ProfileRaid0, StripeLen: 65536, Stripes: []format.Stripe{st(1, 2*m), st(2, 2*m), st(3, 2*m)}}
	on1 := space(1, 1024*m, Range{2 * m, 32 * m})
	for _, c := range []struct {
		name string
		r    Restripe
		devs []DeviceSpace
		want []format.Stripe
	}{
		{"largest hole wins", Restripe{Chunk: single(32*m, st(1, 2*m)), Profile: format.ProfileRaid1},
			[]DeviceSpace{on1, space(2, 512*m), space(3, 1024*m)}, []format.Stripe{st(1, 2*m), st(3, 1*m)}},
		{"equal holes: lower devid", Restripe{Chunk: single(32*m, st(1, 2*m)), Profile: format.ProfileRaid1},
			[]DeviceSpace{on1, space(3, 1024*m), space(2, 1024*m)}, []format.Stripe{st(1, 2*m), st(2, 1*m)}},
		{"preferred device first", Restripe{Chunk: single(32*m, st(1, 2*m)), Profile: format.ProfileRaid1, Prefer: 2},
			[]DeviceSpace{on1, space(2, 512*m), space(3, 1024*m)}, []format.Stripe{st(1, 2*m), st(2, 1*m)}},
		{"rank before free space", Restripe{Chunk: single(32*m, st(1, 2*m)), Profile: format.ProfileRaid1, Rank: map[uint64]int{2: 0, 3: 1}},
			[]DeviceSpace{on1, space(2, 512*m), space(3, 1024*m)}, []format.Stripe{st(1, 2*m), st(2, 1*m)}},
		{"stripe ending at the device end stays", Restripe{Chunk: single(32*m, st(1, 992*m)), Profile: format.ProfileSingle},
			[]DeviceSpace{space(1, 1024*m, Range{992 * m, 32 * m})}, []format.Stripe{st(1, 992*m)}},
		{"stripe one byte past the end moves", Restripe{Chunk: single(32*m, st(1, 992*m)), Profile: format.ProfileSingle},
			[]DeviceSpace{space(1, 1024*m-1, Range{992 * m, 32 * m})}, []format.Stripe{st(1, 1*m)}},
		{"lowest fitting hole, past a too-small one", Restripe{Chunk: single(32*m, st(1, 2*m)), Profile: format.ProfileRaid1},
			[]DeviceSpace{on1, space(2, 1024*m, Range{1 * m, 8 * m}, Range{10 * m, 1 * m})}, []format.Stripe{st(1, 2*m), st(2, 11*m)}},
		{"raid1 to dup: the lower devid of a tie keeps its copy", Restripe{Chunk: raid1, Profile: format.ProfileDup},
			[]DeviceSpace{space(1, 1024*m, Range{2 * m, 32 * m}), space(2, 1024*m, Range{2 * m, 32 * m})},
			[]format.Stripe{st(1, 2*m), st(1, 64*m+64<<10)}},
		{"raid0 moves the leaving stripe to the largest hole", Restripe{Chunk: raid0, Profile: format.ProfileRaid0},
			[]DeviceSpace{space(1, 1024*m, Range{2 * m, 64 * m}), space(2, 1024*m, Range{2 * m, 64 * m}), space(4, 512*m), space(5, 1024*m)},
			[]format.Stripe{st(1, 2*m), st(2, 2*m), st(5, 64*m+64<<10)}},
		{"raid0 stripe on a shrunk device moves, not the others", Restripe{Chunk: raid0, Profile: format.ProfileRaid0},
			[]DeviceSpace{space(1, 1024*m, Range{2 * m, 64 * m}), space(2, 1024*m, Range{2 * m, 64 * m}), space(3, 60*m, Range{2 * m, 64 * m}), space(4, 1024*m)},
			[]format.Stripe{st(1, 2*m), st(2, 2*m), st(4, 64*m+64<<10)}},
	} {
		// Repeated: a choice that leaned on map order would differ between runs.
		for i := 0; i < 20; i++ {
			got, err := PlaceRestripe(c.devs, c.r)
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("%s: got %v, %v; want %v", c.name, got, err, c.want)
			}
		}
	}
}
