package store

import (
	"errors"
	"fmt"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
)

// Snapshots and shared fs-tree nodes (FORMAT.md §6.12). A snapshot keeps
// the committed fs tree's root; its nodes are shared with the live tree
// (METADATA_ITEM refs > 1) until the live tree changes one, which then
// gets a copy of its own (unshare). Deleting a snapshot drops its root's
// reference, freeing what no other tree points at.

// ErrSnapshotExists: a snapshot of that name is already there.
var ErrSnapshotExists = errors.New("snapshot exists")

// ErrNoSnapshot: no snapshot of that name.
var ErrNoSnapshot = errors.New("no such snapshot")

// Snapshot is one SNAPSHOT_ITEM and its id.
type Snapshot struct {
	ID uint64
	format.SnapshotItem
}

// refChange is a pending change of a committed node's METADATA_ITEM
// refs, applied at the commit.
type refChange struct {
	level uint8
	delta int64
}

// Snapshots lists the snapshots as the running transaction sees them
// (the committed ones without one), by id.
func (fs *FS) Snapshots() ([]Snapshot, error) {
	if fs.tx != nil {
		return snapshotsIn(fs.tx.trees[format.SnapshotTree])
	}
	return fs.committedSnapshots()
}

// SnapshotRoots lists the fs tree roots the committed snapshots keep
// (none without a snapshot tree): what every walk of all the space the
// fs trees use must visit besides the root set's.
func (fs *FS) SnapshotRoots() ([]format.RootPtr, error) {
	if fs.sb.Roots.Root(format.SnapshotTree).Logical == 0 {
		return nil, nil
	}
	snaps, err := fs.committedSnapshots()
	if err != nil {
		return nil, fmt.Errorf("snapshots: %w", err)
	}
	roots := make([]format.RootPtr, len(snaps))
	for i, s := range snaps {
		roots[i] = s.Root
	}
	if r, ok, err := receivingIn(fs.Tree(format.SnapshotTree)); err != nil {
		return nil, err
	} else if ok {
		roots = append(roots, r.Parked) // the live tree a receive parked
	}
	drops, _, err := dropsIn(fs.Tree(format.SnapshotTree))
	for _, d := range drops {
		roots = append(roots, d.Root) // what is left of trees being dropped
	}
	return roots, err
}

// committedSnapshots lists the committed state's snapshots.
func (fs *FS) committedSnapshots() ([]Snapshot, error) {
	return snapshotsIn(fs.Tree(format.SnapshotTree))
}

func snapshotsIn(t *btree.Tree) ([]Snapshot, error) {
	var out []Snapshot
	err := t.Scan(format.Key{}, format.MaxKey, func(it format.Item) (bool, error) {
		if it.Key == format.ReceiveKey || it.Key.Type == format.DropItemKey {
			return true, nil // a receive in progress (receive.go), a tree being dropped (drop.go)
		}
		if it.Key.Type != format.SnapshotItemKey || it.Key.Offset != 0 || it.Key.ObjectID == 0 {
			return false, fmt.Errorf("snapshot tree: item %v: %w", it.Key, ErrCorrupt)
		}
		if len(out) == format.MaxSnapshots {
			return false, fmt.Errorf("snapshot tree: more than %d snapshots: %w", format.MaxSnapshots, ErrCorrupt)
		}
		s, err := format.UnmarshalSnapshotItem(it.Data)
		if err != nil {
			return false, fmt.Errorf("snapshot %d: %w", it.Key.ObjectID, err)
		}
		out = append(out, Snapshot{ID: it.Key.ObjectID, SnapshotItem: *s})
		return true, nil
	})
	return out, err
}

// FindSnapshot returns the snapshot named name.
func (fs *FS) FindSnapshot(name string) (Snapshot, error) {
	all, err := fs.Snapshots()
	if err != nil {
		return Snapshot{}, err
	}
	for _, s := range all {
		if s.Name == name {
			return s, nil
		}
	}
	return Snapshot{}, fmt.Errorf("%q: %w", name, ErrNoSnapshot)
}

