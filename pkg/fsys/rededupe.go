package fsys

import (
	"errors"
	"fmt"
	"sync"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
	"github.com/ddfs/ddfs/pkg/inband"
)

// RededupeOptions choose how Rededupe cuts and hashes data.
type RededupeOptions struct {
	Block uint64          // dedupe block (average with CDC), a power of two 4K..8M
	CDC   bool            // content-defined chunks
	Hash  format.CsumType // sha256, blake3 or xxh3 (matches then byte-compared)
	// Want, when set, picks the data extents (by logical and disk
	// length) worth passing through; the others are left alone (a
	// prefilter ruled them out).
	Want func(logical, diskLen uint64) bool
	// Window is the most file data read and rewritten at a time (0:
	// maxExtent); a multiple of Block with fixed chunking.
	Window uint64
	// Sums, when set and the image's sector sums are strong, shares a
	// fixed block whose stored sums equal those of a block read before
	// without reading it (SumShares); nil: every block is read.
	Sums *SumShares
	// Ahead, when set, has read the blocks planned for it (BlockAhead).
	Ahead *BlockAhead
}

// RededupeStats counts what Rededupe did.
type RededupeStats struct {
	Rewritten uint64 // file bytes passed through the dedupe write path
	Shared    uint64 // blocks turned into references to existing extents
	Skipped   uint64 // file bytes left unread because Want ruled their extent out
	Adopted   uint64 // of Rewritten: new blocks indexed where they lay, not written again
	SumShared uint64 // of Rewritten: blocks shared on their stored strong sums, unread
	Ahead     uint64 // of Rewritten: blocks read, summed and hashed by BlockAhead
}

// Rededupe passes the file's data that is not yet held in indexed
// single-block extents through dedupe, a window of at most maxExtent
// bytes at a time: a block seen before becomes a reference to its extent,
// a new one gets its own indexed extent (fixed blocks: cut off in place
// where it can, rededupeBlocks; else written again), and punching the old
// extents frees them once nothing refers to them. Data already in indexed
// blocks is left alone, so a second pass frees nothing twice. Times are
// kept (nothing here sets them). Callers commit between calls of step
// (each window is a whole change): step returns false when the file is
// done.
func (f *FS) Rededupe(in *Inode, o RededupeOptions, st *RededupeStats) (step func() (bool, error)) {
	pos := uint64(0)
	window := o.Window
	if window == 0 || window > maxExtent {
		window = maxExtent
	}
	return func() (bool, error) {
		if !in.IsRegular() || pos >= in.Size {
			return false, nil // no extent starts past the end (a step per small file)
		}
		start, ok, err := f.nextExtent(in.Ino, pos)
		if err != nil || !ok || start >= in.Size {
			return false, err
		}
		if o.CDC {
			start = max(start, pos)
		} else {
			start = max(start/o.Block*o.Block, pos)
		}
		end := min(start+window, in.Size)
		pos = end
		buf := scratchPool.Get().(*[]byte)
		defer scratchPool.Put(buf)
		return true, f.rededupeRange(in, start, end, o, st, buf)
	}
}

// nextExtent is the offset of the first file extent ending after pos; an
// explicit hole at pos counts as absent, so the next step starts at the
// next extent: a hole of 2^60 bytes must not cost a step per window.
func (f *FS) nextExtent(ino, pos uint64) (uint64, bool, error) {
	xs, err := f.extentMap(ino, pos, pos+1)
	if err != nil || (len(xs) > 0 && !xs[0].IsHole()) {
		return pos, len(xs) > 0, err
	}
	var next uint64
	found := false
	err = f.rtree(format.FSTree).Scan(extentKey(ino, pos), extentKey(ino, ^uint64(0)), func(it format.Item) (bool, error) {
		next, found = it.Key.Offset, true
		return false, nil
	})
	return next, found, err
}

