package fsys

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
	"github.com/ddfs/ddfs/pkg/store"
)

// An fsync of a file that existed at the last commit and has only had
// its data, size and attributes changed since writes one log block
// (FORMAT.md §3.10) instead of a commit: the ranges its writes touched,
// the extents now in them and the new data they reference. Anything
// else (a new file, xattrs, a clone, a directory) commits.

// logState is what the next log block of one file must hold.
type logState struct {
	ranges     []format.LogRange
	unloggable bool
}

// noteWrite records that [start, end) of file ino changed.
func (f *FS) noteWrite(ino, start, end uint64) {
	if start >= end {
		return
	}
	s := f.logState(ino)
	if s.unloggable {
		return // its fsync commits: the ranges are not wanted
	}
	s.ranges = append(s.ranges, format.LogRange{Start: start, End: end})
	if len(s.ranges) > maxLogRanges {
		s.ranges = mergeRanges(s.ranges)
		if len(s.ranges) > maxLogRanges {
			// Kept, every later write sorted them all again: random writes
			// through a mount spent 61% of the server's CPU here.
			s.unloggable, s.ranges = true, nil
		}
	}
}

// noteUnloggable: file ino changed in a way a log record cannot say.
func (f *FS) noteUnloggable(ino uint64) {
	s := f.logState(ino)
	s.unloggable, s.ranges = true, nil
}

// maxLogRanges bounds what one file accumulates between fsyncs (a
// record holds at most a block anyway).
const maxLogRanges = 256

func (f *FS) logState(ino uint64) *logState {
	if f.logs == nil {
		f.logs = map[uint64]*logState{}
	}
	s := f.logs[ino]
	if s == nil {
		s = &logState{}
		f.logs[ino] = s
	}
	return s
}

// forgetLogs drops the per-file log state at a commit or abort.
func (f *FS) forgetLogs() {
	f.logs, f.loggedData = nil, nil
}

func mergeRanges(rs []format.LogRange) []format.LogRange {
	slices.SortFunc(rs, func(a, b format.LogRange) int {
		return cmp.Compare(a.Start, b.Start)
	})
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 && r.Start <= out[n-1].End {
			out[n-1].End = max(out[n-1].End, r.End)
			continue
		}
		out = append(out, r)
	}
	return out
}

// Fsync makes in's data and attributes durable: a log block when the
// log can say what changed, else a commit of everything.
func (f *FS) Fsync(in *Inode) error {
	if f.tx == nil {
		return nil
	}
	if in.IsRegular() && !f.opt.NoFsyncLog {
		err := f.logFile(in)
		if !errors.Is(err, store.ErrLogFull) {
			return err
		}
	}
	return f.Sync()
}

// logFile writes in's log record, or returns store.ErrLogFull.
func (f *FS) logFile(in *Inode) error {
	s := f.logs[in.Ino]
	if s != nil && s.unloggable {
		return store.ErrLogFull
	}
	committed, err := getOptional(f.st.Tree(format.FSTree), inodeKey(in.Ino))
	if err != nil {
		return err
	}
	cur, err := getOptional(f.tx.Tree(format.FSTree), inodeKey(in.Ino))
	if err != nil || cur == nil || committed == nil {
		return errors.Join(store.ErrLogFull, err) // new or gone since the commit
	}
	if old, err := format.UnmarshalInodeItem(committed); err != nil || old.FileType() != format.FileTypeRegular {
		return errors.Join(store.ErrLogFull, err)
	}
	if s == nil && bytes.Equal(cur, committed) {
		return nil // nothing of this file to make durable
	}
	rec := &format.LogRecord{Ino: in.Ino}
	item, err := format.UnmarshalInodeItem(cur)
	if err != nil {
		return err
	}
	rec.Inode = *item
	if s != nil {
		rec.Ranges = mergeRanges(s.ranges)
		if err := f.logExtents(rec); err != nil {
			return err
		}
	}
	payload := format.MarshalLogRecord(nil, rec)
	if err := f.data.drain(); err != nil {
		return err
	}
	if err := f.tx.WriteLog(payload); err != nil {
		return err
	}
	for _, d := range rec.New {
		f.noteLogged(d.Logical)
	}
	delete(f.logs, in.Ino)
	return nil
}

