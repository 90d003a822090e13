package store

import (
	"fmt"
	"sort"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/alloc"
)

// discardState is the async bookkeeping. pending holds, per block group
// (by its logical address), the freed ranges not yet discarded, sorted and
// merged; it is what the discard tree should hold. toInsert and toDelete
// are the records the next commit must add and drop to get there, so a
// commit touches only what changed, not every pending range.
type discardState struct {
	pending            map[uint64][]alloc.Range
	toInsert, toDelete map[alloc.Range]bool
	stats              DiscardStats
	since              time.Time // start of the async batch (zero: none yet)
	// bytes sums pending per block group (kept with every change, so a
	// commit's batch trigger does not walk all pending ranges); held is
	// the data a batch left pending (short runs, budget), fresh whether
	// anything was added since the last batch.
	bytes map[uint64]uint64
	held  uint64
	fresh bool
	// unsupported devices get no discards (their ranges are dropped);
	// failing ones neither, but their ranges stay recorded for trimtool.
	unsupported, failing map[uint64]bool
}

func newDiscardState() discardState {
	return discardState{pending: map[uint64][]alloc.Range{}, toInsert: map[alloc.Range]bool{}, toDelete: map[alloc.Range]bool{},
		unsupported: map[uint64]bool{}, failing: map[uint64]bool{}, bytes: map[uint64]uint64{}}
}

// dirty: the records differ from what is pending.
func (d *discardState) dirty() bool { return len(d.toInsert)+len(d.toDelete) > 0 }

// replaced queues the record changes for pending ranges gone and born.
func (d *discardState) replaced(k uint64, gone, born []alloc.Range) {
	for _, r := range gone {
		d.bytes[k] -= r.Len
	}
	for _, r := range born {
		d.bytes[k] += r.Len
	}
	for _, r := range gone {
		if d.toInsert[r] {
			delete(d.toInsert, r) // never reached the tree
		} else {
			d.toDelete[r] = true
		}
	}
	for _, r := range born {
		if d.toDelete[r] {
			delete(d.toDelete, r) // still in the tree
		} else {
			d.toInsert[r] = true
		}
	}
}

