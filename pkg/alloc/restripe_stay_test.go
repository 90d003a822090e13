package alloc

import (
	"errors"
	"reflect"
	"testing"

	"github.com/ddfs/ddfs/format"
)

// TestPlaceRestripeStay: a replace on a set that lacks other members too
// moves only the leaving device's stripe onto the new one; a stripe on a
// device in Stay (missing, absent from devs) keeps its place, and without
// Stay the chunk cannot be placed at its profile (issue 36).
func TestPlaceRestripeStay(t *testing.T) {
	const m = 1 << 20
	st := func(id, off uint64) format.Stripe { return format.Stripe{DevID: id, Offset: off} }
	c3 := &format.ChunkItem{Length: 32 * m, Profile: format.ProfileRaid1C3, Stripes: []format.Stripe{st(1, 2*m), st(2, 2*m), st(3, 2*m)}}
	r10 := &format.ChunkItem{Length: 128 * m, Profile: format.ProfileRaid10, StripeLen: 65536, SubStripes: 2,
		Stripes: []format.Stripe{st(1, 2*m), st(2, 2*m), st(3, 2*m), st(4, 2*m)}}
	// Device 2 leaves for device 5; device 3 is missing. The raid10
	// stripe (64 MiB) does not fit below the superblock copy at 64 MiB.
	devs := func(ids ...uint64) []DeviceSpace {
		var out []DeviceSpace
		for _, id := range ids {
			out = append(out, space(id, 1024*m, Range{2 * m, 64 * m}))
		}
		return append(out, space(5, 1024*m))
	}
	stay := map[uint64]bool{3: true}
	for _, c := range []struct {
		name string
		r    Restripe
		devs []DeviceSpace
		want []format.Stripe
	}{
		{"raid1c3 keeps the missing copy", Restripe{Chunk: c3, Profile: format.ProfileRaid1C3, Prefer: 5, Stay: stay},
			devs(1), []format.Stripe{st(1, 2*m), st(3, 2*m), st(5, 1*m)}},
		{"raid10 keeps the missing member", Restripe{Chunk: r10, Profile: format.ProfileRaid10, Prefer: 5, Stay: stay},
			devs(1, 4), []format.Stripe{st(1, 2*m), st(5, 64*m+64<<10), st(3, 2*m), st(4, 2*m)}},
	} {
		for i := 0; i < 20; i++ {
			got, err := PlaceRestripe(c.devs, c.r)
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("%s: got %v, %v; want %v", c.name, got, err, c.want)
			}
		}
	}
	r := Restripe{Chunk: c3, Profile: format.ProfileRaid1C3, Prefer: 5}
	if got, err := PlaceRestripe(devs(1), r); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("raid1c3 on two devices without Stay: got %v, %v; want ErrNoSpace", got, err)
	}
}
