package store

// Trees dropped in steps (FORMAT.md §6.12 "Dropping a tree in steps"). A
// deleted snapshot's tree, or the live tree a rollback replaced, may hold
// millions of nodes only it references: freeing them in one transaction
// would hold them all dirty in memory, and a crash would lose the whole
// work. Instead the tree goes to a DROP_ITEM, and each step frees a
// bounded part of it from the left, rewrites the path to what is left
// (a few new nodes) and records that smaller tree in the item, in one
// commit. What is left is a whole tree at every commit, so every walk of
// the space in use takes it as one more fs tree.

import (
	"fmt"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
)

// dropsIn returns the DROP_ITEMs of the snapshot tree t, by key.
func dropsIn(t *btree.Tree) ([]format.DropItem, []format.Key, error) {
	if t.Root().Logical == 0 {
		return nil, nil, nil
	}
	var out []format.DropItem
	var keys []format.Key
	err := t.Scan(format.Key{Type: format.DropItemKey}, format.MaxKey, func(it format.Item) (bool, error) {
		if it.Key.Type != format.DropItemKey {
			return true, nil // a SNAPSHOT_ITEM of a larger id
		}
		if len(out) == format.MaxSnapshots+1 {
			return false, fmt.Errorf("snapshot tree: more than %d drop items: %w", format.MaxSnapshots+1, ErrCorrupt)
		}
		d, err := format.UnmarshalDropItem(it.Data)
		if err != nil {
			return false, fmt.Errorf("drop item %v: %w", it.Key, err)
		}
		out, keys = append(out, *d), append(keys, it.Key)
		return true, nil
	})
	return out, keys, err
}

// PendingDrops counts the trees being dropped in the committed state.
func (fs *FS) PendingDrops() (int, error) {
	d, _, err := dropsIn(fs.Tree(format.SnapshotTree))
	return len(d), err
}

// dropLater removes this transaction's reference to the committed tree
// at root: a shared root loses one ref; one only this reference holds
// goes to a DROP_ITEM, to be freed by DropStep.
func (tx *Txn) dropLater(root format.RootPtr) error {
	if root.Logical == 0 {
		return nil
	}
	refs, err := tx.nodeRefs(root.Logical, root.Level)
	if err != nil {
		return err
	}
	if refs > 1 {
		tx.addNodeRef(root.Logical, root.Level, -1)
		return nil
	}
	d := format.DropItem{Root: root, Generation: tx.gen}
	if err := tx.trees[format.SnapshotTree].Insert(format.DropKey(root.Logical), format.MarshalDropItem(&d)); err != nil {
		return fmt.Errorf("drop item for %d: %w", root.Logical, err)
	}
	tx.NeedIncompat(format.IncompatSnapshots | format.IncompatDropping)
	tx.dropsDone = false
	return nil
}

// DropStep frees up to budget nodes, node references and data references
// of the first tree being dropped and records what is left; it reports
// whether trees remain to drop. dropData is as for DropSnapshot.
func (tx *Txn) DropStep(budget int, dropData func(*format.FileExtentItem) error) (more bool, err error) {
	st := tx.trees[format.SnapshotTree]
	drops, keys, err := dropsIn(st)
	if err != nil || len(drops) == 0 {
		return false, err
	}
	d, k := drops[0], keys[0]
	budget = max(budget, 1) // each step frees at least the leftmost leaf or reference
	left, err := tx.trimLeft(format.KeyPtr{Logical: d.Root.Logical, Generation: d.Root.Generation}, int(d.Root.Level), &budget, dropData)
	if err != nil {
		return false, err
	}
	if left == nil {
		if err := st.Delete(k); err != nil {
			return false, err
		}
		if err := tx.dropEmptySnapshotTree(); err != nil {
			return false, err
		}
		tx.dropsDone = len(drops) == 1
		return !tx.dropsDone, nil
	}
	d.Root = format.RootPtr{Logical: left.Logical, Generation: left.Generation, Level: d.Root.Level}
	d.Generation = tx.gen
	return true, st.Put(k, format.MarshalDropItem(&d))
}

// trimLeft frees the subtree at p (level lv), leftmost part first, until
// budget runs out: a node whose refs are above 1 only loses this
// reference, a leaf is freed with its data references, an internal node
// once its children are. It returns the pointer to what is left of the
// subtree (a copy of the node holding the children still to drop, as
// §1.3 writes a changed node), nil when all of it is gone.
func (tx *Txn) trimLeft(p format.KeyPtr, lv int, budget *int, dropData func(*format.FileExtentItem) error) (*format.KeyPtr, error) {
	refs := int64(1) // a node this transaction made (a path copy) has no metadata item yet
	if _, dirty := tx.dirty[p.Logical]; !dirty {
		var err error
		if refs, err = tx.nodeRefs(p.Logical, uint8(lv)); err != nil {
			return nil, err
		}
	}
	if refs > 1 {
		tx.addNodeRef(p.Logical, uint8(lv), -1)
		*budget--
		return nil, nil
	}
	n, err := tx.ReadNode(format.FSTree, p.Logical, p.Generation, lv)
	if err != nil {
		return nil, err
	}
	if lv == 0 {
		*budget -= 1 + len(n.Items)
		if err := tx.freeDropped(n); err != nil {
			return nil, err
		}
		return nil, eachDataRef(n, dropData)
	}
	i := 0
	var part *format.KeyPtr
	for ; i < len(n.Ptrs) && *budget > 0; i++ {
		if part, err = tx.trimLeft(n.Ptrs[i], lv-1, budget, dropData); err != nil || part != nil {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	*budget--
	if i == len(n.Ptrs) {
		return nil, tx.freeDropped(n)
	}
	rest := append([]format.KeyPtr(nil), n.Ptrs[i:]...)
	if part != nil {
		rest[0] = *part
	}
	if tx.IsDirty(n) { // made by an earlier step of this transaction
		n.Ptrs = rest
		return &format.KeyPtr{Key: rest[0].Key, Logical: n.Logical, Generation: n.Generation}, nil
	}
	c, err := tx.NewNode(format.FSTree, uint8(lv))
	if err != nil {
		return nil, err
	}
	c.Ptrs = rest
	if err := tx.freeDropped(n); err != nil {
		return nil, err
	}
	return &format.KeyPtr{Key: rest[0].Key, Logical: c.Logical, Generation: c.Generation}, nil
}

// freeDropped frees a node of a tree being dropped (refs 1).
func (tx *Txn) freeDropped(n *format.Node) error {
	if tx.IsDirty(n) {
		return tx.FreeNode(n)
	}
	return tx.freeCommittedNode(n)
}
