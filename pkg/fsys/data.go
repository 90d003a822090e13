package fsys

import (
	"bytes"
	"errors"
	"fmt"
	"syscall"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/zeros"
)

// maxExtent bounds one data extent: big enough for sequential
// throughput, small enough that an overwrite rewrites little. It is also
// the unit dedupe and compression work on per call (a multiple of every
// dedupe block size).
const maxExtent = format.MaxExtentBytes

func extentKey(ino, off uint64) format.Key {
	return format.Key{ObjectID: ino, Type: format.FileExtentKey, Offset: off}
}

// fileExtent is one EXTENT_DATA item of a file.
type fileExtent struct {
	off uint64
	format.FileExtentItem
}

func (e fileExtent) end() uint64 { return e.off + e.Len() }

// extents returns the file extents overlapping [start, end).
func (f *FS) extents(ino, start, end uint64) ([]fileExtent, error) {
	return f.extentsOf(nil, ino, start, end, true)
}

// inlineZeros stands for the bytes of inline extents where only their
// length is wanted (extentMap).
var inlineZeros [format.MaxInlineData]byte

// extentMap is extents for callers that use only where inline data lies,
// not its bytes: each inline extent's Inline is zeros of its length, not
// a copy (inline files' copies were 76 MB of a dedupe run's garbage).
func (f *FS) extentMap(ino, start, end uint64) ([]fileExtent, error) {
	return f.extentsOf(nil, ino, start, end, false)
}

// extentsOf appends the extents overlapping [start, end) to out (a
// caller's small array spares a 4K read its allocation).
func (f *FS) extentsOf(out []fileExtent, ino, start, end uint64, inline bool) ([]fileExtent, error) {
	t := f.rtree(format.FSTree)
	from := start
	if it, err := t.SeekLE(extentKey(ino, start)); err == nil && it.Key.ObjectID == ino && it.Key.Type == format.FileExtentKey {
		from = it.Key.Offset
	} else if err != nil && !errors.Is(err, btree.ErrNotFound) {
		return nil, err
	}
	err := t.Scan(extentKey(ino, from), extentKey(ino, end), func(it format.Item) (bool, error) {
		// Decoded in place, not into a new item each (100 MB of garbage
		// in a dedupe run); inline data is copied, as the tree may change.
		e := fileExtent{off: it.Key.Offset}
		err := format.DecodeFileExtentItem(it.Data, &e.FileExtentItem)
		if err == nil {
			err = format.CheckFileExtentKey(it.Key.Offset, &e.FileExtentItem)
		}
		if err != nil {
			return false, fmt.Errorf("inode %d extent at %d: %w", ino, it.Key.Offset, err)
		}
		if e.end() > start {
			if inline {
				e.Inline = bytes.Clone(e.Inline)
			} else if e.Inline != nil {
				e.Inline = inlineZeros[:len(e.Inline):len(e.Inline)]
			}
			out = append(out, e)
		}
		return true, nil
	})
	return out, err
}

// punch removes file bytes [start, end) from the extent map, splitting
// extents that straddle the edges. The size is not changed.
func (f *FS) punch(in *Inode, start, end uint64) error {
	xs, err := f.extents(in.Ino, start, end)
	if err != nil {
		return err
	}
	t, err := f.tree()
	if err != nil {
		return err
	}
	for _, x := range xs {
		if err := t.Delete(extentKey(in.Ino, x.off)); err != nil {
			return err
		}
		keepL, keepR := x.off < start, x.end() > end
		if x.Type == format.FileExtentInline {
			in.NBytes -= x.Len()
			if keepL { // inline data lives at offset 0 only: keep its head
				head := x.FileExtentItem
				head.Inline = x.Inline[:start-x.off]
				if err := t.Insert(extentKey(in.Ino, x.off), format.MarshalFileExtentItem(&head)); err != nil {
					return err
				}
				in.NBytes += head.Len()
			}
			if keepR {
				return fmt.Errorf("inode %d: punch inside inline data: %w", in.Ino, syscall.EINVAL)
			}
			continue
		}
		removed := min(x.end(), end) - max(x.off, start)
		if x.DiskLogical != 0 {
			in.NBytes -= removed
		}
		if keepL {
			l := x.FileExtentItem
			l.NumBytes = start - x.off
			if err := t.Insert(extentKey(in.Ino, x.off), format.MarshalFileExtentItem(&l)); err != nil {
				return err
			}
		}
		if keepR {
			r := x.FileExtentItem
			r.Offset += end - x.off
			r.NumBytes = x.end() - end
			if err := t.Insert(extentKey(in.Ino, end), format.MarshalFileExtentItem(&r)); err != nil {
				return err
			}
		}
		if x.DiskLogical == 0 {
			continue
		}
		refs := 0
		if keepL {
			refs++
		}
		if keepR {
			refs++
		}
		if err := f.addRefs(x.DiskLogical, x.DiskLen, refs-1); err != nil {
			return err
		}
	}
	return nil
}

