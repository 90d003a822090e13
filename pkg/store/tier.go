package store

import (
	"errors"
	"fmt"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/alloc"
)

// tiers ranks the devices for the current policy; the ranking is kept
// until a device or the policy changes.
func (fs *FS) tiers() alloc.Tiers {
	p := fs.sb.Settings.AllocPolicy
	if fs.tierCache == nil || fs.tierCache.Policy != p {
		t := alloc.RankTiers(fs.deviceSpace(), p)
		fs.tierCache = &t
		fs.tierEpoch++
	}
	return *fs.tierCache
}

// bgTier is the tier a block group's chunk lies on (0: it spans tiers).
func (fs *FS) bgTier(bg *BlockGroup) int {
	t := fs.tiers()
	if bg.tierEpoch != fs.tierEpoch {
		bg.tier, bg.tierEpoch = t.On(bg.Chunk.Stripes), fs.tierEpoch
	}
	return bg.tier
}

// DeviceTiers maps each devid to its tier as the tiered policy ranks
// the set (explicit tier, else by speed; 1 the fastest).
func (fs *FS) DeviceTiers() map[uint64]int {
	return alloc.RankTiers(fs.deviceSpace(), format.AllocTiered).Of
}

// AllocDataOn reserves n bytes of data space (sector aligned) for a file
// that asks for data tier tier (0: the policy's default, the slowest).
//
// With the tiered policy, or when n is at most the small_data_max setting,
// it walks the policy's tier order: on each tier, first the data groups
// already there, then a new chunk on that tier only; after the last tier
// any data group with room, then a chunk on all devices. Small extents try
// the fastest (metadata) tier before the file's own. Chunks that land
// neither on the file's tier nor, for small extents, on the fastest are
// marked as fallbacks.
func (tx *Txn) AllocDataOn(n uint64, tier uint8) (uint64, error) {
	fs := tx.fs
	align := uint64(fs.sb.SectorSize)
	s := fs.sb.Settings
	small := s.SmallDataMax > 0 && n <= s.SmallDataMax && s.AllocPolicy != format.AllocClassic
	if s.AllocPolicy != format.AllocTiered && !small {
		return tx.allocExtent(format.ChunkData, n, align)
	}
	tiers := fs.tiers()
	order := tiers.Order(format.ChunkData, int(tier))
	if len(order) == 0 {
		return 0, fmt.Errorf("allocate %d bytes of data: no devices: %w", n, ErrNoSpace)
	}
	home := order[0]
	if small && home != tiers.Fastest() {
		order = append([]int{tiers.Fastest()}, order...)
	}
	for _, tn := range order {
		at, ok, err := tx.takeFrom(format.ChunkData, n, align, func(bg *BlockGroup) bool { return fs.bgTier(bg) == tn })
		if err != nil || ok {
			return at, err
		}
		if tx.tierFull[tn] {
			continue
		}
		if small && tn == tiers.Fastest() && tn != home && !fs.tierHasReserve(tiers, tn) {
			continue // keep the rest of the metadata tier for metadata
		}
		bg, err := tx.newChunkOn(format.ChunkData, tn, true)
		if errors.Is(err, ErrNoSpace) {
			if tx.tierFull == nil {
				tx.tierFull = map[int]bool{}
			}
			// Device space comes back only with a commit that drops a
			// chunk, so the tier stays full for this transaction.
			tx.tierFull[tn] = true
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("allocate %d bytes of data on tier %d: %w", n, tn, err)
		}
		if tn != home && !(small && tn == tiers.Fastest()) {
			bg.flags |= format.BlockGroupFallback
			tx.Fallbacks++
		}
		at, ok, err = tx.takeFrom(format.ChunkData, n, align, func(b *BlockGroup) bool { return b == bg })
		if err != nil || ok {
			return at, err
		}
	}
	return tx.allocExtent(format.ChunkData, n, align)
}

// smallDataReserve is the share of the metadata tier's device space that
// small data never takes for new chunks (ZFS keeps 25% of its special
// class for metadata the same way): metadata must not be pushed off the
// fast tier by the small files sent there.
const smallDataReserve = 4 // 1/4

// tierHasReserve reports whether tier tn has more unallocated device
// space than the reserve.
func (fs *FS) tierHasReserve(tiers alloc.Tiers, tn int) bool {
	var size, free uint64
	for _, d := range fs.deviceSpace() {
		if tiers.Of[d.DevID] != tn {
			continue
		}
		size += d.Size
		for _, h := range d.Holes() {
			free += h.Len
		}
	}
	return free > size/smallDataReserve
}