// rededupeRange rewrites the runs of [start, end) whose extents are not
// indexed blocks, widened to block boundaries for fixed chunking.
func (f *FS) rededupeRange(in *Inode, start, end uint64, o RededupeOptions, st *RededupeStats, buf *[]byte) error {
	xs, err := f.extentMap(in.Ino, start, end)
	if err != nil {
		return err
	}
	var runs [][2]uint64
	for _, x := range xs {
		done, err := f.indexedBlock(x)
		if err != nil {
			return err
		}
		if done || x.Type == format.FileExtentInline {
			continue // inline data is small and lives in the tree
		}
		if o.Want != nil && !o.Want(x.DiskLogical, x.DiskLen) {
			// A block begun in a wanted extent before is read whole.
			s := max(x.off, start)
			if n := len(runs); n > 0 {
				s = max(s, runs[n-1][1])
			}
			st.Skipped += min(x.end(), end) - min(s, min(x.end(), end))
			continue
		}
		s, e := max(x.off, start), min(x.end(), end)
		if !o.CDC {
			s, e = s/o.Block*o.Block, min((e+o.Block-1)/o.Block*o.Block, end)
		}
		if n := len(runs); n > 0 && s <= runs[n-1][1] {
			runs[n-1][1] = max(runs[n-1][1], e)
		} else if s < e {
			runs = append(runs, [2]uint64{s, e})
		}
	}
	if len(runs) == 0 {
		return nil
	}
	before := in.InodeItem
	pol := f.policy(in)
	pol.dedupe, pol.cdc, pol.block = true, o.CDC, o.Block
	pol.useHash(o.Hash)
	tx, err := f.txn()
	if err != nil {
		return err
	}
	tx.NeedIncompat(format.IncompatDedupe)
	hits := f.dedupeHits
	for _, r := range runs {
		var err error
		if o.CDC {
			err = f.rewriteRun(in, r[0], r[1], pol, buf)
		} else {
			err = f.rededupeBlocks(in, r[0], r[1], pol, &o, st, buf)
		}
		if err != nil {
			return err
		}
		st.Rewritten += r[1] - r[0]
	}
	st.Shared += f.dedupeHits - hits
	if in.InodeItem == before {
		return nil // a block shared for one it held: nbytes as it was
	}
	return f.putInode(in)
}

// scratchPool holds rewriteRun's read buffers: one per window of every
// file would be all the data again in garbage (46k small files: 340 MB).
var scratchPool = sync.Pool{New: func() any { return new([]byte) }}

// rewriteRun reads [s, e), punches it and writes it again under pol
// (through *scratch, grown as needed).
func (f *FS) rewriteRun(in *Inode, s, e uint64, pol dataPolicy, scratch *[]byte) error {
	if uint64(cap(*scratch)) < e-s {
		*scratch = make([]byte, e-s)
	}
	buf := (*scratch)[:e-s]
	if n, err := f.ReadAt(in, buf, s); err != nil && uint64(n) != e-s {
		return err
	}
	if err := f.punch(in, s, e); err != nil {
		return err
	}
	f.dataBytes += e - s
	return f.writeExtentsWith(in, buf, s, &pol)
}

// indexedBlock reports whether x references the start of an extent that
// holds one indexed dedupe block.
func (f *FS) indexedBlock(x fileExtent) (bool, error) {
	if x.Type != format.FileExtentRegular || x.DiskLogical == 0 || x.Offset != 0 {
		return x.DiskLogical == 0 && x.Type != format.FileExtentInline, nil // holes need nothing
	}
	b, err := f.rtree(format.ExtentTree).Get(format.Key{ObjectID: x.DiskLogical, Type: format.ExtentItemKey, Offset: x.DiskLen})
	if errors.Is(err, btree.ErrNotFound) {
		return false, fmt.Errorf("file extent at %d: data extent %d missing: %w", x.off, x.DiskLogical, format.ErrCorrupt)
	}
	if err != nil {
		return false, err
	}
	e, err := format.UnmarshalExtentItem(b)
	if err != nil {
		return false, err
	}
	return inband.Indexed(e), nil
}
