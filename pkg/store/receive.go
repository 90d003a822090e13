package store

// A receive in progress (FORMAT.md §6.13): the stream is applied to the
// live fs tree's slot while the live tree waits, parked, in the snapshot
// tree's RECEIVE_ITEM. Readers are shown the parked tree; the receive
// ends by making the received tree a snapshot and putting the parked
// one back, or is undone by putting it back and dropping what it made,
// each in one commit. A power cut in between leaves the item: the next
// writer undoes the receive (or resumes it).

import (
	"errors"
	"fmt"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
)

// ErrReceiving: a receive is already in progress.
var ErrReceiving = errors.New("a receive is in progress")

// receivingIn reads t's RECEIVE_ITEM (ok false: none).
func receivingIn(t *btree.Tree) (*format.ReceiveItem, bool, error) {
	if t.Root().Logical == 0 {
		return nil, false, nil
	}
	b, err := t.Get(format.ReceiveKey)
	if errors.Is(err, btree.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("receive item: %w", err)
	}
	r, err := format.UnmarshalReceiveItem(b)
	if err != nil {
		return nil, false, err
	}
	return r, true, nil
}

// Receiving returns the committed receive in progress (ok false: none).
func (fs *FS) Receiving() (*format.ReceiveItem, bool, error) {
	return receivingIn(fs.Tree(format.SnapshotTree))
}

// BeginReceive parks the committed live fs tree in a RECEIVE_ITEM made
// from r and gives the live slot the tree the receive starts from: base's
// (its root gains the slot's reference) or, with base nil, no tree (the
// caller makes its root directory). The running transaction must not
// have changed the fs tree.
func (tx *Txn) BeginReceive(r format.ReceiveItem, base *Snapshot) error {
	live := tx.fs.sb.Roots.Root(format.FSTree)
	if tx.trees[format.FSTree].Root() != live {
		return fmt.Errorf("receive: the fs tree has uncommitted changes: %w", ErrBusy)
	}
	if _, ok, err := receivingIn(tx.trees[format.SnapshotTree]); err != nil || ok {
		return cmpErr(err, ErrReceiving)
	}
	r.Parked, r.Generation, r.Base = live, tx.gen, 0
	start := format.RootPtr{}
	if base != nil {
		r.Base, start = base.ID, base.Root
		tx.addNodeRef(start.Logical, start.Level, 1)
	}
	if err := tx.trees[format.SnapshotTree].Insert(format.ReceiveKey, format.MarshalReceiveItem(&r)); err != nil {
		return err
	}
	// The root set's reference to the live root is now the item's.
	tx.trees[format.FSTree] = btree.New(tx, format.FSTree, start)
	tx.NeedIncompat(format.IncompatSnapshots | format.IncompatReceive)
	tx.receiving = true // the counters keep summing the parked tree: no recount
	return nil
}

// FinishReceive makes the committed received tree snapshot s (its name
// and received uuids from the item) and puts the parked live tree back; it returns
// the snapshot's id. As BeginReceive, the fs tree must be committed.
func (tx *Txn) FinishReceive(s format.SnapshotItem, dropData func(*format.FileExtentItem) error) (uint64, error) {
	r, ok, err := receivingIn(tx.trees[format.SnapshotTree])
	if err != nil || !ok {
		return 0, cmpErr(err, fmt.Errorf("finish: no receive in progress: %w", ErrBusy))
	}
	s.ReceivedUUID, s.ParentUUID, s.Name = r.ReceivedUUID, r.ParentUUID, r.Name
	id, err := tx.CreateSnapshot(s)
	if err != nil {
		return 0, err
	}
	return id, tx.unpark(r, dropData)
}

// AbortReceive puts the parked live tree back and drops what the
// receive made (dropData as for DropSnapshot).
func (tx *Txn) AbortReceive(dropData func(*format.FileExtentItem) error) error {
	r, ok, err := receivingIn(tx.trees[format.SnapshotTree])
	if err != nil || !ok {
		return cmpErr(err, fmt.Errorf("abort: no receive in progress: %w", ErrBusy))
	}
	return tx.unpark(r, dropData)
}

// unpark gives the live slot the parked root back (the item's reference
// becomes the root set's) and drops the slot's reference to the received
// tree.
func (tx *Txn) unpark(r *format.ReceiveItem, dropData func(*format.FileExtentItem) error) error {
	received := tx.fs.sb.Roots.Root(format.FSTree)
	if tx.trees[format.FSTree].Root() != received {
		return fmt.Errorf("receive: the fs tree has uncommitted changes: %w", ErrBusy)
	}
	if err := tx.trees[format.SnapshotTree].Delete(format.ReceiveKey); err != nil {
		return err
	}
	if err := tx.dropEmptySnapshotTree(); err != nil {
		return err
	}
	tx.trees[format.FSTree] = btree.New(tx, format.FSTree, r.Parked)
	tx.receiving = false // the counters summed the parked tree all along
	tx.unparked = true
	if received.Logical == 0 {
		return nil
	}
	return tx.dropRef(received.Logical, received.Generation, int(received.Level), dropData)
}

// cmpErr is err, or alt when err is nil.
func cmpErr(err, alt error) error {
	if err != nil {
		return err
	}
	return alt
}

// SetReceiveApplied records in the RECEIVE_ITEM that the stream's first n
// bytes are applied in this transaction (the point a resumed receive
// goes on from).
func (tx *Txn) SetReceiveApplied(n uint64) error {
	r, ok, err := receivingIn(tx.trees[format.SnapshotTree])
	if err != nil || !ok {
		return cmpErr(err, fmt.Errorf("no receive in progress: %w", ErrBusy))
	}
	if r.Applied == n {
		return nil
	}
	r.Applied = n
	return tx.trees[format.SnapshotTree].Put(format.ReceiveKey, format.MarshalReceiveItem(r))
}
