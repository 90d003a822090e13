// Package inspect gathers what `ddfs info` and `ddfs df` report about an
// opened filesystem, as plain structs with stable JSON names.
package inspect

import (
	"sort"

	"github.com/google/uuid"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/store"
)

// Device is one device of the set.
type Device struct {
	DevID uint64 `json:"devid"`
	UUID  string `json:"uuid"`
	Path  string `json:"path"`
	Size  uint64 `json:"size"`
	// Allocated is the device bytes given to chunks (ddfs df's word).
	Allocated  uint64 `json:"allocated"`
	Rotational bool   `json:"rotational"`
	SeekSpeed  uint64 `json:"seek_speed"`
	Bandwidth  uint64 `json:"bandwidth"`
	// Tier is the device's rank (FS.DeviceTiers), not its tier property:
	// ddfs info and ddfs device usage agree.
	Tier int `json:"tier"`
	// Missing: the set was opened degraded without this device.
	Missing bool `json:"missing,omitempty"`
}

// Stripe places a chunk stripe.
type Stripe struct {
	DevID  uint64 `json:"devid"`
	Offset uint64 `json:"offset"`
}

// Chunk is one chunk of the logical address space.
type Chunk struct {
	Logical uint64   `json:"logical"`
	Length  uint64   `json:"length"`
	Type    string   `json:"type"`
	Profile string   `json:"profile"`
	Used    uint64   `json:"used"`
	Stripes []Stripe `json:"stripes"`
}

// Root is the root of one tree.
type Root struct {
	Tree       string `json:"tree"`
	ID         uint64 `json:"id"`
	Logical    uint64 `json:"logical"`
	Level      uint8  `json:"level"`
	Generation uint64 `json:"generation"`
}

// Info is `ddfs info`.
type Info struct {
	UUID        string   `json:"uuid"`
	Label       string   `json:"label"`
	Generation  uint64   `json:"generation"`
	Version     uint32   `json:"version"`
	NodeSize    uint32   `json:"nodesize"`
	SectorSize  uint32   `json:"sectorsize"`
	Csum        string   `json:"csum"`
	AllocPolicy string   `json:"alloc_policy"`
	TotalBytes  uint64   `json:"total_bytes"`
	Used        uint64   `json:"used"` // ddfs df's used: the superblock's bytes_used
	Compat      uint64   `json:"compat_flags"`
	RoCompat    uint64   `json:"ro_compat_flags"`
	Incompat    uint64   `json:"incompat_flags"`
	Devices     []Device `json:"devices"`
	Chunks      []Chunk  `json:"chunks"`
	Roots       []Root   `json:"roots"`

	// NewUUID is the UUID an interrupted set-uuid was changing to
	// (FORMAT.md §3.8); empty when no change is pending.
	NewUUID string `json:"new_uuid,omitempty"`
}

// GetInfo describes the committed state of fs.
func GetInfo(fs *store.FS) *Info {
	sb := fs.Super()
	info := &Info{
		UUID: uuid.UUID(sb.FSID).String(), Label: sb.Label, Generation: sb.Generation, Version: uint32(sb.Version),
		NodeSize: sb.NodeSize, SectorSize: sb.SectorSize, Csum: sb.CsumType.String(),
		AllocPolicy: sb.Settings.AllocPolicy.String(), TotalBytes: sb.TotalBytes, Used: sb.BytesUsed,
		Compat: uint64(sb.Compat), RoCompat: uint64(sb.RoCompat), Incompat: uint64(sb.Incompat),
		Devices: Devices(fs), Roots: []Root{}, Chunks: []Chunk{},
	}
	if sb.NewFSID != ([16]byte{}) {
		info.NewUUID = uuid.UUID(sb.NewFSID).String()
	}
	for _, bg := range fs.BlockGroups() {
		c := bg.Chunk
		ch := Chunk{Logical: c.Logical, Length: c.Length, Type: c.Type.String(), Profile: c.Profile.String(), Used: bg.Used}
		for _, s := range c.Stripes {
			ch.Stripes = append(ch.Stripes, Stripe{DevID: s.DevID, Offset: s.Offset})
		}
		info.Chunks = append(info.Chunks, ch)
	}
	for id := format.TreeID(1); id <= format.NumTrees; id++ {
		r := sb.Roots.Root(id)
		if r.Logical != 0 {
			info.Roots = append(info.Roots, Root{Tree: id.String(), ID: uint64(id), Logical: r.Logical, Level: r.Level, Generation: r.Generation})
		}
	}
	return info
}

