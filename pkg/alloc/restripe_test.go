package alloc

import (
	"errors"
	"testing"

	"github.com/ddfs/ddfs/format"
)

func space(id uint64, size uint64, used ...Range) DeviceSpace {
	return DeviceSpace{DevID: id, Size: size, Used: used}
}

// overlaps reports whether a new stripe touches a used or reserved range.
func overlaps(devs []DeviceSpace, s format.Stripe, n uint64) bool {
	for _, d := range devs {
		if d.DevID != s.DevID {
			continue
		}
		for _, r := range append(append([]Range(nil), reserved...), d.Used...) {
			if s.Offset < r.End() && r.Start < s.Offset+n {
				return true
			}
		}
		return s.Offset+n > d.Size
	}
	return true // not a device placement may use
}

func TestPlaceRestripe(t *testing.T) {
	const g, m = 1 << 30, 1 << 20
	st := func(id, off uint64) format.Stripe { return format.Stripe{DevID: id, Offset: off} }
	for _, tc := range []struct {
		name    string
		chunk   format.ChunkItem
		to      format.Profile
		devs    []DeviceSpace
		kept    []format.Stripe // must be in the result, unchanged
		stripes int
		width   uint64 // bytes per new stripe
		err     error
	}{
		{name: "raid1 off a leaving device",
			chunk: format.ChunkItem{Length: 64 * m, Profile: format.ProfileRaid1, Stripes: []format.Stripe{st(1, 2*m), st(2, 2*m)}},
			to:    format.ProfileRaid1, devs: []DeviceSpace{space(1, g, Range{2 * m, 64 * m}), space(3, g)},
			kept: []format.Stripe{st(1, 2*m)}, stripes: 2, width: 64 * m},
		{name: "dup to raid1 keeps one copy",
			chunk: format.ChunkItem{Length: 32 * m, Profile: format.ProfileDup, Stripes: []format.Stripe{st(1, 2*m), st(1, 600*m)}},
			to:    format.ProfileRaid1, devs: []DeviceSpace{space(1, g, Range{2 * m, 32 * m}, Range{600 * m, 32 * m}), space(2, g)},
			kept: []format.Stripe{st(1, 2*m)}, stripes: 2, width: 32 * m},
		{name: "raid0 narrows when no device is free",
			chunk: format.ChunkItem{Length: 192 * m, Profile: format.ProfileRaid0, StripeLen: 65536, Stripes: []format.Stripe{st(1, 2*m), st(2, 2*m), st(3, 2*m)}},
			to:    format.ProfileRaid0, devs: []DeviceSpace{space(1, g, Range{2 * m, 64 * m}), space(2, g, Range{2 * m, 64 * m})},
			stripes: 2, width: 96 * m},
		{name: "raid0 moves one stripe to a free device",
			chunk: format.ChunkItem{Length: 192 * m, Profile: format.ProfileRaid0, StripeLen: 65536, Stripes: []format.Stripe{st(1, 2*m), st(2, 2*m), st(3, 2*m)}},
			to:    format.ProfileRaid0, devs: []DeviceSpace{space(1, g, Range{2 * m, 64 * m}), space(2, g, Range{2 * m, 64 * m}), space(4, g)},
			kept: []format.Stripe{st(1, 2*m), st(2, 2*m)}, stripes: 3, width: 64 * m},
		{name: "shrink moves a stripe below the new end",
			chunk: format.ChunkItem{Length: 32 * m, Profile: format.ProfileSingle, Stripes: []format.Stripe{st(1, 900*m)}},
			to:    format.ProfileSingle, devs: []DeviceSpace{space(1, 512*m, Range{900 * m, 32 * m})},
			stripes: 1, width: 32 * m},
		{name: "single to dup on another device",
			chunk: format.ChunkItem{Length: 32 * m, Profile: format.ProfileSingle, Stripes: []format.Stripe{st(2, 2*m)}},
			to:    format.ProfileDup, devs: []DeviceSpace{space(1, g, Range{2 * m, 8 * m})},
			stripes: 2, width: 32 * m},
		{name: "raid1 with one device left",
			chunk: format.ChunkItem{Length: 64 * m, Profile: format.ProfileRaid1, Stripes: []format.Stripe{st(1, 2*m), st(2, 2*m)}},
			to:    format.ProfileRaid1, devs: []DeviceSpace{space(1, g, Range{2 * m, 64 * m})}, err: ErrNoSpace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pi, _ := tc.to.Info()
			tc.chunk.SubStripes = uint16(pi.SubStripes)
			got, err := PlaceRestripe(tc.devs, Restripe{Chunk: &tc.chunk, Profile: tc.to})
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("got %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.stripes {
				t.Fatalf("%d stripes %v, want %d", len(got), got, tc.stripes)
			}
			item := format.ChunkItem{Length: tc.chunk.Length, Type: format.ChunkData, Profile: tc.to, StripeLen: 65536, SubStripes: uint16(pi.SubStripes), Stripes: got}
			if err := item.Validate(); err != nil {
				t.Fatal(err)
			}
			if item.StripeLength() != tc.width {
				t.Fatalf("stripes of %d bytes, want %d", item.StripeLength(), tc.width)
			}
			isKept := map[format.Stripe]bool{}
			for _, k := range tc.kept {
				isKept[k] = true
			}
			found := 0
			for _, s := range got {
				if isKept[s] {
					found++
					continue
				}
				if overlaps(tc.devs, s, tc.width) {
					t.Fatalf("new stripe %+v overlaps used space or leaves the device", s)
				}
			}
			if found != len(tc.kept) {
				t.Fatalf("kept %d of %v in %v", found, tc.kept, got)
			}
		})
	}
}