// noteLogged: a log block references the data extent at logical; its
// space must not be reused before the commit (a replay claims it).
func (f *FS) noteLogged(logical uint64) {
	if f.loggedData == nil {
		f.loggedData = map[uint64]bool{}
	}
	f.loggedData[logical] = true
}

// logExtents fills rec's extents (clipped to its ranges) and the data
// extents of this transaction they reference.
func (f *FS) logExtents(rec *format.LogRecord) error {
	seen := map[uint64]bool{}
	for _, g := range rec.Ranges {
		xs, err := f.extents(rec.Ino, g.Start, g.End)
		if err != nil {
			return err
		}
		for _, x := range xs {
			if x.Type == format.FileExtentInline {
				return store.ErrLogFull
			}
			rec.Extents = append(rec.Extents, clipExtent(x, g))
			if x.DiskLogical == 0 || seen[x.DiskLogical] {
				continue
			}
			seen[x.DiskLogical] = true
			if err := f.logNewData(rec, x); err != nil {
				return err
			}
		}
	}
	return nil
}

// clipExtent is the part of x inside g.
func clipExtent(x fileExtent, g format.LogRange) format.LogExtent {
	it := x.FileExtentItem
	off := x.off
	if off < g.Start {
		it.Offset += g.Start - off
		it.NumBytes -= g.Start - off
		off = g.Start
	}
	if off+it.NumBytes > g.End {
		it.NumBytes = g.End - off
	}
	return format.LogExtent{Off: off, Item: it}
}

// logNewData adds x's data extent to rec when this transaction made it.
func (f *FS) logNewData(rec *format.LogRecord, x fileExtent) error {
	k := format.Key{ObjectID: x.DiskLogical, Type: format.ExtentItemKey, Offset: x.DiskLen}
	b, err := getOptional(f.tx.Tree(format.ExtentTree), k)
	if err != nil {
		return err
	}
	if b == nil {
		return fmt.Errorf("data extent %d+%d has no extent item: %w", x.DiskLogical, x.DiskLen, format.ErrCorrupt)
	}
	e, err := format.UnmarshalExtentItem(b)
	if err != nil || e.Generation != f.tx.Generation() {
		return err // committed: the replay takes a reference
	}
	sums, err := f.sumsOf(x.DiskLogical, x.DiskLen)
	if err != nil {
		return err
	}
	d := format.LogData{Logical: x.DiskLogical, DiskLen: x.DiskLen, Item: *e, Csums: sums}
	d.Item.Refs, d.Item.Flags, d.Item.HashPrefix = 1, 0, 0
	rec.New = append(rec.New, d)
	return nil
}

// sumsOf returns the checksums of [logical, +n) from the running
// transaction's csum tree.
func (f *FS) sumsOf(logical, n uint64) ([]byte, error) {
	sb := f.st.Super()
	ss, cl := uint64(sb.SectorSize), uint64(sb.CsumType.Len())
	t := f.tx.Tree(format.CsumTree)
	out := make([]byte, 0, n/ss*cl)
	for l := logical; l < logical+n; {
		it, err := t.SeekLE(csumKey(l))
		if err != nil && !errors.Is(err, btree.ErrNotFound) {
			return nil, err
		}
		if err != nil || !isCsumKey(it.Key) || l >= it.Key.Offset+uint64(len(it.Data))/cl*ss {
			return nil, fmt.Errorf("data at logical %d has no checksum: %w", l, format.ErrCorrupt)
		}
		from := (l - it.Key.Offset) / ss * cl
		to := min(uint64(len(it.Data))/cl*cl, from+(logical+n-l)/ss*cl)
		out = append(out, it.Data[from:to]...)
		l += (to - from) / cl * ss
	}
	return out, nil
}
