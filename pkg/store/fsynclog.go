package store

import (
	"errors"
	"fmt"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/alloc"
	"github.com/ddfs/ddfs/pkg/volume"
)

// The fsync log (FORMAT.md §3.10): an fsync writes its file's records in
// one log block and points the superblocks at it, without a commit. The
// store writes, reads and clears the log; what a record means to a file
// is the replayer's (fsys).

// ErrLogPending: the image has an fsync log that must be replayed before
// anything writes to it.
var ErrLogPending = errors.New("an fsync log is pending")

// ErrLogFull: the record cannot go into the log (no room, too many
// blocks, or the transaction changed what a log cannot express); the
// caller commits instead.
var ErrLogFull = errors.New("the fsync log cannot take this record")

// LogReplayer replays the pending log of st in one commit.
type LogReplayer func(st *FS) error

var logReplayer LogReplayer

// RegisterLogReplayer installs the replayer every writable open runs on
// an image with a pending log; without one such opens fail with
// ErrLogPending.
func RegisterLogReplayer(r LogReplayer) { logReplayer = r }

// LogPending reports whether the committed state has an fsync log.
func (fs *FS) LogPending() bool { return fs.sb.LogRoot != 0 }

// replayLog runs the registered replayer on a writable open.
func (fs *FS) replayLog() error {
	if logReplayer == nil {
		return fmt.Errorf("%w: open the image writable with ddfs or fsck.ddfs -y first", ErrLogPending)
	}
	fs.replaying = true
	defer func() { fs.replaying = false }()
	if err := logReplayer(fs); err != nil {
		return fmt.Errorf("replay the fsync log: %w", err)
	}
	if fs.sb.LogRoot != 0 {
		return fmt.Errorf("replay the fsync log: it is still pending: %w", ErrCorrupt)
	}
	return nil
}

// ReadLog returns the payloads of the pending log's blocks, oldest
// first. Every block was durable before the superblock named it, so one
// that does not validate on any copy is corruption.
func (fs *FS) ReadLog() ([][]byte, error) { return ReadLog(fs.Vol, &fs.sb) }

// ReadLog is FS.ReadLog on a volume with superblock sb (fsck reads the
// log without opening the store).
func ReadLog(vol *volume.Volume, sb *format.Superblock) ([][]byte, error) {
	if sb.LogRoot == 0 {
		return nil, nil
	}
	if sb.LogSeq >= format.MaxLogBlocks {
		return nil, fmt.Errorf("fsync log of %d blocks: %w", sb.LogSeq+1, ErrCorrupt)
	}
	out := make([][]byte, sb.LogSeq+1)
	at := sb.LogRoot
	for seq := int(sb.LogSeq); seq >= 0; seq-- {
		b, err := readLogBlock(vol, sb, at, uint64(seq))
		if err != nil {
			return nil, fmt.Errorf("fsync log block %d at %d: %w", seq, at, err)
		}
		out[seq], at = b.Payload, b.Prev
	}
	return out, nil
}

func readLogBlock(vol *volume.Volume, sb *format.Superblock, at, seq uint64) (*format.LogBlock, error) {
	copies := vol.Copies(at)
	size := format.LogBlockSize(sb)
	if copies == 0 || at%uint64(size) != 0 {
		return nil, fmt.Errorf("not in any chunk or not node aligned: %w", ErrCorrupt)
	}
	var errs error
	for m := 0; m < copies; m++ {
		raw := make([]byte, size)
		if err := vol.ReadCopy(at, raw, m); err != nil {
			errs = errors.Join(errs, fmt.Errorf("copy %d: %w", m, err))
			continue
		}
		b, err := format.UnmarshalLogBlock(raw, sb.CsumType, sb.FSID, sb.Generation, seq)
		if err == nil {
			return b, nil
		}
		errs = errors.Join(errs, fmt.Errorf("copy %d: %w", m, err))
	}
	return nil, errs
}

// LogRecords decodes every record of the pending log of vol (nil when
// there is none); fsck and the replay share it, so what one refuses the
// other does.
func LogRecords(vol *volume.Volume, sb *format.Superblock) ([]format.LogRecord, error) {
	payloads, err := ReadLog(vol, sb)
	if err != nil {
		return nil, err
	}
	var out []format.LogRecord
	for i, p := range payloads {
		recs, err := format.UnmarshalLogRecords(p, sb.SectorSize, sb.CsumType)
		if err != nil {
			return nil, fmt.Errorf("fsync log block %d: %w", i, err)
		}
		out = append(out, recs...)
	}
	return out, nil
}

