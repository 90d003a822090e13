package inspect

import (
	"sort"

	"github.com/ddfs/ddfs/pkg/store"
)

// DeviceTypes is one device of `ddfs device usage`: the device as ddfs
// info shows it, its unallocated bytes as ddfs df counts them, and its
// allocated bytes by chunk type and profile.
type DeviceTypes struct {
	Device
	Unallocated uint64      `json:"unallocated"`
	Types       []TypeBytes `json:"types"`
}

// TypeBytes is the device bytes chunks of one type and profile take on
// one device.
type TypeBytes struct {
	Type      string `json:"type"`
	Profile   string `json:"profile"`
	Allocated uint64 `json:"allocated"`
}

// GetDeviceUsage lists every device with its bytes per type/profile.
func GetDeviceUsage(fs *store.FS) []DeviceTypes {
	byDev := map[uint64]map[[2]string]uint64{}
	for _, bg := range fs.BlockGroups() {
		c := bg.Chunk
		k := [2]string{c.Type.String(), c.Profile.String()}
		for _, s := range c.Stripes {
			if byDev[s.DevID] == nil {
				byDev[s.DevID] = map[[2]string]uint64{}
			}
			byDev[s.DevID][k] += c.StripeLength()
		}
	}
	out := []DeviceTypes{}
	for _, d := range Devices(fs) {
		u := DeviceTypes{Device: d, Unallocated: d.Size - min(d.Allocated, d.Size), Types: []TypeBytes{}}
		for k, n := range byDev[d.DevID] {
			u.Types = append(u.Types, TypeBytes{Type: k[0], Profile: k[1], Allocated: n})
		}
		sort.Slice(u.Types, func(i, j int) bool {
			return typeLess(u.Types[i].Type, u.Types[i].Profile, u.Types[j].Type, u.Types[j].Profile)
		})
		out = append(out, u)
	}
	return out
}

// typeOrder lists chunk types as ddfs df does: data, metadata, system.
var typeOrder = map[string]int{"data": 0, "metadata": 1, "system": 2}

func typeLess(ta, pa, tb, pb string) bool {
	if typeOrder[ta] != typeOrder[tb] {
		return typeOrder[ta] < typeOrder[tb]
	}
	return pa < pb
}
