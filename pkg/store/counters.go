package store

import (
	"fmt"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
)

// countedTrees hold the items the counters sum (format.ItemCounters).
var countedTrees = []format.TreeID{format.FSTree, format.ExtentTree, format.DedupeTree}

// Counters returns the committed counters and whether they are exact
// (RoCompatCounters); an image written before them has none until its
// first commit, and readers then fall back to Recount.
func (fs *FS) Counters() (format.Counters, bool) {
	return fs.sb.Counters, fs.sb.RoCompat&format.RoCompatCounters != 0
}

// Recount sums the counters over the committed trees (a full scan).
func (fs *FS) Recount() (format.Counters, error) {
	parked, err := fs.parkedTree(fs.Tree(format.SnapshotTree))
	if err != nil {
		return format.Counters{}, err
	}
	return recount(fs.Tree, parked)
}

// parkedTree is the live tree a receive in progress parked (nil: none):
// the fs tree the counters sum while it waits (FORMAT.md §6.13), so that
// a receive's begin and end move no counter and need no recount.
func (fs *FS) parkedTree(snapshots *btree.Tree) (*btree.Tree, error) {
	r, ok, err := receivingIn(snapshots)
	if err != nil || !ok {
		return nil, err
	}
	return fs.TreeAt(r.Parked), nil
}

// recount sums the counters over the trees tree gives, the fs tree's
// part over parked when a receive parked the live tree.
func recount(tree func(format.TreeID) *btree.Tree, parked *btree.Tree) (format.Counters, error) {
	var c format.Counters
	for _, id := range countedTrees {
		t := tree(id)
		if id == format.FSTree && parked != nil {
			t = parked
		}
		err := t.Scan(format.Key{}, format.MaxKey, func(it format.Item) (bool, error) {
			c.Add(format.ItemCounters(id, it.Key, it.Data))
			return true, nil
		})
		if err != nil {
			return c, fmt.Errorf("count %v tree: %w", id, err)
		}
	}
	return c, nil
}

// ItemChanged implements btree.ItemObserver: every item a transaction
// adds or removes moves the counters by its contribution.
func (tx *Txn) ItemChanged(tree format.TreeID, key format.Key, data []byte, added bool) {
	if !tx.countersKnown || tree == format.FSTree && tx.receiving {
		return // a receive's items: the counters sum the parked tree
	}
	c := format.ItemCounters(tree, key, data)
	if added {
		tx.counters.Add(c)
	} else {
		tx.counters.Sub(c)
	}
}

// RecountCounters makes this commit store counters recounted from its
// trees rather than the running ones (fsck's repair of COUNTERS_WRONG).
func (tx *Txn) RecountCounters() { tx.countersKnown = false }

// finalCounters are the counters the commit stores: the running sums, or
// a recount of the final trees on an image that had none (its first
// commit by a writer that keeps them) or when a repair asked for one.
// With the invariant checks on, the running sums must equal a recount.
func (tx *Txn) finalCounters() error {
	if tx.countersKnown && !checkInvariants {
		return nil
	}
	parked, err := tx.fs.parkedTree(tx.trees[format.SnapshotTree])
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	c, err := recount(tx.Tree, parked)
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if tx.countersKnown && c != tx.counters {
		return fmt.Errorf("commit: invariant check: running counters %+v, recount %+v", tx.counters, c)
	}
	tx.counters, tx.countersKnown = c, true
	return nil
}