// addRefs changes a data extent's reference count, freeing it at zero.
func (f *FS) addRefs(logical, diskLen uint64, delta int) error {
	if delta == 0 {
		return nil
	}
	tx, err := f.txn()
	if err != nil {
		return err
	}
	ext := tx.Tree(format.ExtentTree)
	k := format.Key{ObjectID: logical, Type: format.ExtentItemKey, Offset: diskLen}
	b, err := getOptional(ext, k)
	if err != nil {
		return fmt.Errorf("data extent %d+%d: %w", logical, diskLen, err)
	}
	if b == nil {
		return fmt.Errorf("data extent %d+%d has no extent item: %w", logical, diskLen, format.ErrCorrupt)
	}
	e, err := format.UnmarshalExtentItem(b)
	if err != nil {
		return err
	}
	refs := int64(e.Refs) + int64(delta)
	if refs < 0 {
		return fmt.Errorf("data extent %d: reference count below zero: %w", logical, format.ErrCorrupt)
	}
	if refs > 0 {
		e.Refs = uint64(refs)
		return ext.Put(k, format.MarshalExtentItem(e))
	}
	if err := ext.Delete(k); err != nil {
		return err
	}
	if f.lastExtent.logical == logical {
		f.lastExtent.data = nil // its space may be reused
	}
	delete(f.decomp, logical)
	if err := f.index.Drop(tx, logical, e); err != nil {
		return err
	}
	if err := tx.DeleteCsums(logical, logical+diskLen); err != nil {
		return err
	}
	// Space a log block names stays taken until the commit: a replay
	// after a crash claims it.
	return tx.FreeData(logical, diskLen, e.Generation == tx.Generation() && !f.loggedData[logical])
}

// WriteAt writes p at off into a regular file.
func (f *FS) WriteAt(in *Inode, p []byte, off uint64) error {
	if in.IsDir() {
		return syscall.EISDIR
	}
	if !in.IsRegular() {
		return syscall.EINVAL // symlinks are written by Symlink only
	}
	if len(p) == 0 {
		return nil
	}
	end := off + uint64(len(p))
	if end < off || end > format.MaxFileSize {
		return syscall.EFBIG
	}
	if err := f.uninline(in, off, end); err != nil {
		return err
	}
	if err := f.punch(in, off, end); err != nil {
		return err
	}
	if off == 0 && end >= in.Size && len(p) <= f.opt.MaxInline {
		if err := f.writeInline(in, p); err != nil {
			return err
		}
	} else if err := f.writeExtents(in, p, off); err != nil {
		return err
	}
	in.Size = max(in.Size, end)
	in.Mtime = f.Now()
	in.Ctime = in.Mtime
	f.dataBytes += uint64(len(p))
	f.noteWrite(in.Ino, off, end)
	return f.putInode(in)
}

// uninline turns a file's inline data into a regular extent unless the
// write [off, end) replaces all of it.
func (f *FS) uninline(in *Inode, off, end uint64) error {
	xs, err := f.extents(in.Ino, 0, 1)
	if err != nil || len(xs) == 0 || xs[0].Type != format.FileExtentInline {
		return err
	}
	data := xs[0].Inline
	if off == 0 && end >= uint64(len(data)) && end <= uint64(f.opt.MaxInline) {
		return nil
	}
	if err := f.punch(in, 0, uint64(len(data))); err != nil {
		return err
	}
	f.noteWrite(in.Ino, 0, uint64(len(data)))
	return f.writeExtents(in, data, 0)
}

func (f *FS) writeInline(in *Inode, p []byte) error {
	t, err := f.tree()
	if err != nil {
		return err
	}
	x := &format.FileExtentItem{Generation: f.tx.Generation(), Type: format.FileExtentInline, Inline: bytes.Clone(p)}
	if err := t.Insert(extentKey(in.Ino, 0), format.MarshalFileExtentItem(x)); err != nil {
		return err
	}
	in.NBytes += uint64(len(p))
	return nil
}

