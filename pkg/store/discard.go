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

// discardState is the async bookkeeping: pending mirrors what the discard
// tree should hold, recorded what it holds as of the last fold.
type discardState struct {
	pending  map[uint64][]alloc.Range // by block group logical, sorted, merged
	recorded map[alloc.Range]bool
	dirty    bool // pending differs from recorded
	stats    DiscardStats
	// unsupported devices get no discards (their ranges are dropped);
	// failing ones neither, but their ranges stay recorded for trimtool.
	unsupported, failing map[uint64]bool
}

func newDiscardState() discardState {
	return discardState{pending: map[uint64][]alloc.Range{}, recorded: map[alloc.Range]bool{}, unsupported: map[uint64]bool{}, failing: map[uint64]bool{}}
}

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
		fs.disc.recorded[r] = true
		fs.disc.pending[bg.Chunk.Logical] = append(fs.disc.pending[bg.Chunk.Logical], r)
		return true, nil
	})
	for k, rs := range fs.disc.pending {
		fs.disc.pending[k] = mergeRanges(rs)
	}
	return err
}

// ClearDiscardRecords forgets every pending range and deletes the records
// in a transaction of its own (trimtool, after discarding all free space).
func (fs *FS) ClearDiscardRecords() error {
	if len(fs.disc.recorded) == 0 && len(fs.disc.pending) == 0 {
		return nil
	}
	fs.disc.pending = map[uint64][]alloc.Range{}
	fs.disc.dirty = true
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
		}
		fs.disc.dirty = true
	}
	tx.pinnedRecorded = len(tx.pinned)
}

func (tx *Txn) reconcileDiscardTree() (bool, error) {
	fs := tx.fs
	if !fs.disc.dirty {
		return false, nil
	}
	fs.disc.dirty = false
	want := map[alloc.Range]bool{}
	for k, rs := range fs.disc.pending {
		rs = mergeRanges(rs)
		fs.disc.pending[k] = rs
		if len(rs) == 0 {
			delete(fs.disc.pending, k)
		}
		for _, r := range rs {
			want[r] = true
		}
	}
	t := tx.trees[format.DiscardTree]
	changed := false
	for _, r := range sortedRanges(fs.disc.recorded) {
		if !want[r] {
			if err := t.Delete(discardKey(r)); err != nil {
				return false, fmt.Errorf("drop discard record [%d,+%d): %w", r.Start, r.Len, err)
			}
			delete(fs.disc.recorded, r)
			changed = true
		}
	}
	for _, r := range sortedRanges(want) {
		if !fs.disc.recorded[r] {
			if err := t.Insert(discardKey(r), nil); err != nil {
				return false, fmt.Errorf("record discard [%d,+%d): %w", r.Start, r.Len, err)
			}
			fs.disc.recorded[r] = true
			changed = true
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
		fs.discardPending()
	}
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
			fs.disc.dirty = true
			continue
		}
		if bg.free == nil {
			if err := fs.loadFree(bg); err != nil {
				continue // keep it recorded; trimtool or fsck will see the problem
			}
		}
		var now, keep []alloc.Range
		for _, p := range fs.disc.pending[k] {
			for _, run := range bg.free.Ranges() {
				s, e := max(p.Start, run.Start), min(p.End(), run.End())
				if s >= e {
					continue
				}
				piece := alloc.Range{Start: s, Len: e - s}
				if bg.Chunk.Type != format.ChunkData && run.Len < metaMin {
					keep = append(keep, piece)
					continue
				}
				if budget < piece.Len {
					// Discard what the budget allows, keep the rest.
					cut := budget / uint64(fs.sb.SectorSize) * uint64(fs.sb.SectorSize)
					keep = append(keep, alloc.Range{Start: piece.Start + cut, Len: piece.Len - cut})
					piece.Len = cut
				}
				if piece.Len > 0 {
					budget -= piece.Len
					now = append(now, piece)
				}
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
		fs.disc.dirty = true
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

func sortedRanges(m map[alloc.Range]bool) []alloc.Range {
	out := make([]alloc.Range, 0, len(m))
	for r := range m {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Start != out[j].Start {
			return out[i].Start < out[j].Start
		}
		return out[i].Len < out[j].Len
	})
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
