// Package fsys is the namespace on top of the trees: inodes, directories,
// file data, symlinks and xattrs, with POSIX-like operations by path or
// inode number. Changes are grouped into batched transactions: a call
// changes the running transaction, and Sync (or a batch limit reached at
// a safe point) commits it.
//
// A call that fails on a precondition (ENOENT, EEXIST, ENOTEMPTY, EISDIR,
// ENOTDIR, EINVAL, ELOOP) changes nothing. Any other failure (ENOSPC, I/O,
// corruption) may leave the running transaction half-changed: the caller
// must Abort it, and the image keeps its last committed state.
package fsys

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/inband"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// Options tune an FS.
type Options struct {
	// BatchNodes and BatchBytes bound a transaction: at a safe point
	// (MaybeCommit) it commits once it holds this many dirty nodes or has
	// written this many data bytes. They bound memory as well.
	BatchNodes int
	BatchBytes uint64
	// Now gives timestamps (reproducible builds pass a fixed time).
	Now func() time.Time
	// MaxInline is the largest file stored inside the tree.
	MaxInline int
	// OnCommit, if set, is called after every successful commit (tests
	// snapshot each generation with it).
	OnCommit func()
	// IndexCache bounds the in-memory dedupe index (entries).
	IndexCache int
	// BeforeCommit, if set, is called with the generation about to be
	// committed, while the running state is still readable (fault tests:
	// a commit that reports an error may still have become durable).
	BeforeCommit func(gen uint64)
	// StrongTails: while a commit waits for the devices to take its data,
	// new xxh3 index entries get their strong tail (pkg/inband).
	// How many do depends on the devices' speed, so builds that must be
	// reproducible leave it off.
	StrongTails bool
	// NoFsyncLog makes Fsync commit instead of writing the fsync log.
	NoFsyncLog bool
	// Receiving: the FS is opened by the receive an image has in
	// progress, to go on with it; any other writer first undoes it
	// (receive.go).
	Receiving bool
	// DropStep bounds what one commit of a tree drop frees (nodes and
	// references; 0: dropStepDefault).
	DropStep int
}

// FS is a filesystem opened for namespace operations. Not safe for
// concurrent use.
type FS struct {
	st        *store.FS
	tx        *store.Txn
	opt       Options
	nextIno   uint64
	dataBytes uint64
	index     *inband.Index
	// snap is the fs tree of the snapshot this FS shows (read-only), or nil.
	snap *btree.Tree
	// borrowed: the store is another FS's (a snapshot view): Close leaves it open.
	borrowed bool
	// dedupeHits counts references made in the running transaction.
	dedupeHits uint64
	// data writes extents in the background (drained before commits and reads).
	data   dataWriter
	dahead dataAhead // read-only sets: the data after the last small read
	// prehash holds hashes computed ahead for the running WriteAtHashed.
	prehash *Hashes
	// preframed is the frame of the running WriteAtFramed.
	preframed *preframed
	// dirs caches directory paths resolved before (see dirCache).
	dirs dirCache
	// decomp holds extents decompressed ahead by a big read.
	decomp map[uint64][]byte
	// lastExtent caches the last decompressed extent.
	lastExtent struct {
		logical uint64
		data    []byte
	}
	// lastSums is the csum item putSums made or grew last in tx: the
	// next extent allocated right after it extends it (putSums).
	lastSums struct {
		tx         *store.Txn
		start, end uint64
		buf        []byte // the item's data, with room to grow in place
	}
	// logs: what each file's next fsync log record must hold;
	// loggedData: data extents of this transaction a log block names
	// (fsynclog.go).
	logs       map[uint64]*logState
	loggedData map[uint64]bool
	// scratch: tx is a read-only set's pending log replayed in memory.
	scratch bool
	// recvApplied: the stream bytes a receive has applied so far, stored
	// with each commit (receive.go; 0: none).
	recvApplied uint64
}