// loadSharedGen finds the generation up to which fs-tree nodes may be
// shared: the newest snapshot root's (a node is never newer than its
// parent). An unreadable snapshot tree fails the open: a writer that
// took shared nodes for its own would free a snapshot's.
func (fs *FS) loadSharedGen() error {
	roots, err := fs.SnapshotRoots()
	for _, r := range roots {
		fs.sharedGen = max(fs.sharedGen, r.Generation)
	}
	return err
}

// TreeAt is a read-only handle of the fs tree rooted at root (a
// snapshot's).
func (fs *FS) TreeAt(root format.RootPtr) *btree.Tree {
	return btree.New(readOnly{fs}, format.FSTree, root)
}

// CreateSnapshot records the committed fs tree as snapshot s (its Root is
// set here) and returns its id. The running transaction must not have
// changed the fs tree: a snapshot shares committed nodes only, never
// ones this transaction may still change in place.
func (tx *Txn) CreateSnapshot(s format.SnapshotItem) (uint64, error) {
	fs := tx.fs
	root := fs.sb.Roots.Root(format.FSTree)
	if tx.trees[format.FSTree].Root() != root {
		return 0, fmt.Errorf("snapshot %q: the fs tree has uncommitted changes: %w", s.Name, ErrBusy)
	}
	all, err := fs.Snapshots()
	if err != nil {
		return 0, err
	}
	if len(all) >= format.MaxSnapshots {
		return 0, fmt.Errorf("snapshot %q: already %d snapshots: %w", s.Name, len(all), ErrNoSpace)
	}
	id := uint64(1)
	for _, o := range all {
		if o.Name == s.Name {
			return 0, fmt.Errorf("%q: %w", s.Name, ErrSnapshotExists)
		}
		id = max(id, o.ID+1)
	}
	s.Root, s.Generation = root, tx.gen
	k := format.Key{ObjectID: id, Type: format.SnapshotItemKey}
	if err := tx.trees[format.SnapshotTree].Insert(k, format.MarshalSnapshotItem(&s)); err != nil {
		return 0, err
	}
	tx.addNodeRef(root.Logical, root.Level, 1)
	tx.NeedIncompat(format.IncompatSnapshots)
	fs.sharedGen = max(fs.sharedGen, root.Generation)
	return id, nil
}

// DropSnapshot deletes snapshot id and drops its root's reference: a
// tree only it held goes to a DROP_ITEM, which DropStep frees in steps.
func (tx *Txn) DropSnapshot(id uint64) error {
	t := tx.trees[format.SnapshotTree]
	k := format.Key{ObjectID: id, Type: format.SnapshotItemKey}
	b, err := t.Get(k)
	if err != nil {
		return fmt.Errorf("snapshot %d: %w", id, err)
	}
	s, err := format.UnmarshalSnapshotItem(b)
	if err != nil {
		return err
	}
	if err := t.Delete(k); err != nil {
		return err
	}
	if err := tx.dropLater(s.Root); err != nil {
		return err
	}
	return tx.dropEmptySnapshotTree()
}

// dropEmptySnapshotTree frees the snapshot tree's root once it holds no
// snapshot: with no root the commit clears IncompatSnapshots.
func (tx *Txn) dropEmptySnapshotTree() error {
	t := tx.trees[format.SnapshotTree]
	r := t.Root()
	if r.Logical == 0 || r.Level != 0 || t.First().Valid() {
		return nil
	}
	n, err := tx.ReadNode(format.SnapshotTree, r.Logical, r.Generation, 0)
	if err != nil {
		return err
	}
	if err := tx.FreeNode(n); err != nil {
		return err
	}
	tx.trees[format.SnapshotTree] = btree.New(tx, format.SnapshotTree, format.RootPtr{})
	return nil
}