// writeExtents stores p at file offset off in new data extents. Sectors
// that are all zero are left as holes, so sparse and zero-filled files
// take no space.
func (f *FS) writeExtents(in *Inode, p []byte, off uint64) error {
	return f.writeExtentsWith(in, p, off, nil)
}

// writeExtentsWith is writeExtents under a given policy (nil: the file's,
// taken again for every extent as a write may change it).
func (f *FS) writeExtentsWith(in *Inode, p []byte, off uint64, force *dataPolicy) error {
	ss := uint64(f.st.Super().SectorSize)
	for len(p) > 0 {
		// Skip a run of zero sectors (only whole sectors aligned in the file).
		if z := zeroPrefix(p, off, ss); z > 0 {
			p, off = p[z:], off+z
			continue
		}
		n := dataRun(p, off, ss, maxExtent)
		pol := f.policy(in)
		if force != nil {
			pol = *force
		}
		if !pol.plain() {
			if err := f.writeBlocks(in, p[:n], off, pol); err != nil {
				return err
			}
		} else if err := f.writeSplitting(in, p[:n], off); err != nil {
			return err
		}
		p, off = p[n:], off+n
	}
	return nil
}

// zeroPrefix is the length of the zero sectors at the start of p (whole
// sectors of the file, or the zero tail of p).
func zeroPrefix(p []byte, off, ss uint64) uint64 {
	var z uint64
	for {
		n := ss - (off+z)%ss
		if (off+z)%ss != 0 {
			return z // only sector-aligned runs become holes
		}
		if n > uint64(len(p))-z {
			n = uint64(len(p)) - z
		}
		if n == 0 || !zeros.Is(p[z:z+n]) {
			return z
		}
		z += n
	}
}

// dataRun is the length of the next extent: up to max bytes, stopping
// before a zero sector.
func dataRun(p []byte, off, ss, max uint64) uint64 {
	n := uint64(0)
	for n < uint64(len(p)) && n < max {
		step := ss - (off+n)%ss
		step = min(step, uint64(len(p))-n)
		if n > 0 && (off+n)%ss == 0 && step == ss && zeros.Is(p[n:n+step]) {
			break
		}
		n += step
	}
	return n
}

// writeSplitting writes p as one extent, or as smaller ones when free
// space is too fragmented for one (down to a sector).
func (f *FS) writeSplitting(in *Inode, p []byte, off uint64) error {
	err := f.writeExtent(in, p, off)
	ss := uint64(f.st.Super().SectorSize)
	if !errors.Is(err, store.ErrNoSpace) || uint64(len(p)) <= ss {
		return err
	}
	half := (uint64(len(p))/2 + ss - 1) / ss * ss
	if err := f.writeSplitting(in, p[:half], off); err != nil {
		return err
	}
	return f.writeSplitting(in, p[half:], off+half)
}

// writeExtent writes one new data extent holding p at file offset off.
func (f *FS) writeExtent(in *Inode, p []byte, off uint64) error {
	tx, err := f.txn()
	if err != nil {
		return err
	}
	ss := uint64(f.st.Super().SectorSize)
	diskLen := (uint64(len(p)) + ss - 1) / ss * ss
	if ok, err := f.extendLast(in, p, off, diskLen); ok || err != nil {
		return err
	}
	logical, err := tx.AllocDataOn(diskLen, in.DataTier)
	if err != nil {
		return err
	}
	// The caller may reuse p: the background writer gets its own copy,
	// and owns it once queued (sums first, taken during the copy).
	buf, sums := f.bufferSummed(int(diskLen), p)
	if err := f.putSums(logical, buf, sums); err != nil {
		putBuffer(buf)
		return err
	}
	if err := f.data.write(logical, buf); err != nil {
		return err
	}
	e := &format.ExtentItem{Refs: 1, Generation: tx.Generation(), RAMBytes: diskLen}
	if err := tx.Tree(format.ExtentTree).Insert(format.Key{ObjectID: logical, Type: format.ExtentItemKey, Offset: diskLen}, format.MarshalExtentItem(e)); err != nil {
		return err
	}
	x := &format.FileExtentItem{
		Generation: tx.Generation(), Type: format.FileExtentRegular,
		DiskLogical: logical, DiskLen: diskLen, NumBytes: uint64(len(p)), RAMBytes: diskLen,
	}
	if err := tx.Tree(format.FSTree).Insert(extentKey(in.Ino, off), format.MarshalFileExtentItem(x)); err != nil {
		return err
	}
	in.NBytes += uint64(len(p))
	return nil
}

