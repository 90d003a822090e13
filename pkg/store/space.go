package store

import (
	"errors"
	"fmt"
	"sort"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/alloc"
	"github.com/ddfs/ddfs/pkg/btree"
	"github.com/ddfs/ddfs/pkg/volume"
)

// BlockGroup is the allocation state of one chunk.
type BlockGroup struct {
	Chunk *volume.Chunk
	// Used is the number of bytes referenced by the running state.
	Used uint64
	// itemUsed is what the block group item on disk says.
	itemUsed uint64
	// free is the free-space map, nil until first needed.
	free *alloc.RangeSet
	// lazy: free was loaded for allocation only and not verified whole;
	// each block taken from it is checked (lazyfree.go). lazyChecked
	// counts those checks.
	lazy        bool
	lazyChecked int
	// isNew: created by the running transaction, no items on disk yet.
	isNew bool
	// flags are the block group item's (BlockGroupFallback).
	flags uint32
	// tier is the device tier the chunk lies on (0: spans tiers), valid
	// while tierEpoch matches the filesystem's.
	tier, tierEpoch int
}

// Fallback reports whether the policy placed the chunk outside the
// devices it preferred (the block group item's BlockGroupFallback).
func (bg *BlockGroup) Fallback() bool { return bg.flags&format.BlockGroupFallback != 0 }

// Free returns the free bytes (Length - Used).
func (bg *BlockGroup) Free() uint64 { return bg.Chunk.Length - bg.Used }

// noItem is the itemUsed of a block group without an item on disk (no
// chunk holds 2^64-1 bytes).
const noItem = ^uint64(0)

func bgKey(c *volume.Chunk) format.Key {
	return format.Key{ObjectID: c.Logical, Type: format.BlockGroupKey, Offset: c.Length}
}

func (fs *FS) loadBlockGroups() error {
	ext := fs.Tree(format.ExtentTree)
	for _, c := range fs.Vol.Chunks.All() {
		b, err := ext.Get(bgKey(c))
		if fs.repair && errors.Is(err, btree.ErrNotFound) {
			// No item: itemUsed differs from any Used, so the next
			// commit writes one.
			fs.bgs = append(fs.bgs, &BlockGroup{Chunk: c, itemUsed: noItem})
			continue
		}
		if err != nil {
			return fmt.Errorf("block group of chunk %d: %w", c.Logical, err)
		}
		item, err := format.UnmarshalBlockGroupItem(b)
		if err != nil && fs.repair {
			// fsck reports it and rebuilds it from the chunk (BG_MISSING).
			fs.bgs = append(fs.bgs, &BlockGroup{Chunk: c, itemUsed: noItem})
			continue
		}
		if err != nil {
			return fmt.Errorf("block group of chunk %d: %w", c.Logical, err)
		}
		if item.Type != c.Type || item.Profile != c.Profile || item.Used > c.Length {
			return fmt.Errorf("block group %d: %v/%v used %d does not match its chunk: %w", c.Logical, item.Type, item.Profile, item.Used, ErrCorrupt)
		}
		fs.bgs = append(fs.bgs, &BlockGroup{Chunk: c, Used: item.Used, itemUsed: item.Used, flags: item.Flags})
	}
	return nil
}

func (fs *FS) blockGroup(logical uint64) *BlockGroup {
	i := sort.Search(len(fs.bgs), func(i int) bool { return fs.bgs[i].Chunk.End() > logical })
	if i < len(fs.bgs) && fs.bgs[i].Chunk.Logical <= logical {
		return fs.bgs[i]
	}
	return nil
}

// loadFree builds a block group's free-space map from the committed
// extent tree and holds it against the other trees (verifyFree): space
// they use is never handed out. Reading only committed nodes makes this
// safe in the middle of a tree operation; extents allocated by the
// running transaction are never in a group that was not loaded before
// they were allocated.
func (fs *FS) loadFree(bg *BlockGroup) error {
	free, err := fs.rawFree(bg)
	if err != nil {
		return err
	}
	if err := fs.verifyFree(bg, free); err != nil {
		return err
	}
	// Pinned ranges of this transaction are still in the committed tree,
	// so they count as used here, as they must until the commit.
	bg.free, bg.lazy = free, false
	return nil
}