// RollbackTo makes snapshot id's tree the live fs tree: the snapshot
// root gains the root set's reference and the old live tree loses it
// (to a DROP_ITEM, as for DropSnapshot). The snapshot stays. As for
// CreateSnapshot, the running transaction must not have changed the fs
// tree.
func (tx *Txn) RollbackTo(id uint64) error {
	old := tx.fs.sb.Roots.Root(format.FSTree)
	if tx.trees[format.FSTree].Root() != old {
		return fmt.Errorf("rollback: the fs tree has uncommitted changes: %w", ErrBusy)
	}
	b, err := tx.trees[format.SnapshotTree].Get(format.Key{ObjectID: id, Type: format.SnapshotItemKey})
	if err != nil {
		return fmt.Errorf("snapshot %d: %w", id, err)
	}
	s, err := format.UnmarshalSnapshotItem(b)
	if err != nil {
		return err
	}
	tx.addNodeRef(s.Root.Logical, s.Root.Level, 1)
	tx.trees[format.FSTree] = btree.New(tx, format.FSTree, s.Root)
	tx.RecountCounters() // the live file extents changed without an item change
	return tx.dropLater(old)
}

// dropRef removes one pointer to a committed fs-tree node: the node is
// freed when it was the last, and its own pointers dropped in turn.
func (tx *Txn) dropRef(logical, gen uint64, level int, dropData func(*format.FileExtentItem) error) error {
	refs, err := tx.nodeRefs(logical, uint8(level))
	if err != nil || refs > 1 {
		if err == nil {
			tx.addNodeRef(logical, uint8(level), -1)
		}
		return err
	}
	n, err := tx.fs.readNode(format.FSTree, logical, gen, level, nil)
	if err != nil {
		return err
	}
	if err := tx.freeCommittedNode(n); err != nil {
		return err
	}
	if n.Level > 0 {
		for _, p := range n.Ptrs {
			if err := tx.dropRef(p.Logical, p.Generation, level-1, dropData); err != nil {
				return err
			}
		}
		return nil
	}
	return eachDataRef(n, dropData)
}

// unshare handles the copy on write of a committed node that may be
// shared: when it is (refs > 1) the copy (already made by the tree, with
// the same pointers) takes a reference to everything the node points
// at, and the node loses the tree's reference instead of being freed.
func (tx *Txn) unshare(n *format.Node) (bool, error) {
	if n.Owner != format.FSTree || n.Generation > tx.fs.sharedGen {
		return false, nil // newer than every snapshot: not shared
	}
	refs, err := tx.nodeRefs(n.Logical, n.Level)
	if err != nil || refs <= 1 {
		return false, err
	}
	tx.addNodeRef(n.Logical, n.Level, -1)
	if n.Level > 0 {
		for _, p := range n.Ptrs {
			tx.addNodeRef(p.Logical, n.Level-1, 1)
		}
		return true, nil
	}
	return true, eachDataRef(n, func(x *format.FileExtentItem) error {
		return tx.addDataRef(x.DiskLogical, x.DiskLen, 1)
	})
}

// NodeShared reports whether committed fs-tree node n may be shared: a
// snapshot's generation or older and refs above 1, or refs that do not
// read (a repair counts them again; "in use" wins meanwhile).
func (tx *Txn) NodeShared(n *format.Node) bool {
	if n.Owner != format.FSTree || n.Generation > tx.fs.sharedGen {
		return false
	}
	refs, err := tx.nodeRefs(n.Logical, n.Level)
	return err != nil || refs > 1
}

// CopiedShared is fsck's rebuild of the fs tree copying the items of leaf
// n into new nodes while n stays in the trees that share it: each data
// extent n points at gains the new leaf's reference (as unshare gives
// it). An extent without its item is left to fsck's count
// (FILE_EXTENT_NO_ITEM, counted over every tree), and so is a file
// extent that does not decode (no writer can drop its reference either).
func (tx *Txn) CopiedShared(n *format.Node) error {
	for _, it := range n.Items {
		if it.Key.Type != format.FileExtentKey {
			continue
		}
		x, err := format.UnmarshalFileExtentItem(it.Data)
		if err != nil || x.Type == format.FileExtentInline || x.DiskLogical == 0 {
			continue
		}
		if err := tx.addDataRef(x.DiskLogical, x.DiskLen, 1); err != nil && !errors.Is(err, btree.ErrNotFound) {
			return err
		}
	}
	return nil
}

