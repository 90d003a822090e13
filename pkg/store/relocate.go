package store

import (
	"errors"
	"fmt"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/alloc"
	"github.com/ddfs/ddfs/pkg/volume"
	"golang.org/x/sync/errgroup"
)

// Relocation gives a chunk a new stripe set and keeps its logical range.
//
// Why this design: every tree pointer, file extent, extent item, checksum
// and dedupe entry names logical addresses, so moving a chunk's stripes
// changes none of them; only the chunk item (and the superblock's system
// chunk array for a system chunk) changes. Crash safety follows from the
// commit protocol (FORMAT.md §1.3): the new stripes are placed in device
// space that no chunk of the committed state uses, and the old stripes stay
// reserved until the commit, so until the superblocks change the committed
// state is untouched; the copied bytes are flushed by the commit's first
// flush, before the superblocks that name the new layout. Rewriting
// extents into new chunks (btrfs's relocation) would have to find and
// rewrite every reference to each extent — data back references are
// optional in format version 1 — for no gain in safety.

// relocBuf is the bytes read and written per copy step; relocInFlight
// steps may be read ahead of the writes.
const (
	relocBuf      = 4 << 20
	relocInFlight = 3
)

// restripe moves bg's chunk to a layout of profile p (its own for
// remove/resize) on the devices placement may use, copying every byte the
// committed state or this transaction uses, and records the new chunk
// item. prefer is a devid new stripes go to first (0 none); flags are
// the block group's flags after the move.
func (tx *Txn) restripe(bg *BlockGroup, p format.Profile, prefer uint64, stay map[uint64]bool, flags uint32) error {
	fs := tx.fs
	oldItem := bg.Chunk.ChunkItem
	sl := format.RestripeStripeLen(oldItem, p, fs.sb.NodeSize)
	space := fs.presentSpace()
	pi, _ := p.Info()
	// A balance (nothing leaving, no device preferred) widens a parity
	// chunk narrower than the devices.
	widen := pi.Parity > 0 && oldItem.Profile == p && len(fs.leaving) == 0 && prefer == 0 && len(oldItem.Stripes) < len(space)
	stripes, err := alloc.PlaceRestripe(space, alloc.Restripe{Chunk: oldItem, Profile: p, Prefer: prefer, Rank: fs.tierRank(bg), Stay: stay, StripeLen: sl, Fresh: widen})
	if err != nil {
		return fmt.Errorf("chunk %d (%v %v): %w", bg.Chunk.Logical, oldItem.Type, oldItem.Profile, err)
	}
	item := &format.ChunkItem{Length: oldItem.Length, Type: oldItem.Type, Profile: p, StripeLen: sl,
		SubStripes: uint16(pi.SubStripes), Stripes: stripes}
	if err := item.Validate(); err != nil {
		return fmt.Errorf("chunk %d: relocation produced a bad layout: %w", bg.Chunk.Logical, err)
	}
	if pi.Parity > 0 {
		tx.NeedIncompat(format.IncompatRaid56)
	}
	oldC := &volume.Chunk{Logical: bg.Chunk.Logical, ChunkItem: oldItem}
	newC := &volume.Chunk{Logical: bg.Chunk.Logical, ChunkItem: item}
	kept := map[format.Stripe]bool{}
	for _, s := range oldItem.Stripes {
		kept[s] = true
	}
	fresh := map[uint64][]alloc.Range{}
	for _, s := range stripes {
		if !kept[s] {
			fresh[s.DevID] = append(fresh[s.DevID], alloc.Range{Start: s.Offset, Len: item.StripeLength()})
		}
	}
	if err := tx.copyUsed(bg, oldC, newC, fresh); err != nil {
		return err
	}
	return tx.switchLayout(bg, item, flags)
}

// tierRank ranks devices by the distance of their tier from the tier the
// chunk lies on, so a relocated chunk stays on its tier (metadata on the
// fast devices) when it can; nil when it spans tiers or there is one.
// Tiers are ranked with the devices being vacated, which the chunk may
// lie on.
func (fs *FS) tierRank(bg *BlockGroup) map[uint64]int {
	leaving := fs.leaving
	fs.leaving = nil
	t := alloc.RankTiers(fs.deviceSpace(), fs.sb.Settings.AllocPolicy)
	fs.leaving = leaving
	home := t.On(bg.Chunk.Stripes)
	if home == 0 || len(t.Numbers()) < 2 {
		return nil
	}
	rank := map[uint64]int{}
	for id, n := range t.Of {
		rank[id] = max(n-home, home-n)
	}
	return rank
}

