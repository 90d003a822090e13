package store

import (
	"errors"
	"slices"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/alloc"
	"github.com/ddfs/ddfs/pkg/device"
)

// Online discard (FORMAT.md §3.2 `discard`, §6.10). The rule that keeps it
// safe: nothing is discarded before the commit that freed it is durable,
// and only space free in the committed state is discarded — a pending
// record is a hint, intersected with the free map before use.

// DiscardStats counts what online discard did since the FS was opened.
type DiscardStats struct {
	Discards uint64 // device discard requests
	Bytes    uint64 // device bytes discarded (every copy)
	// PendingBytes is what stays recorded for later (async): metadata in
	// short free ranges, or held back by discard_max_bytes_per_commit.
	PendingBytes uint64
}

// discardAfterCommit runs once the commit is durable and released, the
// space it (or an earlier commit readers held) freed, is free again.
func (tx *Txn) discardAfterCommit(released []alloc.Range) {
	fs := tx.fs
	switch fs.sb.Settings.Discard {
	case format.DiscardSync:
		// btrfs's discard=sync: each freed extent on its own, every copy.
		for _, r := range released {
			for _, p := range fs.splitByBlockGroup(r) {
				fs.discardLogical(fs.blockGroup(p.Start), []alloc.Range{p})
			}
		}
	case format.DiscardAsync:
		if fs.disc.since.IsZero() {
			fs.disc.since = time.Now()
		}
		if fs.pendingData() >= asyncBatchBytes || time.Since(fs.disc.since) >= asyncDelay {
			fs.discardPending()
			fs.disc.since = time.Time{}
		}
	}
}

// Async waits before it discards, as btrfs's async discard does (120 s
// there): until the command ends (Close), asyncDelay has passed since the
// last batch, or asyncBatchBytes of freed data are pending. Waiting merges
// neighbours freed at different times into one discard, and space the
// allocator reuses meanwhile needs no discard at all.
const (
	asyncDelay      = 30 * time.Second
	asyncBatchBytes = 256 << 20
)

// asyncDataMin: async leaves data in free ranges shorter than this
// recorded for a later command or trimtool, as btrfs's async discard
// skips extents under 32 KiB: small scattered frees cost one request
// each and give little back.
const asyncDataMin = 32 << 10

// pendingData is the freed data waiting for a batch: all pending data
// but what the last batch held back.
func (fs *FS) pendingData() uint64 {
	n := fs.allPendingData()
	return n - min(n, fs.disc.held)
}

func (fs *FS) allPendingData() uint64 {
	var n uint64
	for k, b := range fs.disc.bytes {
		if bg := fs.blockGroup(k); bg != nil && bg.Chunk.Type == format.ChunkData {
			n += b
		}
	}
	return n
}

// discardPending discards the pending ranges that are free: data at once,
// metadata only inside a free range of at least the metadata threshold,
// all within the per-commit budget. Ranges no longer free are dropped
// (space reused since; its next free records it again).
func (fs *FS) discardPending() {
	if !fs.disc.fresh || len(fs.readerHold) > 0 {
		return // nothing freed since the last batch (it would repeat itself), or readers may read what is recorded
	}
	fs.disc.fresh = false
	defer func() { fs.disc.held = fs.allPendingData() }()
	budget := fs.sb.Settings.DiscardMaxPerCommit
	if budget == 0 {
		budget = ^uint64(0)
	}
	metaMin := fs.sb.Settings.MetadataMin()
	for _, k := range sortedKeys64(fs.disc.pending) {
		bg := fs.blockGroup(k)
		if bg == nil {
			fs.disc.setPending(k, nil)
			continue
		}
		if err := fs.verifiedFree(bg); err != nil {
			continue // keep it recorded; trimtool or fsck will see the problem
		}
		var now, keep []alloc.Range
		pend := fs.disc.pending[k] // sorted, disjoint
		i := 0
		for _, run := range bg.free.Ranges() { // sorted, disjoint
			for i < len(pend) && pend[i].End() <= run.Start {
				i++ // not free any more: reused since, nothing to discard
			}
			// The pending pieces inside this free run, clipped to it.
			var in []alloc.Range
			for j := i; j < len(pend) && pend[j].Start < run.End(); j++ {
				in = append(in, alloc.Range{Start: max(pend[j].Start, run.Start), Len: min(pend[j].End(), run.End()) - max(pend[j].Start, run.Start)})
			}
			if len(in) == 0 {
				continue
			}
			if isData := bg.Chunk.Type == format.ChunkData; !isData && run.Len < metaMin || isData && run.Len < asyncDataMin {
				keep = append(keep, in...)
				continue
			}
			// One discard from the first to the last piece: the free
			// space between them goes too, so neighbours freed at
			// different times merge.
			span := alloc.Range{Start: in[0].Start, Len: in[len(in)-1].End() - in[0].Start}
			if budget < span.Len {
				fs.disc.fresh = true // the next batch goes on from here
				// Discard what the budget allows, keep the rest.
				cut := budget / uint64(fs.sb.SectorSize) * uint64(fs.sb.SectorSize)
				for _, p := range in {
					if p.End() > span.Start+cut {
						s := max(p.Start, span.Start+cut)
						keep = append(keep, alloc.Range{Start: s, Len: p.End() - s})
					}
				}
				span.Len = cut
			}
			if span.Len > 0 {
				budget -= span.Len
				now = append(now, span)
			}
		}
		if len(now) > 0 && !fs.discardLogical(bg, now) {
			keep = append(keep, now...)
		}
		keep = mergeRanges(keep)
		if !slices.Equal(keep, fs.disc.pending[k]) {
			fs.disc.setPending(k, keep)
		}
	}
}

// discardLogical discards logical ranges of one block group on every copy,
// merging what is adjacent on a device. It reports false when a device
// refused (the ranges then stay pending); errors never fail the commit,
// which is already durable.
func (fs *FS) discardLogical(bg *BlockGroup, rs []alloc.Range) bool {
	phys := map[uint64][]alloc.Range{}
	for _, r := range rs {
		segs, err := bg.Chunk.DiscardMap(r.Start-bg.Chunk.Logical, r.Len)
		if err != nil {
			return false
		}
		for _, s := range segs {
			for _, t := range s.Targets {
				phys[t.DevID] = append(phys[t.DevID], alloc.Range{Start: t.Physical, Len: uint64(s.Len)})
			}
		}
	}
	ok := true
	for _, d := range fs.Vol.Devices() {
		if len(phys[d.ID]) == 0 || fs.disc.unsupported[d.ID] {
			continue
		}
		if fs.disc.failing[d.ID] {
			ok = false
			continue
		}
		for _, p := range mergeRanges(phys[d.ID]) {
			if err := d.Dev.Discard(int64(p.Start), int64(p.Len)); err != nil {
				// Stop bothering this device for the rest of the run.
				if errors.Is(err, device.ErrNotSupported) {
					fs.disc.unsupported[d.ID] = true
				} else {
					fs.disc.failing[d.ID] = true
					ok = false
				}
				break
			}
			fs.disc.stats.Discards++
			fs.disc.stats.Bytes += p.Len
		}
	}
	return ok
}