// rawFree is the block group's free space per the extent tree alone.
func (fs *FS) rawFree(bg *BlockGroup) (*alloc.RangeSet, error) {
	free := &alloc.RangeSet{}
	c := bg.Chunk
	_ = free.Add(c.Logical, c.Length)
	if !bg.isNew {
		ext := fs.Tree(format.ExtentTree)
		start := format.Key{ObjectID: c.Logical}
		end := format.Key{ObjectID: c.End()}
		err := ext.Scan(start, end, func(it format.Item) (bool, error) {
			var n uint64
			switch it.Key.Type {
			case format.ExtentItemKey:
				n = it.Key.Offset
			case format.MetadataItemKey:
				n = uint64(fs.sb.NodeSize)
			default:
				return true, nil
			}
			if err := free.Remove(it.Key.ObjectID, n); err != nil {
				return false, fmt.Errorf("extent %v in block group %d: %v: %w", it.Key, c.Logical, err, ErrCorrupt)
			}
			return true, nil
		})
		if err != nil {
			return nil, err
		}
	}
	// Space commits freed while readers beside may still read it is out
	// of every map until released (readers.go), also of a map loaded
	// after the free.
	for _, h := range fs.readerHold {
		for _, r := range h.ranges {
			free.RemoveOverlap(r.Start, r.Len)
		}
	}
	return free, nil
}

// chunkSizes are the wanted stripe sizes per chunk type (capped at a
// tenth of the filesystem, as btrfs does).
var chunkSizes = map[format.ChunkType]uint64{
	format.ChunkData:     1 << 30,
	format.ChunkMetadata: 256 << 20,
	format.ChunkSystem:   8 << 20,
}

const minStripe = 4 << 20

// compactSizes are the chunk sizes of a compact filesystem (mkfs
// --shrink): small, so the last chunk of each type wastes little.
var compactSizes = map[format.ChunkType]uint64{
	format.ChunkData:     64 << 20,
	format.ChunkMetadata: 16 << 20,
	format.ChunkSystem:   4 << 20,
}

func (fs *FS) profileFor(t format.ChunkType) format.Profile {
	switch t {
	case format.ChunkData:
		return fs.dataProfile
	default:
		return fs.metaProfile
	}
}

// stripeWant is the wanted stripe size of a new chunk of type t on a
// filesystem of basis bytes: a tenth of it, within chunkSizes (or
// compactSizes) and at least minStripe.
func (fs *FS) stripeWant(t format.ChunkType, basis uint64) uint64 {
	want := min(chunkSizes[t], max(basis/10/mib*mib, minStripe))
	if fs.Compact {
		want = min(want, compactSizes[t])
	}
	return want
}

// presentBytes is what the present devices hold at profile p: their size
// over its copy factor. A degraded set sizes its new chunks from it, as
// the chunks of one transaction (data, metadata, system, dup or single)
// must all fit on the devices left.
func presentBytes(space []alloc.DeviceSpace, p format.Profile) uint64 {
	var n uint64
	for _, d := range space {
		n += d.Size
	}
	pi, _ := p.Info()
	return n / uint64(max(pi.Copies, 1))
}

// deviceSpace describes every device for the placement policy.
func (fs *FS) deviceSpace() []alloc.DeviceSpace {
	var out []alloc.DeviceSpace
	for _, d := range fs.DevItems() {
		if fs.leaving[d.DevID] {
			continue
		}
		ds := alloc.DeviceSpace{DevID: d.DevID, UUID: d.UUID, Size: d.TotalBytes, Rotational: d.Rotational,
			SeekSpeed: d.SeekSpeed, Bandwidth: d.Bandwidth, Tier: d.Tier}
		if c, ok := fs.sizeCap[d.DevID]; ok {
			ds.Size = min(ds.Size, c)
		}
		for _, e := range fs.Vol.Chunks.DevExtents(d.DevID) {
			ds.Used = append(ds.Used, alloc.Range{Start: e.Physical, Len: e.Length})
		}
		if fs.tx != nil {
			ds.Used = append(ds.Used, fs.tx.freedStripes[d.DevID]...)
		}
		out = append(out, ds)
	}
	return out
}

// newChunk places and adds a chunk of type t; its items reach the trees
// at commit.
func (tx *Txn) newChunk(t format.ChunkType) (*BlockGroup, error) {
	return tx.newChunkOn(t, 0, false)
}