// New wraps an opened store.
func New(st *store.FS, opt Options) (*FS, error) {
	if opt.BatchNodes == 0 {
		// 16 MiB of 16 KiB nodes, more than twice that in memory with
		// their items. At 4096, a tree of small files held enough dirty
		// nodes to reach the tools' 160 MiB soft memory limit, and the
		// collector ran back to back: mkfs -r of 200k files 4.0 -> 3.3 s,
		// user CPU 3.9 -> 2.5 s, RSS 169 -> 144 MB; 100k files 1.67 ->
		// 1.58 s (3 interleaved runs each).
		opt.BatchNodes = 1024
	}
	if opt.BatchBytes == 0 {
		opt.BatchBytes = 1 << 30
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.MaxInline == 0 {
		opt.MaxInline = 2048
	}
	opt.MaxInline = min(opt.MaxInline, format.MaxInlineData) // readers reject more
	f := &FS{st: st, opt: opt, nextIno: format.FirstFreeIno}
	f.index = inband.New(st, indexHost{f}, inband.Options{Cache: opt.IndexCache, StrongTails: opt.StrongTails})
	f.data.vol = st.Vol
	// The next inode number follows the largest object id in the fs tree.
	it, err := st.Tree(format.FSTree).SeekLE(format.Key{ObjectID: format.CsumObjectID - 1, Type: 0xFF, Offset: ^uint64(0)})
	if err == nil && it.Key.ObjectID >= format.FirstFreeIno {
		f.nextIno = it.Key.ObjectID + 1
	} else if err != nil && !errors.Is(err, btree.ErrNotFound) {
		return nil, err
	}
	if st.LogPending() && !st.Vol.Writable() {
		if err := f.replayInMemory(); err != nil {
			return nil, err
		}
	}
	if err := f.settleReceive(); err != nil {
		return nil, err
	}
	if f.st.Vol.Writable() {
		if err := f.FinishDrops(); err != nil { // what a crash left of a delete
			return nil, err
		}
	}
	return f, nil
}

// OpenDevices opens the set on ds (writable when write) with options opt.
func OpenDevices(ds []device.Device, write bool, opt Options) (*FS, error) {
	vol, err := volume.FromDevices(ds, write)
	if err != nil {
		return nil, err
	}
	st, err := store.OpenVolume(vol)
	if err != nil {
		vol.Close()
		return nil, err
	}
	return New(st, opt)
}

// Adopt makes tx (already begun on the store) the running transaction.
func (f *FS) Adopt(tx *store.Txn) { f.tx = tx }

// Store returns the underlying store.
func (f *FS) Store() *store.FS { return f.st }

// Now returns the timestamp for changes.
func (f *FS) Now() format.Timespec { return TimespecOf(f.opt.Now()) }

// TimespecOf converts a time.
func TimespecOf(t time.Time) format.Timespec {
	return format.Timespec{Sec: t.Unix(), Nsec: uint32(t.Nanosecond())}
}

// Time converts a timespec back.
func Time(ts format.Timespec) time.Time { return time.Unix(ts.Sec, int64(ts.Nsec)) }

// txn returns the running transaction, starting one if needed.
func (f *FS) txn() (*store.Txn, error) {
	if f.tx != nil {
		return f.tx, nil
	}
	if f.snap != nil {
		return nil, syscall.EROFS // snapshots are read-only
	}
	tx, err := f.st.Begin()
	if err != nil {
		return nil, err
	}
	f.tx = tx
	f.dataBytes = 0
	return tx, nil
}

// tree returns the writable fs tree.
func (f *FS) tree() (*btree.Tree, error) {
	tx, err := f.txn()
	if err != nil {
		return nil, err
	}
	return tx.Tree(format.FSTree), nil
}

// rtree returns the tree to read from: the running transaction's view if
// there is one, else the committed one.
func (f *FS) rtree(id format.TreeID) *btree.Tree {
	if f.snap != nil && id == format.FSTree {
		return f.snap
	}
	if f.tx != nil {
		return f.tx.Tree(id)
	}
	return f.st.Tree(id)
}

// Sync commits the running transaction.
func (f *FS) Sync() error {
	if f.tx == nil {
		return nil
	}
	if f.scratch {
		return store.ErrReadOnly
	}
	// The data the commit references must be on the devices first.
	if err := f.data.drain(); err != nil {
		f.Abort()
		return err
	}
	if err := f.index.TailWhileFlushing(f.tx); err != nil {
		f.Abort()
		return err
	}
	if f.opt.BeforeCommit != nil {
		f.opt.BeforeCommit(f.tx.Generation())
	}
	if f.recvApplied != 0 {
		if err := f.tx.SetReceiveApplied(f.recvApplied); err != nil {
			f.Abort()
			return err
		}
	}
	tx := f.tx
	f.tx = nil
	f.forgetLogs()
	tx.AddDedupeHits(f.dedupeHits)
	f.dedupeHits = 0
	if err := tx.Commit(); err != nil {
		return err
	}
	if f.opt.OnCommit != nil {
		f.opt.OnCommit()
	}
	return nil
}

// MaybeCommit commits if the batch is full. Callers call it only between
// whole operations, so a crash never exposes half of one.
func (f *FS) MaybeCommit() error {
	if f.tx != nil && (f.tx.DirtyNodes() >= f.opt.BatchNodes || f.dataBytes >= f.opt.BatchBytes) {
		return f.Sync()
	}
	return nil
}

// Abort drops the running transaction (after a failed operation); the
// FS can no longer change anything.
func (f *FS) Abort() {
	f.dirs.clear()
	f.index.Abort()
	f.data.stop()
	f.forgetLogs()
	if f.tx != nil {
		f.tx.Abort()
		f.tx = nil
	}
}

// Close commits and closes the store.
func (f *FS) Close() error {
	var err error
	if !f.scratch {
		err = f.Sync()
	}
	if derr := f.data.stop(); err == nil {
		err = derr
	}
	if f.borrowed {
		return err
	}
	if cerr := f.st.Close(); err == nil {
		err = cerr
	}
	return err
}

// Errors are *fs.PathError values wrapping syscall errnos, so callers can
// test errors.Is(err, fs.ErrNotExist) and print "path: No such file or
// directory".
func pathErr(op, path string, errno syscall.Errno) error {
	return &fs.PathError{Op: op, Path: path, Err: errno}
}

// noSpace turns store.ErrNoSpace into ENOSPC for path.
func wrapErr(op, path string, err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return err
	}
	if errors.Is(err, store.ErrNoSpace) {
		return &fs.PathError{Op: op, Path: path, Err: syscall.ENOSPC}
	}
	// A bare errno is the usual condition (EEXIST, EINVAL): a PathError,
	// so the CLIs print "IMG:/dir: File exists" as coreutils do.
	var errno syscall.Errno
	if errors.As(err, &errno) && err == error(errno) {
		return &fs.PathError{Op: op, Path: path, Err: errno}
	}
	return fmt.Errorf("%s %s: %w", op, path, err)
}

// PathError is fs.PathError: an operation, the path inside the image and
// the cause (a syscall.Errno for the usual conditions).
type PathError = fs.PathError
