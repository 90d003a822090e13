package fsys

import (
	"fmt"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/inband"
	"github.com/ddfs/ddfs/pkg/zeros"
)

// rededupeBlocks passes [s, e) through dedupe a block at a time, reading
// each once at most: a block seen before becomes a reference (as the
// write path makes), and a new block that already lies at the head of an
// extent only this file uses is cut off in place as its own indexed
// extent (cut) instead of being written again. On the bench set that was
// the 390 MB of first copies written and flushed a second time. Blocks
// that do not fit go through the write path from the bytes already read.
// With strong sector sums and o.Sums, a block whose sums match one read
// before is shared unread (shareBySums): the bench's repeats, 3/4 of it.
func (f *FS) rededupeBlocks(in *Inode, s, e uint64, pol dataPolicy, o *RededupeOptions, st *RededupeStats, scratch *[]byte) error {
	ss := uint64(f.st.Super().SectorSize)
	if uint64(cap(*scratch)) < pol.block+ss {
		*scratch = make([]byte, pol.block+ss) // a block and its padding
	}
	for bo := s; bo < e; {
		n := min(pol.block-bo%pol.block, e-bo)
		f.dataBytes += n // the transaction bound, as for a rewrite
		d, known, shared, err := f.shareBySums(in, bo, n, pol, o.Sums)
		if err != nil {
			return err
		}
		if shared {
			st.SumShared += n
			bo += n
			continue
		}
		x, b, ok, err := f.readBlock(in, bo, n, *scratch, o.Ahead)
		if b.hashed {
			st.Ahead += n
		}
		if err == nil && !ok {
			err = f.rewriteFrom(in, bo, b.data, pol)
		} else if err == nil {
			bs := []block{b}
			hp := pol
			hp.ss = 0 // an adopted block keeps its sums: none to make
			hashBlocks(bs, hp)
			if known {
				o.Sums.learn(d, bs[0].hash) // the bytes read were verified against these sums
			}
			err = f.dedupeAdoptable(in, x, bs[0], pol, st)
		}
		if err != nil {
			return err
		}
		bo += n
	}
	return nil
}

// readBlock reads the n bytes of the file at bo into buf and reports
// whether they can stay where they lie (adoptable); such a block is read
// straight from its extent with its last sector's padding, one verified
// read (or taken from ahead, read, summed and hashed there), others
// through ReadAt.
func (f *FS) readBlock(in *Inode, bo, n uint64, buf []byte, ahead *BlockAhead) (fileExtent, block, bool, error) {
	ss := uint64(f.st.Super().SectorSize)
	x, ok, err := f.adoptable(in, bo, n)
	if err != nil {
		return x, block{}, false, err
	}
	if !ok {
		data := buf[:n]
		if got, err := f.ReadAt(in, data, bo); err != nil && uint64(got) != n {
			return x, block{}, false, err
		}
		return x, block{off: bo, data: data}, false, nil
	}
	raw, hash, err := ahead.take(bo, x.DiskLogical, n)
	if err != nil {
		return x, block{}, false, err
	}
	b := block{off: bo, hash: hash, hashed: raw != nil}
	if raw == nil {
		raw = buf[:(n+ss-1)/ss*ss]
		if err := f.readVerified(x.DiskLogical, raw); err != nil {
			return x, block{}, false, err
		}
	}
	b.data = raw[:n]
	// The write path leaves zero sectors as holes and pads with zeros; a
	// block that would be stored otherwise is not adopted.
	ok = zeros.Is(raw[n:]) && zeroPrefix(b.data, bo, ss) == 0 && dataRun(b.data, bo, ss, maxExtent) == n
	return x, b, ok, nil
}

// rewriteFrom punches the block at bo and writes data there again
// through the dedupe write path.
func (f *FS) rewriteFrom(in *Inode, bo uint64, data []byte, pol dataPolicy) error {
	if err := f.punch(in, bo, bo+uint64(len(data))); err != nil {
		return err
	}
	return f.writeExtentsWith(in, data, bo, &pol)
}

// dedupeAdoptable references the block's earlier copy, or else indexes
// the block where it lies (cut).
func (f *FS) dedupeAdoptable(in *Inode, x fileExtent, b block, pol dataPolicy, st *RededupeStats) error {
	data := b.data
	h, err := f.index.Lookup(b.hash, pol.hash, uint64(len(data)))
	if err != nil {
		return err
	}
	if h != nil && pol.verify {
		same, err := f.index.Same(h, data)
		if err != nil {
			return err
		}
		if !same {
			return f.rewriteFrom(in, x.off, data, pol) // a collision: the write path stores it alone
		}
	}
	if h != nil {
		// Cut first, so the rest of x stays at its extent's first byte
		// and its next block can be adopted too; the punch frees the cut.
		if _, err := f.cut(in, x, uint64(len(data)), b.hash, nil); err != nil {
			return err
		}
		if err := f.punch(in, x.off, x.off+uint64(len(data))); err != nil {
			return err
		}
		return f.referenceBlock(in, b.off, uint64(len(b.data)), h)
	}
	ok, err := f.cut(in, x, uint64(len(data)), b.hash, &pol)
	if err != nil {
		return err
	}
	if !ok {
		return f.rewriteFrom(in, x.off, b.data, pol)
	}
	st.Adopted += uint64(len(data))
	return nil
}

