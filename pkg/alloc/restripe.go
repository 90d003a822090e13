package alloc

import (
	"fmt"
	"sort"

	"github.com/ddfs/ddfs/format"
)

// Restripe asks for a new stripe set for an existing chunk: the same
// logical length, perhaps another profile (balance), off devices that are
// leaving (device remove: absent from devs) or past a device's new end
// (shrink: devs carry the smaller Size).
type Restripe struct {
	Chunk   *format.ChunkItem
	Profile format.Profile
	// Prefer is a devid new stripes go to first when it can take them
	// (device replace: the new device); 0 none.
	Prefer uint64
	// Rank orders the other devices before free space decides: lower
	// first (the distance of a device's tier from the chunk's); nil none.
	Rank map[uint64]int
	// Stay lists devices absent from devs whose stripes keep their place
	// (device replace on a set that lacks other members too: their
	// copies stay missing until each is replaced in turn, as the chunk
	// cannot be rebuilt at its profile on the devices present); nil none.
	Stay map[uint64]bool
	// Fresh lays a striped chunk out afresh even at its own profile (a
	// raid5/raid6 chunk widened after device add).
	Fresh bool
	// StripeLen is the new layout's stripe_len (format.RestripeStripeLen;
	// 0: the chunk's own).
	StripeLen uint32
}

// PlaceRestripe returns the stripes of the chunk's new layout. A stripe of
// the old layout is kept (same devid and offset, so it needs no copy) when
// its device is in devs (or in Stay), it lies below the device's Size, and the new
// layout gives it the same role: any copy of a non-striped profile, or the
// same index of an unchanged striped layout. Every other stripe is placed
// in free space of devs, whose Used must include all stripes of the
// committed state (the old ones of this chunk too), so that writing a new
// stripe never touches anything the committed state uses.
func PlaceRestripe(devs []DeviceSpace, r Restripe) ([]format.Stripe, error) {
	pi, ok := r.Profile.Info()
	if !ok || !r.Profile.Supported() {
		return nil, fmt.Errorf("profile %v not supported", r.Profile)
	}
	devs = cloneSpace(devs)
	old := r.Chunk
	oldPI, _ := old.Profile.Info()
	if pi.Striped {
		if old.Profile == r.Profile && !r.Fresh {
			if s, err := replaceStripes(devs, old, r); err == nil {
				return s, nil
			}
		}
		unit := uint64(old.StripeLen)
		if r.StripeLen != 0 {
			unit = uint64(r.StripeLen)
		}
		return placeStriped(devs, old.Length, unit, r.Profile, pi, r.Prefer, r.Rank)
	}
	var kept []format.Stripe
	if !oldPI.Striped {
		kept = keepable(devs, old, r.Stay)
	}
	return placeMirrored(devs, old.Length, r.Profile, pi, kept, r.Prefer, r.Rank)
}

func cloneSpace(devs []DeviceSpace) []DeviceSpace {
	out := make([]DeviceSpace, len(devs))
	for i, d := range devs {
		out[i] = d
		out[i].Used = append([]Range(nil), d.Used...)
	}
	return out
}

func findDev(devs []DeviceSpace, id uint64) *DeviceSpace {
	for i := range devs {
		if devs[i].DevID == id {
			return &devs[i]
		}
	}
	return nil
}

// stays reports whether stripe s of length sl may stay where it is: on a
// device of devs below its Size, or on a device in stay.
func stays(devs []DeviceSpace, s format.Stripe, sl uint64, stay map[uint64]bool) bool {
	if stay[s.DevID] {
		return true
	}
	d := findDev(devs, s.DevID)
	return d != nil && s.Offset+sl <= d.Size
}

// keepable lists the old non-striped stripes that may stay.
func keepable(devs []DeviceSpace, old *format.ChunkItem, stay map[uint64]bool) []format.Stripe {
	var out []format.Stripe
	for _, s := range old.Stripes {
		if stays(devs, s, old.Length, stay) {
			out = append(out, s)
		}
	}
	return out
}

// byFree orders candidate devices: the preferred one first, then by rank
// (the allocation policy's tiers), then the largest hole (most free
// space, btrfs's rule), then devid.
func byFree(devs []DeviceSpace, prefer uint64, rank map[uint64]int) []*DeviceSpace {
	out := make([]*DeviceSpace, 0, len(devs))
	holes := map[uint64]uint64{}
	for i := range devs {
		out = append(out, &devs[i])
		if h := devs[i].Holes(); len(h) > 0 {
			holes[devs[i].DevID] = h[0].Len
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if (a.DevID == prefer) != (b.DevID == prefer) {
			return a.DevID == prefer
		}
		if rank[a.DevID] != rank[b.DevID] {
			return rank[a.DevID] < rank[b.DevID]
		}
		if holes[a.DevID] != holes[b.DevID] {
			return holes[a.DevID] > holes[b.DevID]
		}
		return a.DevID < b.DevID
	})
	return out
}

