package alloc

import (
	"sort"

	"github.com/ddfs/ddfs/format"
)

// Speeds assumed for a device whose item leaves them 0: the defaults mkfs
// gives image files and rotational devices (README "Devices").
const (
	defaultSeekSSD = 20000
	defaultSeekHDD = 120
	defaultBWSSD   = 500 << 20
	defaultBWHDD   = 150 << 20
	// tierFactor: devices within this factor of a tier's fastest device
	// share its tier; an SSD and an HDD differ by ~100x in seeks, two
	// HDDs or two SSDs of different makes by less than 4x.
	tierFactor = 4
)

// Tiers ranks the devices of a set for a policy (FORMAT.md §4.3).
type Tiers struct {
	Policy format.AllocPolicy
	// Of maps a devid to its tier number, 1 the fastest.
	Of map[uint64]int
	// nums are the tier numbers in use, fastest first.
	nums []int
}

// speeds returns a device's seek speed and bandwidth, defaults for 0.
func speeds(d *DeviceSpace) (seek, bw uint64) {
	seek, bw = d.SeekSpeed, d.Bandwidth
	if seek == 0 {
		seek = defaultSeekSSD
		if d.Rotational {
			seek = defaultSeekHDD
		}
	}
	if bw == 0 {
		bw = defaultBWSSD
		if d.Rotational {
			bw = defaultBWHDD
		}
	}
	return seek, bw
}

// RankTiers puts every device in a tier. classic has one tier;
// ssd-metadata has non-rotational (1) and rotational (2) devices when the
// set has both; tiered takes an explicit device tier, else groups devices
// by speed (seek_speed, then bandwidth, within tierFactor of the group's
// fastest), numbering the groups from 1.
func RankTiers(devs []DeviceSpace, p format.AllocPolicy) Tiers {
	t := Tiers{Policy: p, Of: map[uint64]int{}}
	switch p {
	case format.AllocSSDMetadata:
		kinds := map[bool]bool{}
		for _, d := range devs {
			kinds[d.Rotational] = true
		}
		for _, d := range devs {
			t.Of[d.DevID] = 1
			if len(kinds) == 2 && d.Rotational {
				t.Of[d.DevID] = 2
			}
		}
	case format.AllocTiered:
		var derived []*DeviceSpace
		for i := range devs {
			if devs[i].Tier != 0 {
				t.Of[devs[i].DevID] = int(devs[i].Tier)
			} else {
				derived = append(derived, &devs[i])
			}
		}
		sort.SliceStable(derived, func(i, j int) bool {
			si, bi := speeds(derived[i])
			sj, bj := speeds(derived[j])
			if si != sj {
				return si > sj
			}
			if bi != bj {
				return bi > bj
			}
			return derived[i].DevID < derived[j].DevID
		})
		group := 0
		var leadSeek, leadBW uint64
		for _, d := range derived {
			s, b := speeds(d)
			if group == 0 || s < leadSeek/tierFactor || b < leadBW/tierFactor {
				group++
				leadSeek, leadBW = s, b
			}
			t.Of[d.DevID] = group
		}
	default:
		for _, d := range devs {
			t.Of[d.DevID] = 1
		}
	}
	seen := map[int]bool{}
	for _, n := range t.Of {
		if !seen[n] {
			seen[n] = true
			t.nums = append(t.nums, n)
		}
	}
	sort.Ints(t.nums)
	return t
}

// Numbers returns the tier numbers in use, fastest first.
func (t Tiers) Numbers() []int { return append([]int(nil), t.nums...) }

// Fastest is the metadata tier's number (0 for an empty set).
func (t Tiers) Fastest() int {
	if len(t.nums) == 0 {
		return 0
	}
	return t.nums[0]
}

// nearest is the tier in use closest to want (the faster on a tie); 0
// means the slowest tier.
func (t Tiers) nearest(want int) int {
	if len(t.nums) == 0 {
		return 0
	}
	if want <= 0 {
		return t.nums[len(t.nums)-1]
	}
	best := t.nums[0]
	for _, n := range t.nums {
		if abs(n-want) < abs(best-want) {
			best = n
		}
	}
	return best
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// Order lists the tiers a new chunk of type typ tries, in order; a chunk
// no tier can hold goes to all devices. Metadata: the fastest tier
// (ssd-metadata) or each tier from the fastest (tiered). Data: the wanted
// tier (0: the slowest), then for tiered the others by distance from it,
// the faster first on a tie.
func (t Tiers) Order(typ format.ChunkType, want int) []int {
	if len(t.nums) == 0 {
		return nil
	}
	if typ != format.ChunkData {
		if t.Policy == format.AllocTiered {
			return t.Numbers()
		}
		return []int{t.nums[0]}
	}
	home := t.nearest(want)
	if t.Policy != format.AllocTiered {
		return []int{home}
	}
	out := t.Numbers()
	sort.SliceStable(out, func(i, j int) bool {
		di, dj := abs(out[i]-home), abs(out[j]-home)
		if di != dj {
			return di < dj
		}
		return out[i] < out[j]
	})
	return out
}

// On reports the tier all of stripes' devices are in, or 0 when they
// span tiers or name an unknown device.
func (t Tiers) On(stripes []format.Stripe) int {
	tier := 0
	for i, s := range stripes {
		n, ok := t.Of[s.DevID]
		if !ok || (i > 0 && n != tier) {
			return 0
		}
		tier = n
	}
	return tier
}

// devices returns the devices of tier n.
func (t Tiers) devices(devs []DeviceSpace, n int) []DeviceSpace {
	var out []DeviceSpace
	for _, d := range devs {
		if t.Of[d.DevID] == n {
			out = append(out, d)
		}
	}
	return out
}
