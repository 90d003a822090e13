package alloc

import (
	"fmt"
	"sort"
	"syscall"

	"github.com/ddfs/ddfs/format"
)

// ErrNoSpace: no device space is left for what was asked. It is ENOSPC
// itself, so every layer and the CLIs report it the usual way.
var ErrNoSpace error = syscall.ENOSPC

// Reserved device ranges chunks never use: the first MiB (boot loaders,
// partition tables, the primary superblock) and the superblock copies.
var reserved = []Range{{0, 1 << 20}, {64 << 20, 64 << 10}, {256 << 30, 64 << 10}}

// DeviceSpace is what placement knows about one device.
type DeviceSpace struct {
	DevID      uint64
	UUID       [16]byte
	Size       uint64
	Used       []Range // physical ranges taken by chunk stripes
	Rotational bool
	SeekSpeed  uint64 // random seeks per second, 0 unknown
	Bandwidth  uint64 // sequential bytes per second, 0 unknown
	Tier       uint8  // explicit tier (1 fastest), 0 derived from speed
}

// Holes returns the free physical ranges of d, largest first.
func (d *DeviceSpace) Holes() []Range {
	taken := append(append([]Range(nil), reserved...), d.Used...)
	sort.Slice(taken, func(i, j int) bool { return taken[i].Start < taken[j].Start })
	var holes []Range
	pos := uint64(0)
	for _, r := range taken {
		if r.Start > pos && pos < d.Size {
			holes = append(holes, Range{pos, min(r.Start, d.Size) - pos})
		}
		pos = max(pos, r.End())
	}
	if pos < d.Size {
		holes = append(holes, Range{pos, d.Size - pos})
	}
	sort.SliceStable(holes, func(i, j int) bool { return holes[i].Len > holes[j].Len })
	return holes
}

// Request asks for a new chunk.
type Request struct {
	Type    format.ChunkType
	Profile format.Profile
	// StripeSize is the wanted device bytes per stripe of an unstriped
	// chunk: its logical length. A striped chunk (raid0, raid10) spreads
	// that length over its data stripes, as btrfs caps a chunk's size,
	// not its stripes'. Placement may shrink it down to MinStripe to fit
	// the holes.
	StripeSize uint64
	MinStripe  uint64
	Policy     format.AllocPolicy
	// Compact packs chunks at the lowest offsets (dup copies side by side),
	// so a device can later be cut after its last chunk (mkfs --shrink).
	Compact bool
	// Tier is the tier number a data chunk should go to (0: the policy's
	// default, the slowest tier); metadata ignores it.
	Tier int
	// Strict: only the first tier of the policy's order, no fallback
	// (the store tries the tier's existing chunks before falling back).
	Strict bool
}

// Placement is the result: the stripes of the chunk and its length.
type Placement struct {
	Stripes []format.Stripe
	Length  uint64
	// Fallback is set when the policy's preferred devices could not take
	// the chunk and it went to other tiers or all devices instead.
	Fallback bool
}

const mib = 1 << 20

// Place chooses devices and offsets for a new chunk: on the tiers of the
// policy's order, the first that can hold it, else on all devices
// (Fallback set when not on the first tier). Within the chosen devices,
// placeOn takes those with the most free space.
func Place(devs []DeviceSpace, req Request) (*Placement, error) {
	pi, ok := req.Profile.Info()
	if !ok || !req.Profile.Supported() {
		return nil, fmt.Errorf("profile %v not supported", req.Profile)
	}
	tiers := RankTiers(devs, req.Policy)
	var firstErr error
	for i, n := range tiers.Order(req.Type, req.Tier) {
		p, err := placeOn(tiers.devices(devs, n), req, pi)
		if err == nil {
			p.Fallback = i > 0
			return p, nil
		}
		if firstErr == nil {
			firstErr = err
			if len(tiers.nums) > 1 {
				firstErr = fmt.Errorf("tier %d: %w", n, err)
			}
		}
		if req.Strict {
			return nil, firstErr
		}
	}
	if len(tiers.nums) <= 1 {
		if firstErr != nil {
			return nil, firstErr
		}
		return placeOn(devs, req, pi)
	}
	p, err := placeOn(devs, req, pi)
	if err != nil {
		return nil, err
	}
	p.Fallback = true
	return p, nil
}

type candidate struct {
	dev   *DeviceSpace
	holes []Range
}

