package fsys

// Receive (FORMAT.md §6.13): a stream builds a tree in the live slot
// while the live namespace waits in the RECEIVE_ITEM; readers see the
// parked namespace, and a writer that is not the receive undoes it.

import (
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
	"github.com/ddfs/ddfs/pkg/store"
)

// settleReceive handles a receive the image has in progress at open: a
// read-only FS shows the parked namespace, a writer other than the
// receive (Options.Receiving) undoes it in a commit of its own.
func (f *FS) settleReceive() error {
	r, ok, err := f.st.Receiving()
	if err != nil || !ok {
		return err
	}
	if !f.st.Vol.Writable() {
		f.snap = f.st.TreeAt(r.Parked)
		return nil
	}
	if f.opt.Receiving {
		return nil
	}
	return f.AbortReceive()
}

// BeginReceive parks the live namespace and gives the live slot the tree
// a receive builds: base's (a snapshot name: an incremental stream) or a
// new one holding only the root directory; r names the snapshot the
// receive makes and the stream it comes from.
func (f *FS) BeginReceive(r format.ReceiveItem, base string) error {
	var b *store.Snapshot
	if base != "" {
		s, err := f.st.FindSnapshot(base)
		if err != nil {
			return err
		}
		b = &s
	}
	if err := f.Sync(); err != nil {
		return err
	}
	tx, err := f.txn()
	if err != nil {
		return err
	}
	if err := tx.BeginReceive(r, b); err != nil {
		f.Abort()
		return err
	}
	if b == nil {
		if err := f.InitRoot(Attr{Mode: 0o755}); err != nil {
			f.Abort()
			return err
		}
	}
	if err := f.swapped(); err != nil {
		return err
	}
	return f.Sync()
}

// FinishReceive makes the received tree the snapshot the receive names
// and gives the live slot its namespace back, in one commit.
func (f *FS) FinishReceive() (uint64, error) {
	if err := f.Sync(); err != nil {
		return 0, err
	}
	f.recvApplied = 0
	s := format.SnapshotItem{Ctime: f.Now()}
	if _, err := rand.Read(s.UUID[:]); err != nil {
		return 0, err
	}
	var id uint64
	err := f.dropping(func(tx *store.Txn) (err error) {
		id, err = tx.FinishReceive(s, f.dropData)
		return err
	})
	if err != nil {
		return 0, err
	}
	return id, f.swapped()
}

// AbortReceive gives the live slot its namespace back and frees what the
// receive made, in one commit.
func (f *FS) AbortReceive() error {
	if err := f.Sync(); err != nil {
		return err
	}
	f.recvApplied = 0
	if err := f.dropping(func(tx *store.Txn) error { return tx.AbortReceive(f.dropData) }); err != nil {
		return err
	}
	return f.swapped()
}

// swapped forgets what was resolved in the tree the live slot held and
// keeps inode numbers above those of both trees.
func (f *FS) swapped() error {
	f.dirs.clear()
	it, err := f.rtree(format.FSTree).SeekLE(format.Key{ObjectID: format.CsumObjectID - 1, Type: 0xFF, Offset: ^uint64(0)})
	if err == nil && it.Key.ObjectID >= f.nextIno {
		f.nextIno = it.Key.ObjectID + 1
	} else if err != nil && !errors.Is(err, btree.ErrNotFound) {
		return fmt.Errorf("next inode after a receive: %w", err)
	}
	return nil
}

// ReceiveApplied notes that the receive in progress has applied the
// stream's first n bytes: each commit from now on records it, as the
// point a resumed receive goes on from.
func (f *FS) ReceiveApplied(n uint64) { f.recvApplied = n }