// nodeRefs is a committed node's refs as this transaction has them.
func (tx *Txn) nodeRefs(logical uint64, level uint8) (int64, error) {
	b, err := tx.trees[format.ExtentTree].Get(format.Key{ObjectID: logical, Type: format.MetadataItemKey, Offset: uint64(level)})
	if err != nil {
		return 0, fmt.Errorf("node %d: metadata item: %w", logical, err)
	}
	m, err := format.UnmarshalMetadataItem(b)
	if err != nil {
		return 0, fmt.Errorf("node %d: %w", logical, err)
	}
	return int64(m.Refs) + tx.refChanges[logical].delta, nil
}

func (tx *Txn) addNodeRef(logical uint64, level uint8, d int64) {
	if tx.refChanges == nil {
		tx.refChanges = map[uint64]refChange{}
	}
	c := tx.refChanges[logical]
	c.level, c.delta = level, c.delta+d
	tx.refChanges[logical] = c
}

// addDataRef changes a data extent's refs now (the fs reads them to
// decide what to free), never to zero.
func (tx *Txn) addDataRef(logical, diskLen uint64, d int64) error {
	ext := tx.trees[format.ExtentTree]
	k := format.Key{ObjectID: logical, Type: format.ExtentItemKey, Offset: diskLen}
	b, err := ext.Get(k)
	if err != nil {
		return fmt.Errorf("data extent %d+%d: %w", logical, diskLen, err)
	}
	e, err := format.UnmarshalExtentItem(b)
	if err != nil {
		return err
	}
	refs := int64(e.Refs) + d
	if refs < 1 {
		return fmt.Errorf("data extent %d: shared reference count %d: %w", logical, refs, ErrCorrupt)
	}
	e.Refs = uint64(refs)
	return ext.Put(k, format.MarshalExtentItem(e))
}

// eachDataRef calls fn for every EXTENT_DATA item of leaf n that points
// at a data extent.
func eachDataRef(n *format.Node, fn func(*format.FileExtentItem) error) error {
	for _, it := range n.Items {
		if it.Key.Type != format.FileExtentKey {
			continue
		}
		x, err := format.UnmarshalFileExtentItem(it.Data)
		if err != nil {
			return fmt.Errorf("leaf %d: %v: %w", n.Logical, it.Key, err)
		}
		if x.Type != format.FileExtentInline && x.DiskLogical != 0 {
			if err := fn(x); err != nil {
				return err
			}
		}
	}
	return nil
}

// foldRefChanges writes the pending refs changes into the metadata
// items; false when there were none.
func (tx *Txn) foldRefChanges() (bool, error) {
	if len(tx.refChanges) == 0 {
		return false, nil
	}
	ext := tx.trees[format.ExtentTree]
	changes := tx.refChanges
	tx.refChanges = nil
	for _, l := range sortedKeys64(changes) {
		c := changes[l]
		if c.delta == 0 {
			continue
		}
		k := format.Key{ObjectID: l, Type: format.MetadataItemKey, Offset: uint64(c.level)}
		b, err := ext.Get(k)
		if err != nil {
			return false, fmt.Errorf("node %d: metadata item: %w", l, err)
		}
		m, err := format.UnmarshalMetadataItem(b)
		if err != nil {
			return false, err
		}
		refs := int64(m.Refs) + c.delta
		if refs < 1 {
			return false, fmt.Errorf("node %d: reference count %d after the transaction: %w", l, refs, ErrCorrupt)
		}
		m.Refs = uint64(refs)
		if err := ext.Put(k, format.MarshalMetadataItem(m)); err != nil {
			return false, err
		}
	}
	return true, nil
}