// newChunkOn places a chunk of type t preferring tier (data only; 0 the
// policy's default); strict allows only that tier.
func (tx *Txn) newChunkOn(t format.ChunkType, tier int, strict bool) (*BlockGroup, error) {
	fs := tx.fs
	profile := fs.profileFor(t)
	space := fs.presentSpace()
	degraded := false
	basis := fs.sb.TotalBytes
	if fs.Degraded() {
		profile, degraded = degradedProfile(t, profile, len(space))
		basis = presentBytes(space, profile)
	}
	want := fs.stripeWant(t, basis)
	p, err := alloc.Place(space, alloc.Request{Type: t, Profile: profile, StripeSize: want, MinStripe: minStripe, Policy: fs.sb.Settings.AllocPolicy, Compact: fs.Compact, Tier: tier, Strict: strict})
	if err != nil {
		return nil, err
	}
	c := &format.ChunkItem{Length: p.Length, Type: t, Profile: profile, StripeLen: format.DefaultStripeLen, Stripes: p.Stripes}
	pi, _ := profile.Info()
	if pi.Parity > 0 {
		c.StripeLen = format.ParityStripeLenFor(fs.sb.NodeSize)
		tx.NeedIncompat(format.IncompatRaid56)
	}
	c.SubStripes = uint16(pi.SubStripes)
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("placement produced a bad chunk: %w", err)
	}
	logical := max(fs.Vol.Chunks.End(), 1<<20)
	if err := fs.Vol.AddChunk(logical, c); err != nil {
		return nil, err
	}
	ch, _ := fs.Vol.Chunks.Lookup(logical)
	for _, s := range c.Stripes {
		fs.devItems[s.DevID].BytesUsed += ch.StripeLength()
	}
	bg := &BlockGroup{Chunk: ch, isNew: true}
	// A chunk below the set's profile (degraded) is listed by df like
	// any chunk placed outside the policy's preference.
	p.Fallback = p.Fallback || degraded
	if p.Fallback {
		bg.flags |= format.BlockGroupFallback
	}
	if err := fs.loadFree(bg); err != nil {
		return nil, err
	}
	fs.bgs = append(fs.bgs, bg) // logical grows, so the order holds
	tx.newChunks = append(tx.newChunks, bg)
	if p.Fallback {
		tx.Fallbacks++
	}
	return bg, nil
}

// allocExtent takes n bytes (aligned to align) from a block group of type
// t, creating a chunk when every group is full.
func (tx *Txn) allocExtent(t format.ChunkType, n, align uint64) (uint64, error) {
	for pass := 0; pass < 2; pass++ {
		at, ok, err := tx.takeFrom(t, n, align, nil)
		if err != nil || ok {
			return at, err
		}
		if pass == 0 {
			if _, err := tx.newChunk(t); err != nil {
				return 0, fmt.Errorf("allocate %d bytes of %v: %w", n, t, err)
			}
		}
	}
	return 0, fmt.Errorf("allocate %d bytes of %v: %w", n, t, ErrNoSpace)
}

// takeFrom takes n bytes from a block group of type t that accept (nil:
// any) allows and that has room, in logical order: a commit's new nodes
// then land near the ones it frees (its extent-tree items in the same
// leaves). A group whose free map is not loaded yet is loaded on the way
// only when a good part of it is free (roomy); the nearly full ones come
// last, the emptiest first. Loading a map scans the group's extent
// items: a commit whose old nodes were freed a node or two into each of
// many nearly full groups loaded six of them at 1M files (12 ms).
func (tx *Txn) takeFrom(t format.ChunkType, n, align uint64, accept func(*BlockGroup) bool) (uint64, bool, error) {
	fs := tx.fs
	fits := func(bg *BlockGroup) bool {
		return bg.Chunk.Type == t && bg.Free() >= n && (accept == nil || accept(bg)) && fs.writableGroup(bg)
	}
	for _, bg := range fs.bgs {
		if !fits(bg) || bg.free == nil && bg.Free() < max(n, bg.Chunk.Length/roomyPart) {
			continue
		}
		if bg.free == nil {
			if err := fs.loadForTaking(bg); err != nil {
				return 0, false, err
			}
		}
		if at, ok, err := tx.takeFromGroup(bg, n, align); ok || err != nil {
			return at, ok, err
		}
	}
	for {
		var best *BlockGroup
		for _, bg := range fs.bgs {
			if bg.free == nil && fits(bg) && (best == nil || bg.Free() > best.Free()) {
				best = bg
			}
		}
		if best == nil {
			return 0, false, nil
		}
		if err := fs.loadForTaking(best); err != nil {
			return 0, false, err
		}
		if at, ok, err := tx.takeFromGroup(best, n, align); ok || err != nil {
			return at, ok, err
		}
	}
}

