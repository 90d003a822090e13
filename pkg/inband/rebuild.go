package inband

import (
	"container/heap"
	"errors"
	"fmt"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
)

// indexBatch is how many items an index pass handles between safe points.
const indexBatch = 256

// maxRebuildData bounds what a rebuild reads of one extent (blocks are at
// most 8 MiB; compressed ones are smaller on disk).
const maxRebuildData = 8 << 20

// Stats counts what an index pass did.
type Stats struct {
	Entries  uint64 `json:"index_entries"` // entries in the index at the end
	Rebuilt  uint64 `json:"rebuilt"`       // entries written from their extent's data
	Unmarked uint64 `json:"unmarked"`      // extents whose data no longer gives their prefix: no longer indexed
	Dropped  uint64 `json:"dropped"`       // entries deleted (stale, or pruned)
}

// Rebuild rebuilds the dedupe tree from the extents: every extent
// marked deduped gets the entry its data gives (format.RebuildDedupeItem,
// the entry the inband path made; an xxh3 entry with its strong tail,
// since the data is read and checked here anyway), then entries without
// such an extent are deleted. Each extent is one whole change, and the
// host commits at safe points between batches: a kill leaves a
// consistent index.
func (x *Index) Rebuild() (Stats, error) {
	var st Stats
	prefer := x.st.Super().Settings.DedupeHash
	err := x.batches(format.ExtentTree, format.ExtentItemKey, func(it format.Item) error {
		e, err := format.UnmarshalExtentItem(it.Data)
		if err != nil || e.Flags&format.ExtentFlagDeduped == 0 {
			return err
		}
		data, err := x.extentData(it.Key, e)
		if err != nil {
			return err
		}
		tx, err := x.host.Txn()
		if err != nil {
			return err
		}
		k := format.Key{ObjectID: e.HashPrefix, Type: format.DedupeItemKey, Offset: it.Key.ObjectID}
		if d, ok := format.RebuildDedupeItem(data, e.HashPrefix, e.Compression == format.CompressNone, prefer); ok {
			if d.HashAlgo == format.CsumXXH3 {
				tail := format.StrongDedupeHash(data[:d.Length])
				d.Strong = &tail
			}
			st.Rebuilt++
			return tx.Tree(format.DedupeTree).Put(k, format.MarshalDedupeItem(d))
		}
		st.Unmarked++
		return x.unindex(it.Key, e)
	})
	if err != nil {
		return st, err
	}
	err = x.batches(format.DedupeTree, format.DedupeItemKey, func(it format.Item) error {
		keep, err := x.indexedAs(it.Key)
		if err != nil || keep {
			return err
		}
		st.Dropped++
		return x.dropEntry(it.Key)
	})
	if err != nil {
		return st, err
	}
	st.Entries, err = x.countIndex()
	return st, err
}

// extentData reads a data extent: decompressed, or whole with its padding.
func (x *Index) extentData(k format.Key, e *format.ExtentItem) ([]byte, error) {
	if k.Offset == 0 || k.Offset > maxRebuildData || e.RAMBytes > maxRebuildData {
		return nil, fmt.Errorf("data extent %d+%d (%d decompressed): too big for a dedupe block: %w", k.ObjectID, k.Offset, e.RAMBytes, format.ErrCorrupt)
	}
	data, err := x.host.Extent(k.ObjectID, k.Offset, e.RAMBytes, e.Compression)
	if err != nil {
		return nil, fmt.Errorf("data extent %d: %w", k.ObjectID, err)
	}
	return data, nil
}

// unindex clears an extent's deduped mark and deletes its entry, in one
// change.
func (x *Index) unindex(k format.Key, e *format.ExtentItem) error {
	tx, err := x.host.Txn()
	if err != nil {
		return err
	}
	dk := format.Key{ObjectID: e.HashPrefix, Type: format.DedupeItemKey, Offset: k.ObjectID}
	if err := tx.Tree(format.DedupeTree).Delete(dk); err != nil && !errors.Is(err, btree.ErrNotFound) {
		return err
	}
	x.cache.del(e.HashPrefix, k.ObjectID)
	e.Flags &^= format.ExtentFlagDeduped
	e.HashPrefix = 0
	return tx.Tree(format.ExtentTree).Put(k, format.MarshalExtentItem(e))
}

// dropEntry deletes the index entry at k.
func (x *Index) dropEntry(k format.Key) error {
	tx, err := x.host.Txn()
	if err != nil {
		return err
	}
	x.cache.del(k.ObjectID, k.Offset)
	return tx.Tree(format.DedupeTree).Delete(k)
}

// indexedAs reports whether the entry at k belongs to a marked extent with
// its prefix.
func (x *Index) indexedAs(k format.Key) (bool, error) {
	_, e, err := x.extentAt(k.Offset)
	if err != nil || e == nil {
		return false, err
	}
	return e.Flags&format.ExtentFlagDeduped != 0 && e.HashPrefix == k.ObjectID, nil
}