// take places size bytes on d at its lowest fitting hole and marks them used.
func take(d *DeviceSpace, size uint64) (format.Stripe, bool) {
	at := lowestFit(d.Holes(), size)
	if at == ^uint64(0) {
		return format.Stripe{}, false
	}
	d.Used = append(d.Used, Range{at, size})
	return format.Stripe{DevID: d.DevID, Offset: at, DevUUID: d.UUID}, true
}

// placeMirrored builds a non-striped layout (single, dup, raid1, raid1c3)
// of length bytes per stripe, keeping what it can of kept.
func placeMirrored(devs []DeviceSpace, length uint64, p format.Profile, pi format.ProfileInfo, kept []format.Stripe, prefer uint64, rank map[uint64]int) ([]format.Stripe, error) {
	var out []format.Stripe
	used := map[uint64]bool{}
	if p == format.ProfileDup {
		// Both copies on one device: keep the device with most kept copies.
		count := map[uint64]int{}
		for _, s := range kept {
			count[s.DevID]++
		}
		best := uint64(0)
		for id, n := range count {
			if best == 0 || n > count[best] || (n == count[best] && id < best) {
				best = id
			}
		}
		for _, s := range kept {
			if s.DevID == best && len(out) < 2 {
				out = append(out, s)
			}
		}
		if best != 0 {
			if d := findDev(devs, best); d != nil {
				for len(out) < 2 {
					s, ok := take(d, length)
					if !ok {
						break
					}
					out = append(out, s)
				}
			}
			if len(out) == 2 {
				return out, nil
			}
			out = nil
		}
		for _, d := range byFree(devs, prefer, rank) {
			a, okA := take(d, length)
			b, okB := take(d, length)
			if okA && okB {
				return []format.Stripe{a, b}, nil
			}
		}
		return nil, fmt.Errorf("dup stripes of %d MiB: no device has room for both: %w", length/mib, ErrNoSpace)
	}
	for _, s := range kept {
		if len(out) < pi.Copies && !used[s.DevID] {
			out = append(out, s)
			used[s.DevID] = true
		}
	}
	for _, d := range byFree(devs, prefer, rank) {
		if len(out) == pi.Copies {
			break
		}
		if used[d.DevID] {
			continue
		}
		if s, ok := take(d, length); ok {
			out = append(out, s)
			used[d.DevID] = true
		}
	}
	if len(out) < pi.Copies {
		return nil, fmt.Errorf("%v stripes of %d MiB need %d devices with room, %d have it: %w", p, length/mib, pi.Copies, len(out), ErrNoSpace)
	}
	return out, nil
}

// replaceStripes keeps a striped layout and moves only the stripes that
// may not stay, each to a device the chunk does not use yet.
func replaceStripes(devs []DeviceSpace, old *format.ChunkItem, r Restripe) ([]format.Stripe, error) {
	sl, prefer, rank := old.StripeLength(), r.Prefer, r.Rank
	out := append([]format.Stripe(nil), old.Stripes...)
	used := map[uint64]bool{}
	var moving []int
	for i, s := range old.Stripes {
		if stays(devs, s, sl, r.Stay) {
			used[s.DevID] = true
		} else {
			moving = append(moving, i)
		}
	}
	for _, i := range moving {
		placed := false
		for _, d := range byFree(devs, prefer, rank) {
			if used[d.DevID] {
				continue
			}
			if s, ok := take(d, sl); ok {
				out[i], used[d.DevID], placed = s, true, true
				break
			}
		}
		if !placed {
			return nil, fmt.Errorf("no free device for stripe %d: %w", i, ErrNoSpace)
		}
	}
	return out, nil
}

// placeStriped lays a striped chunk of length bytes out afresh, as wide as
// the devices allow (raid0: D data stripes; raid10: D pairs), keeping the
// length a multiple of D stripe units (unit: stripe_len) as the format
// requires.
func placeStriped(devs []DeviceSpace, length, unit uint64, p format.Profile, pi format.ProfileInfo, prefer uint64, rank map[uint64]int) ([]format.Stripe, error) {
	minData := pi.DataStripes(pi.MinDevices)
	for data := pi.DataStripes(len(devs)); data >= minData; data-- {
		if unit == 0 || length%(uint64(data)*unit) != 0 && (pi.Parity == 0 || length%unit != 0) {
			continue
		}
		want := data*pi.SubStripes + pi.Parity
		sl := (&format.ChunkItem{Length: length, Profile: p, StripeLen: uint32(unit), Stripes: make([]format.Stripe, want)}).StripeLength()
		trial := cloneSpace(devs)
		var out []format.Stripe
		for _, d := range byFree(trial, prefer, rank) {
			if len(out) == want {
				break
			}
			if s, ok := take(d, sl); ok {
				out = append(out, s)
			}
		}
		if len(out) == want {
			return out, nil
		}
	}
	return nil, fmt.Errorf("%v chunk of %d MiB: not enough devices with room: %w", p, length/mib, ErrNoSpace)
}