// logSafe: the log can express this transaction's part that an fsync
// needs only while the committed chunk map and devices still describe
// where its data lies.
func (tx *Txn) logSafe() bool {
	fs := tx.fs
	return len(tx.newChunks) == 0 && len(tx.addedDevs) == 0 && len(tx.freedStripes) == 0 &&
		tx.superChange == nil && tx.settings == nil && tx.incompat&^fs.sb.Incompat == 0 &&
		fs.sb.Incompat&format.IncompatFSIDChange == 0 && !fs.repair
}

// WriteLog appends one block with payload to the fsync log: the block,
// a flush, the superblocks naming it, a flush. The caller has written
// the data the records reference (Flush orders it before the block).
// ErrLogFull asks for a commit instead.
func (tx *Txn) WriteLog(payload []byte) error {
	fs := tx.fs
	if fs.tx != tx || !tx.logSafe() || len(payload) > int(format.LogBlockSize(&fs.sb))-format.LogHeaderSize {
		return ErrLogFull
	}
	b := format.LogBlock{FSID: fs.sb.FSID, Generation: fs.sb.Generation, Payload: payload}
	if fs.sb.LogRoot != 0 {
		b.Seq, b.Prev = fs.sb.LogSeq+1, fs.sb.LogRoot
	}
	if b.Seq >= format.MaxLogBlocks {
		return ErrLogFull
	}
	ns := uint64(format.LogBlockSize(&fs.sb))
	at, ok, err := tx.takeFrom(format.ChunkMetadata, ns, ns, func(bg *BlockGroup) bool { return !bg.isNew })
	if err != nil {
		// Not ErrLogFull: the commit it would ask for would not see the
		// failure again (a lazily loaded map has dropped the block it
		// refused, lazyfree.go), and a lie in the extent tree must reach
		// the user.
		return err
	}
	if !ok {
		return ErrLogFull
	}
	tx.logBlocks = append(tx.logBlocks, alloc.Range{Start: at, Len: ns})
	raw, err := format.MarshalLogBlock(&b, uint32(ns), fs.sb.CsumType)
	if err != nil {
		return err
	}
	// From the first write on, a failure leaves the devices and memory
	// apart: no more transactions, as after a failed commit.
	sb := fs.sb
	sb.LogRoot, sb.LogSeq = at, b.Seq
	sb.Incompat |= format.IncompatFsyncLog
	for _, step := range []func() error{
		func() error { return fs.Vol.Write(at, raw) },
		fs.Vol.Flush,
		func() error { return fs.Vol.WriteSupers(&sb) },
		fs.Vol.Flush,
	} {
		if err := step(); err != nil {
			fs.broken = true
			return fmt.Errorf("fsync log block %d: %w", b.Seq, err)
		}
	}
	fs.sb = sb
	fs.LogBlocks++
	tx.openRows = nil // durable now: no row it wrote may change again
	return nil
}

// releaseLog frees the log blocks at commit, pinned: the superblocks
// that name them stay current until the commit is durable.
func (tx *Txn) releaseLog() error {
	for _, r := range tx.logBlocks {
		if err := tx.freeExtent(r.Start, r.Len, false); err != nil {
			return err
		}
	}
	tx.logBlocks = nil
	return nil
}

// BeginScratch starts a transaction that never commits, for a read-only
// open to see a pending log replayed in memory.
func (fs *FS) BeginScratch() (*Txn, error) {
	if fs.tx != nil {
		return nil, ErrBusy
	}
	fs.scratch = true
	defer func() { fs.scratch = false }()
	tx, err := fs.begin()
	if err != nil {
		return nil, err
	}
	tx.scratch = true
	return tx, nil
}

// ClaimData marks [logical, +n) of a data chunk used by the transaction:
// a replayed record's new data extent, which the committed state calls
// free. Space already in use (by the trees or this transaction) is
// refused: the log and the trees disagree, and "in use" wins.
func (tx *Txn) ClaimData(logical, n uint64) error {
	bg := tx.fs.blockGroup(logical)
	if bg == nil || bg.Chunk.Type != format.ChunkData || logical+n > bg.Chunk.Logical+bg.Chunk.Length || logical+n < logical {
		return fmt.Errorf("data [%d,+%d) is not in a data chunk: %w", logical, n, ErrCorrupt)
	}
	if err := tx.fs.verifiedFree(bg); err != nil {
		return err
	}
	if !bg.free.Contains(logical, n) {
		return fmt.Errorf("data [%d,+%d) is already in use: %w", logical, n, ErrCorrupt)
	}
	if err := bg.free.Remove(logical, n); err != nil {
		return err
	}
	bg.Used += n
	return nil
}
