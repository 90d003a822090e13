package fsys

import (
	"crypto/rand"
	"fmt"
	"syscall"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/store"
)

// CreateSnapshot commits what is pending and then keeps the committed
// namespace as snapshot name (FORMAT.md §6.12), in a commit of its own.
func (f *FS) CreateSnapshot(name string) (uint64, error) {
	if !format.ValidName(name) {
		return 0, fmt.Errorf("snapshot name %q: %w", name, syscall.EINVAL)
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	tx, err := f.txn()
	if err != nil {
		return 0, err
	}
	s := format.SnapshotItem{Ctime: f.Now(), Name: name}
	if _, err := rand.Read(s.UUID[:]); err != nil {
		return 0, err
	}
	id, err := tx.CreateSnapshot(s)
	if err != nil {
		f.Abort()
		return 0, err
	}
	return id, f.Sync()
}

// DeleteSnapshot deletes snapshot name in a commit of its own, then
// frees what only it referenced (nodes, data extents with their sums and
// index entries) in bounded commits (FinishDrops).
func (f *FS) DeleteSnapshot(name string) error {
	s, err := f.st.FindSnapshot(name)
	if err != nil {
		return err
	}
	return f.dropping(func(tx *store.Txn) error { return tx.DropSnapshot(s.ID) })
}

// Rollback makes the live namespace snapshot name's, in a commit of its
// own after what is pending; what only the replaced namespace held is
// freed. The snapshot stays, and so do later ones.
func (f *FS) Rollback(name string) error {
	s, err := f.st.FindSnapshot(name)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	f.dirs.clear() // paths resolved in the replaced namespace
	return f.dropping(func(tx *store.Txn) error { return tx.RollbackTo(s.ID) })
}

// dropping runs op, which drops a tree's references, in a commit of its
// own (the FS is aborted when op fails half-way), then frees the trees
// it left to drop.
func (f *FS) dropping(op func(tx *store.Txn) error) error {
	tx, err := f.txn()
	if err != nil {
		return err
	}
	if err := op(tx); err != nil {
		f.Abort()
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return f.FinishDrops()
}

// dropStepDefault bounds what one commit of a drop frees: the nodes it
// dirties (extent, csum and free-space tree changes) stay a few MiB.
const dropStepDefault = 4096

// FinishDrops frees the trees being dropped (deleted snapshots, trees a
// rollback replaced), a bounded step per commit. A crash between steps
// loses nothing: each commit records what is left, and the next writer
// goes on.
func (f *FS) FinishDrops() error {
	n, err := f.st.PendingDrops()
	if err != nil || n == 0 {
		return err
	}
	budget := f.opt.DropStep
	if budget <= 0 {
		budget = dropStepDefault
	}
	for more := true; more; {
		tx, err := f.txn()
		if err != nil {
			return err
		}
		if more, err = tx.DropStep(budget, f.dropData); err != nil {
			f.Abort()
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
	}
	return nil
}

// dropData drops a leaf's reference to its data extent (a tree node
// freed by a snapshot delete or a rollback).
func (f *FS) dropData(x *format.FileExtentItem) error {
	return f.addRefs(x.DiskLogical, x.DiskLen, -1)
}

// Snapshots lists the snapshots.
func (f *FS) Snapshots() ([]store.Snapshot, error) { return f.st.Snapshots() }

// OpenSnapshot returns a read-only view of snapshot name: its namespace
// reads as the snapshot keeps it, and every change fails with EROFS.
// f must not be changed while the view is in use; closing the view
// leaves f's store open.
func (f *FS) OpenSnapshot(name string) (*FS, error) {
	s, err := f.st.FindSnapshot(name)
	if err != nil {
		return nil, err
	}
	v, err := New(f.st, f.opt)
	if err != nil {
		return nil, err
	}
	v.snap, v.borrowed = f.st.TreeAt(s.Root), true
	return v, nil
}