// setPending replaces the pending ranges of block group k.
func (d *discardState) setPending(k uint64, rs []alloc.Range) {
	old := d.pending[k]
	inOld := make(map[alloc.Range]bool, len(old))
	for _, r := range old {
		inOld[r] = true
	}
	var born []alloc.Range
	for _, r := range rs {
		if inOld[r] {
			delete(inOld, r)
		} else {
			born = append(born, r)
		}
	}
	gone := make([]alloc.Range, 0, len(inOld))
	for r := range inOld {
		gone = append(gone, r)
	}
	d.replaced(k, gone, born)
	if len(rs) == 0 {
		delete(d.pending, k)
	} else {
		d.pending[k] = rs
	}
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

var allKeys = [2]format.Key{{}, {ObjectID: ^uint64(0), Type: 255, Offset: ^uint64(0)}}

// loadDiscardRecords reads the discard tree into the pending set.
func (fs *FS) loadDiscardRecords() error {
	if fs.sb.Roots.Root(format.DiscardTree).Logical == 0 {
		return nil
	}
	recorded := map[uint64][]alloc.Range{}
	err := fs.Tree(format.DiscardTree).Scan(allKeys[0], allKeys[1], func(it format.Item) (bool, error) {
		r := alloc.Range{Start: it.Key.ObjectID, Len: it.Key.Offset}
		bg := fs.blockGroup(r.Start)
		if it.Key.Type != format.DiscardItemKey {
			return true, nil // not ours to follow or drop; fsck reports it
		}
		if r.Len == 0 || bg == nil || r.End() > bg.Chunk.End() || r.End() < r.Start {
			// Records are hints (FORMAT.md §6.11): one that does not
			// fit a chunk is dropped, never followed.
			fs.disc.toDelete[r] = true
			return true, nil
		}
		recorded[bg.Chunk.Logical] = append(recorded[bg.Chunk.Logical], r)
		return true, nil
	})
	for k, rs := range recorded {
		fs.disc.fresh = true
		fs.disc.pending[k] = rs // as in the tree
		for _, r := range rs {
			fs.disc.bytes[k] += r.Len
		}
		// Overlapping records (another writer's) are rewritten merged.
		fs.disc.setPending(k, mergeRanges(append([]alloc.Range(nil), rs...)))
	}
	return err
}

// PendingDiscardBytes sums the committed discard records (some may cover
// space allocated again since; see FORMAT.md §6.10).
func (fs *FS) PendingDiscardBytes() (uint64, error) {
	var n uint64
	if fs.sb.Roots.Root(format.DiscardTree).Logical == 0 {
		return 0, nil
	}
	err := fs.Tree(format.DiscardTree).Scan(allKeys[0], allKeys[1], func(it format.Item) (bool, error) {
		n += it.Key.Offset
		return true, nil
	})
	if err != nil {
		return 0, fmt.Errorf("read discard records: %w", err)
	}
	return n, nil
}

// ClearDiscardRecords forgets every pending range and deletes the records
// in a transaction of its own (trimtool, after discarding all free space).
func (fs *FS) ClearDiscardRecords() error {
	for _, k := range sortedKeys64(fs.disc.pending) {
		fs.disc.setPending(k, nil)
	}
	if !fs.disc.dirty() {
		return nil
	}
	tx, err := fs.Begin()
	if err != nil {
		return err
	}
	return tx.Commit()
}

// recordFreed adds the ranges this transaction frees to the pending set
// (async only); reconcileDiscardTree then writes the record changes. Both
// run inside the commit's fold loop, so the records are durable with the
// frees.
func (tx *Txn) recordFreed() {
	fs := tx.fs
	if fs.sb.Settings.Discard != format.DiscardAsync && (tx.settings == nil || tx.settings.Discard != format.DiscardAsync) {
		return
	}
	added := map[uint64][]alloc.Range{}
	for _, r := range tx.pinned[tx.pinnedRecorded:] {
		for _, p := range fs.splitByBlockGroup(r) {
			k := fs.blockGroup(p.Start).Chunk.Logical
			added[k] = append(added[k], p)
		}
	}
	tx.pinnedRecorded = len(tx.pinned)
	for k, add := range added {
		out, gone, born := mergeInto(fs.disc.pending[k], mergeRanges(add))
		fs.disc.pending[k] = out
		fs.disc.replaced(k, gone, born)
		fs.disc.fresh = true
	}
}

// reconcileDiscardTree writes the queued record changes.
func (tx *Txn) reconcileDiscardTree() (bool, error) {
	fs := tx.fs
	if !fs.disc.dirty() {
		return false, nil
	}
	t := tx.trees[format.DiscardTree]
	for _, r := range sortedRanges(fs.disc.toDelete) {
		if err := t.Delete(discardKey(r)); err != nil {
			return false, fmt.Errorf("drop discard record [%d,+%d): %w", r.Start, r.Len, err)
		}
	}
	for _, r := range sortedRanges(fs.disc.toInsert) {
		if err := t.Insert(discardKey(r), nil); err != nil {
			return false, fmt.Errorf("record discard [%d,+%d): %w", r.Start, r.Len, err)
		}
	}
	// Cleared before the commit is durable: safe because a failed commit
	// marks the FS broken, and the next open reloads the tree.
	fs.disc.toInsert, fs.disc.toDelete = map[alloc.Range]bool{}, map[alloc.Range]bool{}
	return true, nil
}

func discardKey(r alloc.Range) format.Key {
	return format.Key{ObjectID: r.Start, Type: format.DiscardItemKey, Offset: r.Len}
}

// mergeInto merges the sorted, merged ranges add into the sorted, merged
// old in one pass. gone are the old ranges that changed (absorbed into a
// bigger one), born the resulting ranges that are new.
func mergeInto(old, add []alloc.Range) (out, gone, born []alloc.Range) {
	out = make([]alloc.Range, 0, len(old)+len(add))
	var parts []alloc.Range // old ranges inside the range being built
	changed := false
	flush := func() {
		if len(out) > 0 && (changed || len(parts) != 1) {
			gone = append(gone, parts...)
			born = append(born, out[len(out)-1])
		}
		parts, changed = parts[:0], false
	}
	i, j := 0, 0
	for i < len(old) || j < len(add) {
		var r alloc.Range
		fromOld := j == len(add) || (i < len(old) && old[i].Start <= add[j].Start)
		if fromOld {
			r, i = old[i], i+1
		} else {
			r, j = add[j], j+1
		}
		if n := len(out); n > 0 && out[n-1].End() >= r.Start {
			if r.End() > out[n-1].End() {
				out[n-1].Len = r.End() - out[n-1].Start
			}
			changed = true
		} else {
			flush()
			out = append(out, r)
			changed = !fromOld
		}
		if fromOld {
			parts = append(parts, r)
		}
	}
	flush()
	return out, gone, born
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

// clipRanges keeps the parts of sorted ranges below end.
func clipRanges(rs []alloc.Range, end uint64) []alloc.Range {
	var out []alloc.Range
	for _, r := range rs {
		if r.Start < end {
			out = append(out, alloc.Range{Start: r.Start, Len: min(r.End(), end) - r.Start})
		}
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
