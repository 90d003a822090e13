package store

import (
	"errors"
	"fmt"
	"slices"
	"sort"

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

// discardState is the async bookkeeping, per block group (by its logical
// address): pending is what the discard tree should hold, recorded what it
// holds as of the last fold, touched the groups where they may differ (so
// a commit reconciles only those).
type discardState struct {
	pending  map[uint64][]alloc.Range // sorted and merged after a fold
	recorded map[uint64][]alloc.Range
	touched  map[uint64]bool
	stats    DiscardStats
	// unsupported devices get no discards (their ranges are dropped);
	// failing ones neither, but their ranges stay recorded for trimtool.
	unsupported, failing map[uint64]bool
}

func newDiscardState() discardState {
	return discardState{pending: map[uint64][]alloc.Range{}, recorded: map[uint64][]alloc.Range{}, touched: map[uint64]bool{},
		unsupported: map[uint64]bool{}, failing: map[uint64]bool{}}
}

// dirty: some records differ from what is pending.
func (d *discardState) dirty() bool { return len(d.touched) > 0 }

// DiscardStats returns the online discard counters.
func (fs *FS) DiscardStats() DiscardStats {
	s := fs.disc.stats
	s.PendingBytes = 0
	for _, rs := range fs.disc.pending {
		for _, r := range rs {
			s.PendingBytes += r.Len
		}
	}
	return s
}

// loadDiscardRecords reads the discard tree into the pending set.
func (fs *FS) loadDiscardRecords() error {
	if fs.sb.Roots.Root(format.DiscardTree).Logical == 0 {
		return nil
	}
	t := fs.Tree(format.DiscardTree)
	err := t.Scan(format.Key{}, format.Key{ObjectID: ^uint64(0), Type: 255, Offset: ^uint64(0)}, func(it format.Item) (bool, error) {
		r := alloc.Range{Start: it.Key.ObjectID, Len: it.Key.Offset}
		bg := fs.blockGroup(r.Start)
		if it.Key.Type != format.DiscardItemKey || r.Len == 0 || bg == nil || r.End() > bg.Chunk.End() || r.End() < r.Start {
			return false, fmt.Errorf("discard record %v: %w", it.Key, ErrCorrupt)
		}
		k := bg.Chunk.Logical
		fs.disc.recorded[k] = append(fs.disc.recorded[k], r)
		fs.disc.pending[k] = append(fs.disc.pending[k], r)
		return true, nil
	})
	for k, rs := range fs.disc.pending {
		if m := mergeRanges(append([]alloc.Range(nil), rs...)); len(m) != len(rs) {
			fs.disc.pending[k] = m
			fs.disc.touched[k] = true // overlapping records: rewrite them merged
		}
	}
	return err
}

// ClearDiscardRecords forgets every pending range and deletes the records
// in a transaction of its own (trimtool, after discarding all free space).
func (fs *FS) ClearDiscardRecords() error {
	if len(fs.disc.recorded) == 0 && len(fs.disc.pending) == 0 {
		return nil
	}
	for k := range fs.disc.recorded {
		fs.disc.touched[k] = true
	}
	fs.disc.pending = map[uint64][]alloc.Range{}
	tx, err := fs.Begin()
	if err != nil {
		return err
	}
	return tx.Commit()
}

// recordFreed adds the ranges this transaction frees to the pending set
// (async only); reconcileDiscardTree then makes the tree match it. Both run
// inside the commit's fold loop, so the records are durable with the frees.
func (tx *Txn) recordFreed() {
	fs := tx.fs
	if fs.sb.Settings.Discard != format.DiscardAsync && (tx.settings == nil || tx.settings.Discard != format.DiscardAsync) {
		return
	}
	for _, r := range tx.pinned[tx.pinnedRecorded:] {
		for _, p := range fs.splitByBlockGroup(r) {
			k := fs.blockGroup(p.Start).Chunk.Logical
			fs.disc.pending[k] = append(fs.disc.pending[k], p)
			fs.disc.touched[k] = true
		}
	}
	tx.pinnedRecorded = len(tx.pinned)
}

// reconcileDiscardTree rewrites the records of the touched block groups:
// deletes those no longer pending, inserts the new ones.
func (tx *Txn) reconcileDiscardTree() (bool, error) {
	fs := tx.fs
	if !fs.disc.dirty() {
		return false, nil
	}
	t := tx.trees[format.DiscardTree]
	changed := false
	for _, k := range sortedKeys64(fs.disc.touched) {
		delete(fs.disc.touched, k)
		want := mergeRanges(fs.disc.pending[k])
		if len(want) == 0 {
			delete(fs.disc.pending, k)
		} else {
			fs.disc.pending[k] = want
		}
		have := map[alloc.Range]bool{}
		for _, r := range fs.disc.recorded[k] {
			have[r] = true
		}
		for _, r := range want {
			if have[r] {
				delete(have, r)
				continue
			}
			if err := t.Insert(discardKey(r), nil); err != nil {
				return false, fmt.Errorf("record discard [%d,+%d): %w", r.Start, r.Len, err)
			}
			changed = true
		}
		for r := range have {
			if err := t.Delete(discardKey(r)); err != nil {
				return false, fmt.Errorf("drop discard record [%d,+%d): %w", r.Start, r.Len, err)
			}
			changed = true
		}
		if len(want) == 0 {
			delete(fs.disc.recorded, k)
		} else {
			fs.disc.recorded[k] = append([]alloc.Range(nil), want...)
		}
	}
	return changed, nil
}

func discardKey(r alloc.Range) format.Key {
	return format.Key{ObjectID: r.Start, Type: format.DiscardItemKey, Offset: r.Len}
}

// discardAfterCommit runs once the commit is durable and its pinned space
// is free again.
func (tx *Txn) discardAfterCommit() {
	fs := tx.fs
	switch fs.sb.Settings.Discard {
	case format.DiscardSync:
		// btrfs's discard=sync: each freed extent on its own, every copy.
		for _, r := range tx.pinned {
			for _, p := range fs.splitByBlockGroup(r) {
				fs.discardLogical(fs.blockGroup(p.Start), []alloc.Range{p})
			}
		}
	case format.DiscardAsync:
		if fs.pendingData() >= asyncBatchBytes {
			fs.discardPending()
		}
	}
}

// asyncBatchBytes is how much freed data async lets pile up across
// commits before discarding; the command discards the rest when it ends
// (Close). Waiting merges neighbours into one discard and lets the
// allocator reuse freed space first, which then needs no discard at all.
const asyncBatchBytes = 64 << 20

// asyncDataMin: async leaves data in free ranges shorter than this
// recorded for a later command or trimtool, as btrfs's async discard
// skips extents under 32 KiB: small scattered frees cost one request
// each and give little back.
var asyncDataMin uint64 = 64 << 10

func (fs *FS) pendingData() uint64 {
	var n uint64
	for k, rs := range fs.disc.pending {
		if bg := fs.blockGroup(k); bg != nil && bg.Chunk.Type == format.ChunkData {
			for _, r := range rs {
				n += r.Len
			}
		}
	}
	return n
}

// discardPending discards the pending ranges that are free: data at once,
// metadata only inside a free range of at least the metadata threshold,
// all within the per-commit budget. Ranges no longer free are dropped
// (space reused since; its next free records it again).
func (fs *FS) discardPending() {
	budget := fs.sb.Settings.DiscardMaxPerCommit
	if budget == 0 {
		budget = ^uint64(0)
	}
	metaMin := fs.sb.Settings.MetadataMin()
	for _, k := range sortedKeys64(fs.disc.pending) {
		bg := fs.blockGroup(k)
		if bg == nil {
			delete(fs.disc.pending, k)
			fs.disc.touched[k] = true
			continue
		}
		if bg.free == nil {
			if err := fs.loadFree(bg); err != nil {
				continue // keep it recorded; trimtool or fsck will see the problem
			}
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
			if run.Len < metaMin && bg.Chunk.Type != format.ChunkData || run.Len < asyncDataMin {
				keep = append(keep, in...)
				continue
			}
			// One discard from the first to the last piece: the free
			// space between them goes too, so neighbours freed at
			// different times merge.
			span := alloc.Range{Start: in[0].Start, Len: in[len(in)-1].End() - in[0].Start}
			if budget < span.Len {
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
		if slices.Equal(keep, fs.disc.pending[k]) {
			continue
		}
		if len(keep) == 0 {
			delete(fs.disc.pending, k)
		} else {
			fs.disc.pending[k] = keep
		}
		fs.disc.touched[k] = true
	}
}

// discardLogical discards logical ranges of one block group on every copy,
// merging what is adjacent on a device. It reports false when a device
// refused (the ranges then stay pending); errors never fail the commit,
// which is already durable.
func (fs *FS) discardLogical(bg *BlockGroup, rs []alloc.Range) bool {
	phys := map[uint64][]alloc.Range{}
	for _, r := range rs {
		segs, err := bg.Chunk.Map(r.Start-bg.Chunk.Logical, r.Len)
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

// splitByBlockGroup cuts a logical range at block group boundaries.
func (fs *FS) splitByBlockGroup(r alloc.Range) []alloc.Range {
	var out []alloc.Range
	for r.Len > 0 {
		bg := fs.blockGroup(r.Start)
		if bg == nil {
			return out
		}
		n := min(r.Len, bg.Chunk.End()-r.Start)
		out = append(out, alloc.Range{Start: r.Start, Len: n})
		r = alloc.Range{Start: r.Start + n, Len: r.Len - n}
	}
	return out
}

// mergeRanges sorts ranges and joins overlapping or adjacent ones.
func mergeRanges(rs []alloc.Range) []alloc.Range {
	sort.Slice(rs, func(i, j int) bool { return rs[i].Start < rs[j].Start })
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 && out[n-1].End() >= r.Start {
			out[n-1].Len = max(out[n-1].End(), r.End()) - out[n-1].Start
			continue
		}
		out = append(out, r)
	}
	return out
}

func sortedKeys64[V any](m map[uint64]V) []uint64 {
	out := make([]uint64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// PendingDiscardBytes sums the committed discard records (some may cover
// space allocated again since; see FORMAT.md §6.10).
func (fs *FS) PendingDiscardBytes() (uint64, error) {
	var n uint64
	if fs.sb.Roots.Root(format.DiscardTree).Logical == 0 {
		return 0, nil
	}
	err := fs.Tree(format.DiscardTree).Scan(format.Key{}, format.Key{ObjectID: ^uint64(0), Type: 255, Offset: ^uint64(0)}, func(it format.Item) (bool, error) {
		n += it.Key.Offset
		return true, nil
	})
	if err != nil {
		return 0, fmt.Errorf("read discard records: %w", err)
	}
	return n, nil
}
