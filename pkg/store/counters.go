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
	return recount(fs.Tree)
}

func recount(tree func(format.TreeID) *btree.Tree) (format.Counters, error) {
	var c format.Counters
	for _, id := range countedTrees {
		err := tree(id).Scan(format.Key{}, format.MaxKey, func(it format.Item) (bool, error) {
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
	if !tx.countersKnown {
		return
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
	c, err := recount(tx.Tree)
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if tx.countersKnown && c != tx.counters {
		return fmt.Errorf("commit: invariant check: running counters %+v, recount %+v", tx.counters, c)
	}
	tx.counters, tx.countersKnown = c, true
	return nil
}