func placeOn(devs []DeviceSpace, req Request, pi format.ProfileInfo) (*Placement, error) {
	var cands []candidate
	for i := range devs {
		h := devs[i].Holes()
		if len(h) > 0 && h[0].Len >= req.MinStripe {
			cands = append(cands, candidate{&devs[i], h})
		}
	}
	// Most free space first (btrfs's rule): largest hole, then devid.
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].holes[0].Len != cands[j].holes[0].Len {
			return cands[i].holes[0].Len > cands[j].holes[0].Len
		}
		return cands[i].dev.DevID < cands[j].dev.DevID
	})
	n := pi.Copies
	switch {
	case req.Profile == format.ProfileDup:
		n = 1
	case req.Profile == format.ProfileRaid0 || pi.Parity > 0:
		n = len(cands)
	case req.Profile == format.ProfileRaid10:
		n = len(cands) &^ 1
	}
	if n == 0 || len(cands) < n || (req.Profile != format.ProfileDup && n < pi.MinDevices) {
		return nil, fmt.Errorf("%v %v chunk needs %d devices with %d MiB free, %d have it: %w",
			req.Type, req.Profile, pi.MinDevices, req.MinStripe/mib, len(cands), ErrNoSpace)
	}
	cands = cands[:n]
	size := req.StripeSize
	if pi.Striped {
		size = max(size/uint64(pi.DataStripes(n)), req.MinStripe)
	}
	for _, c := range cands {
		avail := c.holes[0].Len
		if req.Profile == format.ProfileDup {
			avail = dupAvail(c.holes)
		}
		size = min(size, avail)
	}
	size = size / mib * mib
	if size < req.MinStripe || size == 0 {
		return nil, fmt.Errorf("%v %v chunk: largest free range %d MiB below %d MiB: %w", req.Type, req.Profile, size/mib, req.MinStripe/mib, ErrNoSpace)
	}
	p := &Placement{}
	for _, c := range cands {
		if req.Profile == format.ProfileDup {
			a, b := dupOffsets(c.holes, size)
			if req.Compact {
				a, b = compactDup(c.holes, size)
			}
			p.Stripes = append(p.Stripes, format.Stripe{DevID: c.dev.DevID, Offset: a, DevUUID: c.dev.UUID},
				format.Stripe{DevID: c.dev.DevID, Offset: b, DevUUID: c.dev.UUID})
			continue
		}
		p.Stripes = append(p.Stripes, format.Stripe{DevID: c.dev.DevID, Offset: lowestFit(c.holes, size), DevUUID: c.dev.UUID})
	}
	p.Length = size
	if pi.Striped {
		p.Length = size * uint64(pi.DataStripes(len(p.Stripes)))
	}
	return p, nil
}

// dupAvail is the largest stripe size that fits twice on one device.
func dupAvail(holes []Range) uint64 {
	if len(holes) == 0 {
		return 0
	}
	best := holes[0].Len / 2
	if len(holes) > 1 {
		best = max(best, holes[1].Len)
	}
	return best
}

// dupOffsets places two copies far apart: the first at the low end of the
// lowest hole that fits, the second at the high end of the highest.
func dupOffsets(holes []Range, size uint64) (uint64, uint64) {
	byStart := append([]Range(nil), holes...)
	sort.Slice(byStart, func(i, j int) bool { return byStart[i].Start < byStart[j].Start })
	lo, hi := -1, -1
	for i, h := range byStart {
		if h.Len >= size {
			if lo < 0 {
				lo = i
			}
			hi = i
		}
	}
	// Stripe offsets stay 64 KiB aligned: hole starts are, sizes are MiB multiples.
	const align = format.DefaultStripeLen
	h := byStart[hi]
	second := (h.End() - size) / align * align
	if lo == hi {
		return h.Start, second
	}
	return byStart[lo].Start, max(h.Start, second)
}

// lowestFit is the start of the lowest hole that holds size bytes, so a
// device fills from its start and chunks stay close together.
func lowestFit(holes []Range, size uint64) uint64 {
	best := ^uint64(0)
	for _, h := range holes {
		if h.Len >= size && h.Start < best {
			best = h.Start
		}
	}
	return best
}

// compactDup places both dup copies as low as possible: in the lowest
// hole that holds both, or the lowest two holes that hold one each.
func compactDup(holes []Range, size uint64) (uint64, uint64) {
	byStart := append([]Range(nil), holes...)
	sort.Slice(byStart, func(i, j int) bool { return byStart[i].Start < byStart[j].Start })
	var found []uint64
	for _, h := range byStart {
		for off := h.Start; off+size <= h.End() && len(found) < 2; off += size {
			found = append(found, off)
		}
		if len(found) == 2 {
			break
		}
	}
	if len(found) < 2 {
		return dupOffsets(holes, size)
	}
	return found[0], found[1]
}