// extendLast writes p (diskLen on disk) at off by growing the file's
// extent that ends at off, when this transaction wrote it, nothing else
// references it and the space after it is free: sequential small writes
// (a mount's 4 KiB requests) then make one extent, not one per request.
func (f *FS) extendLast(in *Inode, p []byte, off, diskLen uint64) (bool, error) {
	if off == 0 {
		return false, nil
	}
	var arr [1]fileExtent
	xs, err := f.extentsOf(arr[:0], in.Ino, off-1, off, false)
	if err != nil || len(xs) != 1 {
		return false, err
	}
	x, tx := xs[0], f.tx
	if !growable(x, off, tx.Generation()) || x.DiskLen+diskLen > maxExtent || f.loggedData[x.DiskLogical] {
		return false, nil
	}
	ext := tx.Tree(format.ExtentTree)
	k := format.Key{ObjectID: x.DiskLogical, Type: format.ExtentItemKey, Offset: x.DiskLen}
	e, err := f.soleNewExtent(ext, k)
	if err != nil || e == nil {
		return false, err
	}
	at := x.DiskLogical + x.DiskLen
	if ok, err := tx.ExtendData(x.DiskLogical, x.DiskLen, diskLen); !ok || err != nil {
		return false, err
	}
	buf, sums := f.bufferSummed(int(diskLen), p)
	if err := f.putSums(at, buf, sums); err != nil {
		putBuffer(buf)
		return false, err
	}
	if err := f.data.write(at, buf); err != nil {
		return false, err
	}
	if err := ext.Delete(k); err != nil {
		return false, err
	}
	k.Offset += diskLen
	e.RAMBytes = k.Offset
	if err := ext.Insert(k, format.MarshalExtentItem(e)); err != nil {
		return false, err
	}
	x.DiskLen, x.RAMBytes, x.NumBytes = k.Offset, k.Offset, x.NumBytes+uint64(len(p))
	if err := tx.Tree(format.FSTree).Put(extentKey(in.Ino, x.off), format.MarshalFileExtentItem(&x.FileExtentItem)); err != nil {
		return false, err
	}
	in.NBytes += uint64(len(p))
	return true, nil
}

// soleNewExtent returns the extent item at k when the running
// transaction made it, it has one reference and nothing indexes it;
// else nil.
func (f *FS) soleNewExtent(ext *btree.Tree, k format.Key) (*format.ExtentItem, error) {
	b, err := getOptional(ext, k)
	if err != nil || b == nil {
		return nil, err
	}
	e, err := format.UnmarshalExtentItem(b)
	if err != nil || e.Refs != 1 || e.Generation != f.tx.Generation() || e.Flags != 0 || e.RAMBytes != k.Offset {
		return nil, err
	}
	return e, nil
}

// growable says whether file extent x, ending at off, may grow in place:
// plain data this transaction wrote, all of whose disk bytes the file
// uses.
func growable(x fileExtent, off, gen uint64) bool {
	return x.end() == off && x.Type == format.FileExtentRegular && x.Compression == format.CompressNone &&
		x.DiskLogical != 0 && x.Offset == 0 && x.NumBytes == x.DiskLen && x.RAMBytes == x.DiskLen &&
		x.Generation == gen
}

// Truncate sets the size of a regular file.
func (f *FS) Truncate(in *Inode, size uint64) error {
	if in.IsDir() {
		return syscall.EISDIR // as truncate(2)
	}
	if !in.IsRegular() {
		return syscall.EINVAL
	}
	if size > format.MaxFileSize {
		return syscall.EFBIG
	}
	if size < in.Size {
		if err := f.truncateInline(in, size); err != nil {
			return err
		}
		if err := f.punch(in, size, ^uint64(0)); err != nil {
			return err
		}
		f.noteWrite(in.Ino, size, format.MaxFileSize)
	}
	in.Size = size
	in.Mtime = f.Now()
	in.Ctime = in.Mtime
	return f.putInode(in)
}

// truncateInline cuts inline data, which punch cannot split at its end.
func (f *FS) truncateInline(in *Inode, size uint64) error {
	xs, err := f.extents(in.Ino, 0, 1)
	if err != nil || len(xs) == 0 || xs[0].Type != format.FileExtentInline || size >= xs[0].end() {
		return err
	}
	return f.punch(in, size, xs[0].end())
}