// loadForTaking loads bg's free map for allocation: lazily where it may
// (lazyfree.go), else verified whole.
func (fs *FS) loadForTaking(bg *BlockGroup) error {
	if fs.lazyEligible(bg) {
		return fs.loadFreeLazy(bg)
	}
	return fs.loadFree(bg)
}

// roomyPart: a group with at least 1/roomyPart of its bytes free is
// worth loading in logical order.
const roomyPart = 64

// takeFromGroup takes n bytes from bg's loaded free map (checked on
// their own when the map is lazy).
func (tx *Txn) takeFromGroup(bg *BlockGroup, n, align uint64) (uint64, bool, error) {
	t := bg.Chunk.Type
	at, ok := tx.takeIn(bg, n, align, tx.hint[t])
	if !ok {
		return 0, false, nil
	}
	if err := tx.fs.checkTaken(bg, at, n); err != nil {
		return 0, false, err
	}
	bg.Used += n
	tx.hint[t] = at + n
	return at, true, nil
}

// freeExtent releases [logical, +n). Space allocated by the running
// transaction is reusable at once; older space only after the commit.
func (tx *Txn) freeExtent(logical, n uint64, allocatedNow bool) error {
	bg := tx.fs.blockGroup(logical)
	if bg == nil || bg.Used < n {
		return fmt.Errorf("free of [%d,+%d) outside any block group or above its use: %w", logical, n, ErrCorrupt)
	}
	bg.Used -= n
	if allocatedNow {
		return bg.free.Add(logical, n)
	}
	tx.pinned = append(tx.pinned, alloc.Range{Start: logical, Len: n})
	return nil
}

// AllocData reserves n bytes of data space (sector aligned) where the
// policy puts data by default.
func (tx *Txn) AllocData(n uint64) (uint64, error) {
	return tx.AllocDataOn(n, 0)
}

// FreeData releases a data extent. allocatedNow says it was allocated by
// this transaction (so nothing committed can reference it).
func (tx *Txn) FreeData(logical, n uint64, allocatedNow bool) error {
	return tx.freeExtent(logical, n, allocatedNow)
}

// ExtendData grows the data extent [logical, +diskLen) by n bytes,
// taking [logical+diskLen, +n) when that space is free in the extent's
// own writable data group: a file written in small appends then keeps
// one extent instead of one per write (each an item in three trees that
// a later random write dirties). False when it cannot; the caller
// allocates elsewhere. An extent the small-data tier holds does not
// grow past that tier's bound.
func (tx *Txn) ExtendData(logical, diskLen, n uint64) (bool, error) {
	end := logical + diskLen
	if diskLen == 0 || n == 0 || end < logical || end+n < end {
		return false, nil
	}
	s := tx.fs.sb.Settings
	if s.SmallDataMax > 0 && s.AllocPolicy != format.AllocClassic && diskLen <= s.SmallDataMax && diskLen+n > s.SmallDataMax {
		return false, nil
	}
	bg := tx.fs.blockGroup(logical)
	if bg == nil || bg.Chunk.Type != format.ChunkData || end+n > bg.Chunk.Logical+bg.Chunk.Length ||
		!tx.fs.writableGroup(bg) || bg.Free() < n {
		return false, nil
	}
	if bg.free == nil {
		if err := tx.fs.loadFree(bg); err != nil {
			return false, err
		}
	}
	if !bg.free.Contains(end, n) || (bg.rowLen() > 0 && !tx.rowsUsable(bg, end, n)) {
		return false, nil
	}
	if err := bg.free.Remove(end, n); err != nil {
		return false, err
	}
	tx.openRowsOf(bg, end, n)
	bg.Used += n
	tx.hint[format.ChunkData] = end + n
	return true, nil
}

var _ btree.Store = (*Txn)(nil)

// FreeRanges returns the free logical ranges of a block group as of the
// committed state per the extent tree alone (trimtool holds them against
// the trees itself, range by range).
func (fs *FS) FreeRanges(bg *BlockGroup) ([]alloc.Range, error) {
	if bg.free != nil {
		if err := fs.verifiedFree(bg); err != nil {
			return nil, err
		}
		return bg.free.Ranges(), nil
	}
	free, err := fs.rawFree(bg)
	if err != nil {
		return nil, err
	}
	return free.Ranges(), nil
}

// DeviceSpace describes every device for placement and for trim: size and
// the physical ranges chunk stripes use.
func (fs *FS) DeviceSpace() []alloc.DeviceSpace { return fs.deviceSpace() }