// copyUsed copies the used ranges of bg from the old layout to the fresh
// stripes of the new one. Reads run ahead of writes (relocInFlight
// buffers), so the source and the destination devices work at once.
func (tx *Txn) copyUsed(bg *BlockGroup, oldC, newC *volume.Chunk, fresh map[uint64][]alloc.Range) error {
	fs := tx.fs
	if len(fresh) == 0 {
		return nil
	}
	if err := fs.verifiedFree(bg); err != nil {
		return err
	}
	want := func(t volume.Target) bool {
		for _, r := range fresh[t.DevID] {
			if t.Physical >= r.Start && t.Physical < r.End() {
				return true
			}
		}
		return false
	}
	used := usedRanges(bg.free.Ranges(), newC.Logical, newC.Length)
	if newC.IsParity() {
		return tx.copyUsedParity(bg, oldC, newC, want, used)
	}
	first := fs.leavingCopy(oldC)
	ver, err := fs.newVerifier(oldC, first, tx.dirty)
	if err != nil {
		return err
	}
	type filled struct {
		off uint64
		b   []byte
	}
	spare := make(chan []byte, relocInFlight)
	for i := 0; i < relocInFlight; i++ {
		spare <- make([]byte, relocBuf)
	}
	full := make(chan filled, relocInFlight)
	stop := make(chan struct{})
	var g errgroup.Group
	g.Go(func() error {
		defer close(full)
		for _, r := range used {
			for at := r.Start; at < r.End(); at += relocBuf {
				var b []byte
				select {
				case b = <-spare:
				case <-stop:
					return nil
				}
				b = b[:min(relocBuf, r.End()-at)]
				if err := fs.Vol.ReadChunk(oldC, at, b, first); err != nil {
					return fmt.Errorf("relocate chunk %d: %w", oldC.Logical, err)
				}
				ver.check(at, b)
				full <- filled{at, b}
			}
		}
		return nil
	})
	var werr error
	for f := range full {
		if werr == nil {
			if err := fs.Vol.WriteChunk(newC, f.off, f.b, want); err != nil {
				werr = fmt.Errorf("relocate chunk %d: %w", oldC.Logical, err)
				close(stop)
			}
		}
		spare <- f.b[:cap(f.b)]
	}
	if err := errors.Join(g.Wait(), werr); err != nil {
		return err
	}
	for _, r := range used {
		fs.reloc.Bytes += r.Len
	}
	fs.reloc.Repaired += ver.repaired
	fs.reloc.Unrecovered += ver.unrecovered
	return nil
}

// leavingCopy is the copy of c to read first: the one on a device being
// vacated (as btrfs replace reads the source device; a bad block there is
// then read from the other copies), else copy 0.
func (fs *FS) leavingCopy(c *volume.Chunk) int {
	pi, _ := c.Profile.Info()
	for i, s := range c.Stripes {
		if fs.leaving[s.DevID] && pi.Striped {
			return i % pi.SubStripes // copy j of a stripe group is its stripe j
		}
		if fs.leaving[s.DevID] {
			return i
		}
	}
	return 0
}

// usedRanges is the complement of the free ranges of a chunk at logical
// start of length n, as offsets in the chunk: at most one range more than
// free has, whatever the chunk's length.
func usedRanges(free []alloc.Range, start, n uint64) []alloc.Range {
	var out []alloc.Range
	pos := uint64(0)
	for _, r := range free {
		if r.Start-start > pos {
			out = append(out, alloc.Range{Start: pos, Len: r.Start - start - pos})
		}
		pos = r.End() - start
	}
	if pos < n {
		out = append(out, alloc.Range{Start: pos, Len: n - pos})
	}
	return out
}

// switchLayout makes item the chunk's layout and flags the block group's,
// in memory and in the chunk tree (and the block group item when the
// profile or the flags changed); the commit writes the system chunk array
// from the chunk map.
func (tx *Txn) switchLayout(bg *BlockGroup, item *format.ChunkItem, flags uint32) error {
	fs := tx.fs
	old := bg.Chunk.ChunkItem
	oldFlags := bg.flags
	bg.flags = flags
	if tx.freedStripes == nil {
		tx.freedStripes = map[uint64][]alloc.Range{}
	}
	for _, s := range old.Stripes {
		fs.devItems[s.DevID].BytesUsed -= old.StripeLength()
		tx.freedStripes[s.DevID] = append(tx.freedStripes[s.DevID], alloc.Range{Start: s.Offset, Len: old.StripeLength()})
	}
	for _, s := range item.Stripes {
		fs.devItems[s.DevID].BytesUsed += item.StripeLength()
	}
	if err := fs.Vol.Chunks.ReplaceChunk(bg.Chunk.Logical, item); err != nil {
		return err
	}
	tx.devDirty = true
	fs.tierCache = nil
	if bg.isNew {
		return nil // its items are written at commit from the chunk map
	}
	k := format.Key{ObjectID: format.ChunkObjectID, Type: format.ChunkItemKey, Offset: bg.Chunk.Logical}
	if err := tx.trees[format.ChunkTree].Put(k, format.MarshalChunkItem(item)); err != nil {
		return fmt.Errorf("record chunk %d: %w", bg.Chunk.Logical, err)
	}
	if item.Profile != old.Profile || flags != oldFlags {
		bgi := &format.BlockGroupItem{Used: bg.itemUsed, Type: item.Type, Profile: item.Profile, Flags: flags}
		if err := tx.trees[format.ExtentTree].Put(bgKey(bg.Chunk), format.MarshalBlockGroupItem(bgi)); err != nil {
			return fmt.Errorf("record block group %d: %w", bg.Chunk.Logical, err)
		}
	}
	return nil
}
