package alloc

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/ddfs/ddfs/format"
)

// full marks all of d's space past the reserved first MiB as used.
func full(d DeviceSpace) DeviceSpace {
	d.Used = []Range{{1 << 20, d.Size - 1<<20}}
	return d
}

func stripeDevs(p *Placement) []uint64 {
	var out []uint64
	for _, s := range p.Stripes {
		out = append(out, s.DevID)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// TestPlaceLayouts: the layouts of the ssd_metadata thread, with devices
// 1-3 SSDs and 4-5 HDDs unless a case says otherwise.
func TestPlaceLayouts(t *testing.T) {
	set := []DeviceSpace{ssd(1), ssd(2), ssd(3), hdd(4), hdd(5)}
	hddsFull := []DeviceSpace{ssd(1), ssd(2), ssd(3), full(hdd(4)), full(hdd(5))}
	twoSSD := []DeviceSpace{ssd(1), ssd(2), hdd(3), hdd(4), hdd(5)}
	cases := []struct {
		name     string
		devs     []DeviceSpace
		policy   format.AllocPolicy
		typ      format.ChunkType
		profile  format.Profile
		tier     int
		strict   bool
		want     string // stripe devids, or "enospc"
		fallback bool
	}{
		{"tiered raid1 data on hdds", set, format.AllocTiered, format.ChunkData, format.ProfileRaid1, 0, false, "[4 5]", false},
		{"tiered raid1 metadata on ssds", set, format.AllocTiered, format.ChunkMetadata, format.ProfileRaid1, 0, false, "[1 2]", false},
		{"tiered hdds full: data spills to ssds", hddsFull, format.AllocTiered, format.ChunkData, format.ProfileRaid1, 0, false, "[1 2]", true},
		{"tiered hdds full, strict", hddsFull, format.AllocTiered, format.ChunkData, format.ProfileRaid1, 0, true, "enospc", false},
		{"tiered data-tier 1", set, format.AllocTiered, format.ChunkData, format.ProfileRaid1, 1, false, "[1 2]", false},
		{"tiered raid10 data: 2 hdds, 3 ssds too few alone", set, format.AllocTiered, format.ChunkData, format.ProfileRaid10, 0, false, "[1 2 3 4]", true},
		{"tiered raid1c3 metadata: 2 ssds too few, hdd tier holds it", twoSSD, format.AllocTiered, format.ChunkMetadata, format.ProfileRaid1C3, 0, false, "[3 4 5]", true},
		{"tiered raid1c3 metadata on 3 ssds", set, format.AllocTiered, format.ChunkMetadata, format.ProfileRaid1C3, 0, false, "[1 2 3]", false},
		{"tiered dup metadata on one ssd", set, format.AllocTiered, format.ChunkMetadata, format.ProfileDup, 0, false, "[1 1]", false},
		{"ssd-metadata raid1 data on hdds", set, format.AllocSSDMetadata, format.ChunkData, format.ProfileRaid1, 0, false, "[4 5]", false},
		{"ssd-metadata raid1c3 metadata, 2 ssds: all devices", twoSSD, format.AllocSSDMetadata, format.ChunkMetadata, format.ProfileRaid1C3, 0, false, "[1 2 3]", true},
		{"ssd-metadata raid10 data, 2 hdds: all devices", set, format.AllocSSDMetadata, format.ChunkData, format.ProfileRaid10, 0, false, "[1 2 3 4]", true},
		{"classic skips a full device", []DeviceSpace{ssd(1), full(hdd(2)), hdd(3)}, format.AllocClassic, format.ChunkData, format.ProfileRaid1, 0, false, "[1 3]", false},
		{"classic raid1", []DeviceSpace{ssd(1), hdd(2), hdd(3)}, format.AllocClassic, format.ChunkData, format.ProfileRaid1, 0, false, "[1 2]", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Place(tc.devs, Request{Type: tc.typ, Profile: tc.profile, StripeSize: 256 << 20, MinStripe: 4 << 20, Policy: tc.policy, Tier: tc.tier, Strict: tc.strict})
			if tc.want == "enospc" {
				if err == nil || !errorsIsNoSpace(err) {
					t.Fatalf("placed %+v, %v; want ErrNoSpace", p, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(stripeDevs(p)); got != tc.want || p.Fallback != tc.fallback {
				t.Fatalf("stripes on %s fallback %v, want %s fallback %v", got, p.Fallback, tc.want, tc.fallback)
			}
		})
	}
}

// TestPlaceProperties places chunks on random device sets (sizes,
// classes, speeds, explicit tiers) until they fill up, for every policy
// and profile, and checks each placement against a simple model:
// mirrors never share a device, dup keeps both copies on one device,
// stripes stay inside free space, and tiered metadata lands on the
// fastest tier with enough devices that have room.
func TestPlaceProperties(t *testing.T) {
	profiles := []format.Profile{format.ProfileSingle, format.ProfileDup, format.ProfileRaid0, format.ProfileRaid1, format.ProfileRaid1C3, format.ProfileRaid10}
	policies := []format.AllocPolicy{format.AllocClassic, format.AllocSSDMetadata, format.AllocTiered}
	types := []format.ChunkType{format.ChunkData, format.ChunkMetadata, format.ChunkSystem}
	for seed := uint64(0); seed < 300; seed++ {
		r := rand.New(rand.NewPCG(seed, 6))
		var devs []DeviceSpace
		for id := uint64(1); id <= uint64(1+r.IntN(6)); id++ {
			d := DeviceSpace{DevID: id, Size: uint64(64+r.IntN(448)) << 20, Rotational: r.IntN(2) == 0}
			if r.IntN(3) == 0 {
				d.SeekSpeed, d.Bandwidth = uint64(50+r.IntN(100000)), uint64(50+r.IntN(3000))<<20
			}
			if r.IntN(5) == 0 {
				d.Tier = uint8(1 + r.IntN(3))
			}
			devs = append(devs, d)
		}
		policy := policies[r.IntN(len(policies))]
		for step := 0; step < 60; step++ {
			req := Request{Type: types[r.IntN(3)], Profile: profiles[r.IntN(len(profiles))], StripeSize: uint64(4+r.IntN(60)) << 20, MinStripe: 4 << 20, Policy: policy, Tier: r.IntN(4)}
			name := fmt.Sprintf("seed %d step %d %v %v %v", seed, step, policy, req.Type, req.Profile)
			wantTier, wantFallback := modelMetaTier(devs, req)
			p, err := Place(devs, req)
			if err != nil {
				if !errorsIsNoSpace(err) {
					t.Fatalf("%s: %v", name, err)
				}
				continue
			}
			checkPlacement(t, name, devs, req, p)
			if policy == format.AllocTiered && req.Type != format.ChunkData {
				tiers := RankTiers(devs, policy)
				if got := tiers.On(p.Stripes); got != wantTier || p.Fallback != wantFallback {
					t.Fatalf("%s: metadata on tier %d fallback %v, model says tier %d fallback %v (tiers %v)", name, got, p.Fallback, wantTier, wantFallback, tiers.Of)
				}
			}
			for _, s := range p.Stripes {
				for i := range devs {
					if devs[i].DevID == s.DevID {
						devs[i].Used = append(devs[i].Used, Range{s.Offset, stripeLen(p, req)})
					}
				}
			}
		}
	}
}

// stripeLen is the device bytes of each stripe of p.
func stripeLen(p *Placement, req Request) uint64 {
	pi, _ := req.Profile.Info()
	if pi.Striped {
		return p.Length / uint64(len(p.Stripes)/pi.SubStripes)
	}
	return p.Length
}

// modelMetaTier: the fastest tier with enough devices whose largest hole
// (dup: room for two copies) holds MinStripe; 0 and a fallback when none.
func modelMetaTier(devs []DeviceSpace, req Request) (int, bool) {
	pi, _ := req.Profile.Info()
	tiers := RankTiers(devs, req.Policy)
	for _, n := range tiers.Numbers() {
		ok := 0
		for _, d := range tiers.devices(devs, n) {
			h := d.Holes()
			if req.Profile == format.ProfileDup && dupAvail(h) >= req.MinStripe || req.Profile != format.ProfileDup && len(h) > 0 && h[0].Len >= req.MinStripe {
				ok++
			}
		}
		if ok >= pi.MinDevices {
			return n, n != tiers.Fastest()
		}
	}
	if len(tiers.Numbers()) == 1 {
		return 0, false
	}
	return 0, true
}

func checkPlacement(t *testing.T, name string, devs []DeviceSpace, req Request, p *Placement) {
	t.Helper()
	pi, _ := req.Profile.Info()
	n := stripeLen(p, req)
	if n < req.MinStripe || n > req.StripeSize || n%(1<<20) != 0 {
		t.Fatalf("%s: stripe length %d outside [%d, %d] MiB multiples", name, n, req.MinStripe, req.StripeSize)
	}
	seen := map[uint64]int{}
	for _, s := range p.Stripes {
		seen[s.DevID]++
	}
	switch {
	case req.Profile == format.ProfileDup:
		if len(p.Stripes) != 2 || len(seen) != 1 {
			t.Fatalf("%s: dup stripes %+v, want two on one device", name, p.Stripes)
		}
		if a, b := p.Stripes[0].Offset, p.Stripes[1].Offset; a < b+n && b < a+n {
			t.Fatalf("%s: dup copies overlap at %d and %d", name, a, b)
		}
	default:
		for id, c := range seen {
			if c > 1 {
				t.Fatalf("%s: %d stripes on device %d: %+v", name, c, id, p.Stripes)
			}
		}
		want := pi.Copies
		if req.Profile == format.ProfileRaid0 || req.Profile == format.ProfileRaid10 {
			want = pi.MinDevices
		}
		if len(p.Stripes) < want || (req.Profile == format.ProfileRaid10 && len(p.Stripes)%2 != 0) {
			t.Fatalf("%s: %d stripes", name, len(p.Stripes))
		}
	}
	for _, s := range p.Stripes {
		var d *DeviceSpace
		for i := range devs {
			if devs[i].DevID == s.DevID {
				d = &devs[i]
			}
		}
		if d == nil || s.Offset+n > d.Size {
			t.Fatalf("%s: stripe %+v outside its device", name, s)
		}
		for _, u := range append(append([]Range(nil), reserved...), d.Used...) {
			if s.Offset < u.End() && u.Start < s.Offset+n {
				t.Fatalf("%s: stripe [%d,+%d) on device %d overlaps used %+v", name, s.Offset, n, d.DevID, u)
			}
		}
	}
}

// TestStripedChunkLength: a striped chunk takes the wanted length in all,
// spread over its data stripes (btrfs caps the chunk, not the stripe), so
// 4 x 256 MiB raid10 with a 100 MiB want uses 50 MiB per device, not 100.
func TestStripedChunkLength(t *testing.T) {
	for _, tc := range []struct {
		profile           format.Profile
		stripe, length    uint64
		wantStripes, devs int
	}{
		{format.ProfileSingle, 100, 100, 1, 4},
		{format.ProfileRaid1, 100, 100, 2, 4},
		{format.ProfileRaid10, 50, 100, 4, 4},
		{format.ProfileRaid0, 25, 100, 4, 4},
		{format.ProfileRaid0, 4, 12, 3, 3}, // 100/3 MiB wanted, never below MinStripe
	} {
		var devs []DeviceSpace
		for i := 1; i <= tc.devs; i++ {
			devs = append(devs, DeviceSpace{DevID: uint64(i), Size: 256 << 20})
		}
		want := uint64(100 << 20)
		if tc.stripe == 4 {
			want = 10 << 20
		}
		p, err := Place(devs, Request{Type: format.ChunkData, Profile: tc.profile, StripeSize: want, MinStripe: 4 << 20})
		if err != nil {
			t.Fatalf("%v: %v", tc.profile, err)
		}
		if len(p.Stripes) != tc.wantStripes || p.Length != tc.length<<20 || stripeLen(p, Request{Profile: tc.profile}) != tc.stripe<<20 {
			t.Errorf("%v on %d devices: %d stripes of %d MiB, length %d MiB; want %d of %d MiB, %d MiB", tc.profile, tc.devs,
				len(p.Stripes), stripeLen(p, Request{Profile: tc.profile})>>20, p.Length>>20, tc.wantStripes, tc.stripe, tc.length)
		}
	}
}