// extentAt finds the extent item at logical (nil when there is none).
func (x *Index) extentAt(logical uint64) (format.Key, *format.ExtentItem, error) {
	var k format.Key
	var e *format.ExtentItem
	err := x.host.Tree(format.ExtentTree).Scan(format.Key{ObjectID: logical, Type: format.ExtentItemKey}, format.Key{ObjectID: logical, Type: format.ExtentItemKey + 1}, func(it format.Item) (bool, error) {
		x, err := format.UnmarshalExtentItem(it.Data)
		k, e = it.Key, x
		return false, err
	})
	return k, e, err
}

// batches calls fn for every item of type typ in tree, a batch at a time
// (the items are copied first: fn may change the tree), committing at the
// safe points between batches.
func (x *Index) batches(tree format.TreeID, typ format.KeyType, fn func(format.Item) error) error {
	from := format.Key{}
	for {
		var items []format.Item
		err := x.host.Tree(tree).Scan(from, format.MaxKey, func(it format.Item) (bool, error) {
			if it.Key.Type == typ {
				items = append(items, format.Item{Key: it.Key, Data: append([]byte(nil), it.Data...)})
			}
			from = it.Key
			return len(items) < indexBatch, nil
		})
		if err != nil {
			return err
		}
		for _, it := range items {
			if err := fn(it); err != nil {
				return err
			}
		}
		if len(items) < indexBatch {
			return nil
		}
		if err := x.host.SafePoint(); err != nil {
			return err
		}
		if from == format.MaxKey {
			return nil
		}
		from = keyAfter(from)
	}
}

func (x *Index) countIndex() (uint64, error) {
	var n uint64
	err := x.host.Tree(format.DedupeTree).Scan(format.Key{}, format.MaxKey, func(format.Item) (bool, error) { n++; return true, nil })
	return n, err
}

// keyAfter is the smallest key greater than k (k is not MaxKey).
func keyAfter(k format.Key) format.Key {
	switch {
	case k.Offset != ^uint64(0):
		k.Offset++
	case k.Type != ^format.KeyType(0):
		k.Type, k.Offset = k.Type+1, 0
	default:
		k.ObjectID, k.Type, k.Offset = k.ObjectID+1, 0, 0
	}
	return k
}

// Prune keeps the max entries most likely to hit and drops the rest
// (each with its extent's mark, in one change): an entry whose extent is
// shared more often ranks first (its block repeats), then the newer one.
// Memory is bounded by max, not by the index.
func (x *Index) Prune(max uint64) (Stats, error) {
	var st Stats
	keep := &rankHeap{}
	err := x.host.Tree(format.DedupeTree).Scan(format.Key{}, format.MaxKey, func(it format.Item) (bool, error) {
		_, e, err := x.extentAt(it.Key.Offset)
		if err != nil {
			return false, err
		}
		if e == nil {
			return true, nil // stale: the second pass drops it
		}
		r := rank{refs: e.Refs, gen: e.Generation, logical: it.Key.Offset}
		if uint64(keep.Len()) < max {
			heap.Push(keep, r)
		} else if max > 0 && keep.rs[0].less(r) {
			keep.rs[0] = r
			heap.Fix(keep, 0)
		}
		return true, nil
	})
	if err != nil {
		return st, err
	}
	kept := make(map[uint64]bool, keep.Len())
	for _, r := range keep.rs {
		kept[r.logical] = true
	}
	err = x.batches(format.DedupeTree, format.DedupeItemKey, func(it format.Item) error {
		if kept[it.Key.Offset] {
			return nil
		}
		k, e, err := x.extentAt(it.Key.Offset)
		if err != nil {
			return err
		}
		st.Dropped++
		if e == nil || e.Flags&format.ExtentFlagDeduped == 0 || e.HashPrefix != it.Key.ObjectID {
			return x.dropEntry(it.Key) // stale entry
		}
		return x.unindex(k, e)
	})
	if err != nil {
		return st, err
	}
	st.Entries, err = x.countIndex()
	return st, err
}

// rank orders entries by how likely they are to hit again.
type rank struct{ refs, gen, logical uint64 }

func (a rank) less(b rank) bool {
	if a.refs != b.refs {
		return a.refs < b.refs
	}
	if a.gen != b.gen {
		return a.gen < b.gen
	}
	return a.logical < b.logical
}

// rankHeap is a min-heap: its root is the weakest entry kept.
type rankHeap struct{ rs []rank }

func (h *rankHeap) Len() int           { return len(h.rs) }
func (h *rankHeap) Less(i, j int) bool { return h.rs[i].less(h.rs[j]) }
func (h *rankHeap) Swap(i, j int)      { h.rs[i], h.rs[j] = h.rs[j], h.rs[i] }
func (h *rankHeap) Push(x any)         { h.rs = append(h.rs, x.(rank)) }
func (h *rankHeap) Pop() any {
	r := h.rs[len(h.rs)-1]
	h.rs = h.rs[:len(h.rs)-1]
	return r
}