// adoptable reports whether the n bytes of the file at bo may stay
// where they lie: they start a file extent x of uncompressed data at the
// extent's first byte and end on a sector boundary inside it, or are the
// rest of it. Their bytes (readBlock) and the extent's sharing (cut) are
// checked after.
func (f *FS) adoptable(in *Inode, bo, n uint64) (fileExtent, bool, error) {
	ss := uint64(f.st.Super().SectorSize)
	if pol := f.policy(in); pol.compress != format.CompressNone {
		return fileExtent{}, false, nil // the write path would compress it
	}
	xs, err := f.extents(in.Ino, bo, bo+n)
	if err != nil || len(xs) != 1 {
		return fileExtent{}, false, err
	}
	x := xs[0]
	whole := (n+ss-1)/ss*ss == x.DiskLen
	if !whole && x.NumBytes <= n {
		return fileExtent{}, false, nil // sectors past the block that nothing would reference
	}
	ok := x.off == bo && bo%ss == 0 && x.Type == format.FileExtentRegular && x.DiskLogical != 0 &&
		x.Compression == format.CompressNone && x.Offset == 0 && x.RAMBytes == x.DiskLen &&
		x.NumBytes >= n && (n%ss == 0 || whole) && (!whole || x.NumBytes == n)
	return x, ok, nil
}

// cut makes the block of n bytes at the head of file extent x its own
// extent where it lies: the extent item is cut in two (the block; the
// rest, referenced by the rest of x) in one transaction, and with index
// set (a new block, of this hash) the block's extent is flagged and gets
// its DEDUPE_ITEM. Sector sums stay (an
// item may span extents). Only an extent with one reference is cut
// (another file pointing at its tail would lose it): false, nothing done.
func (f *FS) cut(in *Inode, x fileExtent, n uint64, hash [format.CsumSize]byte, index *dataPolicy) (bool, error) {
	if ss := uint64(f.st.Super().SectorSize); index == nil && (n+ss-1)/ss*ss == x.DiskLen {
		// Nothing to index and no rest to keep at an extent's head: the
		// cut would put back the same items (a repeated small file).
		return true, nil
	}
	tx, err := f.txn()
	if err != nil {
		return false, err
	}
	ext, fst := tx.Tree(format.ExtentTree), tx.Tree(format.FSTree)
	l, dl := x.DiskLogical, x.DiskLen
	// The file's leaf first, as it is: a leaf a snapshot shares counts
	// once in the extent's refs (§6.12), so only once it is the file's own
	// copy does refs 1 mean no other tree points at the extent.
	if err := fst.Put(extentKey(in.Ino, x.off), format.MarshalFileExtentItem(&x.FileExtentItem)); err != nil {
		return false, err
	}
	k := format.Key{ObjectID: l, Type: format.ExtentItemKey, Offset: dl}
	raw, err := getOptional(ext, k)
	if err != nil {
		return false, err
	}
	if raw == nil {
		return false, fmt.Errorf("inode %d extent at %d: data extent %d missing: %w", in.Ino, x.off, l, format.ErrCorrupt)
	}
	e, err := format.UnmarshalExtentItem(raw)
	if err != nil {
		return false, err
	}
	if e.Refs != 1 || e.Flags != 0 || e.Compression != format.CompressNone || e.RAMBytes != dl {
		return false, nil
	}
	ss := uint64(f.st.Super().SectorSize)
	nd := (n + ss - 1) / ss * ss
	head := *e
	head.RAMBytes = nd
	if index != nil {
		if err := f.index.Enter(tx, &head, l, nd, inband.Entry{Hash: hash, Algo: index.hash, Length: n}); err != nil {
			return false, err
		}
	}
	if err := ext.Delete(k); err != nil {
		return false, err
	}
	if err := ext.Insert(format.Key{ObjectID: l, Type: format.ExtentItemKey, Offset: nd}, format.MarshalExtentItem(&head)); err != nil {
		return false, err
	}
	hx := x.FileExtentItem
	hx.DiskLen, hx.NumBytes, hx.RAMBytes = nd, n, nd
	if err := fst.Put(extentKey(in.Ino, x.off), format.MarshalFileExtentItem(&hx)); err != nil {
		return false, err
	}
	if f.lastExtent.logical == l {
		f.lastExtent.data = nil
	}
	if nd == dl {
		return true, nil
	}
	rest := *e
	rest.RAMBytes = dl - nd
	if err := ext.Insert(format.Key{ObjectID: l + nd, Type: format.ExtentItemKey, Offset: dl - nd}, format.MarshalExtentItem(&rest)); err != nil {
		return false, err
	}
	rx := x.FileExtentItem
	rx.DiskLogical, rx.DiskLen, rx.NumBytes, rx.RAMBytes = l+nd, dl-nd, x.NumBytes-n, dl-nd
	return true, fst.Insert(extentKey(in.Ino, x.off+n), format.MarshalFileExtentItem(&rx))
}
