package alloc

import (
	"errors"
	"reflect"
	"testing"

	"github.com/ddfs/ddfs/format"
)

const gib = 1 << 30

func ssd(id uint64) DeviceSpace { return DeviceSpace{DevID: id, Size: 10 * gib} }
func hdd(id uint64) DeviceSpace { return DeviceSpace{DevID: id, Size: 10 * gib, Rotational: true} }

func withSpeed(d DeviceSpace, seek, bw uint64) DeviceSpace {
	d.SeekSpeed, d.Bandwidth = seek, bw
	return d
}

func withTier(d DeviceSpace, tier uint8) DeviceSpace {
	d.Tier = tier
	return d
}

func TestRankTiers(t *testing.T) {
	cases := []struct {
		name   string
		policy format.AllocPolicy
		devs   []DeviceSpace
		want   map[uint64]int
	}{
		{"classic is one tier", format.AllocClassic, []DeviceSpace{ssd(1), hdd(2)}, map[uint64]int{1: 1, 2: 1}},
		{"ssd-metadata by class", format.AllocSSDMetadata, []DeviceSpace{ssd(1), hdd(2), ssd(3)}, map[uint64]int{1: 1, 2: 2, 3: 1}},
		{"ssd-metadata one class", format.AllocSSDMetadata, []DeviceSpace{hdd(1), hdd(2)}, map[uint64]int{1: 1, 2: 1}},
		{"tiered defaults by class", format.AllocTiered, []DeviceSpace{hdd(1), ssd(2), ssd(3), hdd(4)}, map[uint64]int{1: 2, 2: 1, 3: 1, 4: 2}},
		{"tiered three speeds", format.AllocTiered,
			[]DeviceSpace{withSpeed(ssd(1), 500000, 3*gib), withSpeed(ssd(2), 20000, 500<<20), withSpeed(hdd(3), 120, 150<<20)},
			map[uint64]int{1: 1, 2: 2, 3: 3}},
		{"within 4x share a tier", format.AllocTiered,
			[]DeviceSpace{withSpeed(hdd(1), 100, 150<<20), withSpeed(hdd(2), 300, 200<<20), withSpeed(hdd(3), 80, 100<<20)},
			map[uint64]int{1: 1, 2: 1, 3: 1}},
		{"4x is measured from the tier's fastest", format.AllocTiered,
			[]DeviceSpace{withSpeed(hdd(1), 400, 150<<20), withSpeed(hdd(2), 200, 150<<20), withSpeed(hdd(3), 90, 150<<20)},
			map[uint64]int{1: 1, 2: 1, 3: 2}},
		{"bandwidth splits equal seek speeds", format.AllocTiered,
			[]DeviceSpace{withSpeed(ssd(1), 20000, 2*gib), withSpeed(ssd(2), 20000, 100<<20)},
			map[uint64]int{1: 1, 2: 2}},
		{"exactly 4x slower still shares the tier", format.AllocTiered,
			[]DeviceSpace{withSpeed(hdd(1), 100, 150<<20), withSpeed(hdd(2), 400, 600<<20)},
			map[uint64]int{1: 1, 2: 1}},
		{"ranked by seek speed, not devid", format.AllocTiered,
			[]DeviceSpace{withSpeed(hdd(1), 90, 150<<20), withSpeed(hdd(2), 400, 150<<20), withSpeed(hdd(3), 200, 150<<20)},
			map[uint64]int{1: 2, 2: 1, 3: 1}},
		{"equal seeks ranked by bandwidth, not devid", format.AllocTiered,
			[]DeviceSpace{withSpeed(ssd(1), 20000, 100<<20), withSpeed(ssd(2), 20000, 2*gib), withSpeed(ssd(3), 20000, 1*gib)},
			map[uint64]int{1: 2, 2: 1, 3: 1}},
		{"explicit tier wins", format.AllocTiered, []DeviceSpace{ssd(1), withTier(ssd(2), 3), hdd(3)}, map[uint64]int{1: 1, 2: 3, 3: 2}},
		{"explicit tier 1 on an hdd", format.AllocTiered, []DeviceSpace{withTier(hdd(1), 1), hdd(2)}, map[uint64]int{1: 1, 2: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := RankTiers(tc.devs, tc.policy)
			if !reflect.DeepEqual(got.Of, tc.want) {
				t.Fatalf("tiers %v, want %v", got.Of, tc.want)
			}
		})
	}
}

func TestTierOrder(t *testing.T) {
	three := []DeviceSpace{withTier(ssd(1), 1), withTier(ssd(2), 2), withTier(hdd(3), 3)}
	gap := []DeviceSpace{withTier(ssd(1), 1), withTier(hdd(2), 3)}
	cases := []struct {
		name   string
		policy format.AllocPolicy
		devs   []DeviceSpace
		typ    format.ChunkType
		want   int
		order  []int
	}{
		{"tiered metadata fastest first", format.AllocTiered, three, format.ChunkMetadata, 0, []int{1, 2, 3}},
		{"tiered system like metadata", format.AllocTiered, three, format.ChunkSystem, 2, []int{1, 2, 3}},
		{"tiered data default slowest", format.AllocTiered, three, format.ChunkData, 0, []int{3, 2, 1}},
		{"tiered data middle, faster first on a tie", format.AllocTiered, three, format.ChunkData, 2, []int{2, 1, 3}},
		{"tiered data fastest", format.AllocTiered, three, format.ChunkData, 1, []int{1, 2, 3}},
		{"missing tier: nearest, faster on a tie", format.AllocTiered, gap, format.ChunkData, 2, []int{1, 3}},
		{"tier above all: the slowest", format.AllocTiered, gap, format.ChunkData, 9, []int{3, 1}},
		{"ssd-metadata metadata", format.AllocSSDMetadata, []DeviceSpace{ssd(1), hdd(2)}, format.ChunkMetadata, 0, []int{1}},
		{"ssd-metadata data", format.AllocSSDMetadata, []DeviceSpace{ssd(1), hdd(2)}, format.ChunkData, 0, []int{2}},
		{"ssd-metadata small data", format.AllocSSDMetadata, []DeviceSpace{ssd(1), hdd(2)}, format.ChunkData, 1, []int{1}},
		{"classic", format.AllocClassic, []DeviceSpace{ssd(1), hdd(2)}, format.ChunkData, 0, []int{1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := RankTiers(tc.devs, tc.policy).Order(tc.typ, tc.want)
			if !reflect.DeepEqual(got, tc.order) {
				t.Fatalf("order %v, want %v", got, tc.order)
			}
		})
	}
}

func TestTiersOn(t *testing.T) {
	tiers := RankTiers([]DeviceSpace{ssd(1), ssd(2), hdd(3)}, format.AllocTiered)
	cases := []struct {
		devs []uint64
		want int
	}{{[]uint64{1, 2}, 1}, {[]uint64{3}, 2}, {[]uint64{3, 3}, 2}, {[]uint64{1, 3}, 0}, {[]uint64{9}, 0}}
	for _, tc := range cases {
		var st []format.Stripe
		for _, d := range tc.devs {
			st = append(st, format.Stripe{DevID: d})
		}
		if got := tiers.On(st); got != tc.want {
			t.Errorf("stripes on %v: tier %d, want %d", tc.devs, got, tc.want)
		}
	}
}

func errorsIsNoSpace(err error) bool { return errors.Is(err, ErrNoSpace) }