// Devices lists the device items with the path each was opened by and
// the tier each is ranked in.
func Devices(fs *store.FS) []Device {
	var out []Device
	tiers := fs.DeviceTiers()
	for _, d := range fs.DevItems() {
		path := d.Path
		if od, ok := fs.Vol.Device(d.DevID); ok {
			path = od.Path
		}
		out = append(out, Device{
			DevID: d.DevID, UUID: uuid.UUID(d.UUID).String(), Path: path, Size: d.TotalBytes, Allocated: d.BytesUsed,
			Rotational: d.Rotational, SeekSpeed: d.SeekSpeed, Bandwidth: d.Bandwidth, Tier: tiers[d.DevID],
			Missing: fs.Vol.IsMissing(d.DevID),
		})
	}
	return out
}

// Usage is one line of `ddfs df` by type and profile.
type Usage struct {
	Type    string `json:"type"`
	Profile string `json:"profile"`
	// Size is the logical bytes of the chunks, Allocated the raw device
	// bytes they take (Size times the copies), Used the bytes in extents.
	Size      uint64 `json:"size"`
	Allocated uint64 `json:"allocated"`
	Used      uint64 `json:"used"`
}

// DeviceUsage is one line of `ddfs df` per device.
type DeviceUsage struct {
	DevID     uint64 `json:"devid"`
	Path      string `json:"path"`
	Size      uint64 `json:"size"`
	Allocated uint64 `json:"allocated"`
	Free      uint64 `json:"unallocated"`
	Missing   bool   `json:"missing,omitempty"`
}

// DF is `ddfs df`.
type DF struct {
	TotalBytes uint64        `json:"total_bytes"`
	Allocated  uint64        `json:"allocated"`
	Used       uint64        `json:"used"`
	Types      []Usage       `json:"types"`
	Devices    []DeviceUsage `json:"devices"`
	// AllocPolicy and Fallbacks: chunks the policy placed outside the
	// device class it prefers for their type (it ran out of room there).
	AllocPolicy string     `json:"alloc_policy"`
	Fallbacks   []Fallback `json:"fallbacks"`
}

// Fallback is a chunk outside its preferred devices.
type Fallback struct {
	Logical uint64   `json:"logical"`
	Type    string   `json:"type"`
	Profile string   `json:"profile"`
	DevIDs  []uint64 `json:"devids"`
}

// GetDF sums chunk usage per type/profile and per device.
func GetDF(fs *store.FS) *DF {
	df := &DF{}
	byKey := map[[2]string]*Usage{}
	for _, bg := range fs.BlockGroups() {
		c := bg.Chunk
		k := [2]string{c.Type.String(), c.Profile.String()}
		u := byKey[k]
		if u == nil {
			u = &Usage{Type: k[0], Profile: k[1]}
			byKey[k] = u
		}
		raw := c.StripeLength() * uint64(len(c.Stripes))
		u.Size += c.Length
		u.Allocated += raw
		u.Used += bg.Used
		df.Allocated += raw
		df.Used += bg.Used
	}
	for _, u := range byKey {
		df.Types = append(df.Types, *u)
	}
	sort.Slice(df.Types, func(i, j int) bool {
		a, b := df.Types[i], df.Types[j]
		return typeLess(a.Type, a.Profile, b.Type, b.Profile)
	})
	df.AllocPolicy = fs.Super().Settings.AllocPolicy.String()
	df.Fallbacks = fallbacks(fs)
	for _, d := range Devices(fs) {
		df.TotalBytes += d.Size
		df.Devices = append(df.Devices, DeviceUsage{DevID: d.DevID, Path: d.Path, Size: d.Size, Allocated: d.Allocated, Free: d.Size - min(d.Allocated, d.Size), Missing: d.Missing})
	}
	return df
}

// fallbacks lists the chunks the allocation policy placed outside the
// devices it preferred for them (block group flag BlockGroupFallback, set
// when the chunk was made): ssd-metadata or tiered metadata off the
// fastest tier, data off the tier its file asked for. A policy change
// later does not mark chunks made before it.
func fallbacks(fs *store.FS) []Fallback {
	out := []Fallback{}
	for _, bg := range fs.BlockGroups() {
		if !bg.Fallback() {
			continue
		}
		c := bg.Chunk
		var devs []uint64
		for _, s := range c.Stripes {
			devs = append(devs, s.DevID)
		}
		out = append(out, Fallback{Logical: c.Logical, Type: c.Type.String(), Profile: c.Profile.String(), DevIDs: devs})
	}
	return out
}
