package fsys

import (
	"bytes"

	"golang.org/x/sync/errgroup"

	"github.com/ddfs/ddfs/format"
)

// verifyHits proves every hit and drops those that differ (a collision:
// the block is then stored on its own). With xxh3 this is what makes a
// match safe: a hit whose entry has a strong tail (§6.8) is proven by
// the block's BLAKE3 and the extent's stored sums, unread; the others
// are byte-compared with the extent, in parallel, on a raw read of the
// first copy, a difference or a failed read going through the checked
// read of every copy.
func (f *FS) verifyHits(blocks []block, hits []*dedupeHit, pol dataPolicy) error {
	var read []int
	var g errgroup.Group
	g.SetLimit(cpus())
	for i, h := range hits {
		switch {
		case h == nil:
		case pol.tails && h.strong != nil && h.compression == format.CompressNone:
			g.Go(func() error {
				if format.StrongDedupeHash(blocks[i].data) != *h.strong {
					hits[i] = nil
				}
				return nil
			})
		default:
			read = append(read, i)
		}
	}
	g.Wait()
	// A tail proves the block is what the entry's extent held when the
	// tail was made; the extent's stored sector sums must be the block's
	// too, or the match is compared like an untailed one. So an entry
	// whose tail lies (a crafted or damaged image) cannot give this write
	// other bytes: to pass, the stored sums would have to lie as well, and
	// reads of the extent then fail their checksums instead of returning
	// wrong data. A compressed extent's sums are of its frame, so its
	// matches went to the compare above, tail or not.
	for i, h := range hits {
		if h == nil || !pol.tails || h.strong == nil || h.compression != format.CompressNone {
			continue
		}
		ok, err := f.sumsProve(h, &blocks[i])
		if err != nil {
			return err
		}
		if !ok {
			read = append(read, i)
		}
	}
	if len(read) == 0 {
		return nil
	}
	// A match may be data still queued for writing (one drain per write
	// call, not per hit).
	if err := f.data.drain(); err != nil {
		return err
	}
	same := make([]bool, len(hits))
	if len(read) == 1 {
		same[read[0]] = f.sameRaw(hits[read[0]], blocks[read[0]].data)
	} else {
		for _, i := range read {
			g.Go(func() error { same[i] = f.sameRaw(hits[i], blocks[i].data); return nil })
		}
		g.Wait()
	}
	for _, i := range read {
		if same[i] {
			continue
		}
		ok, err := f.sameChecked(hits[i], blocks[i].data)
		if err != nil {
			return err
		}
		if !ok {
			hits[i] = nil
		}
	}
	return nil
}

// sumsProve reports whether h's uncompressed extent has, stored, the
// sector sums of block b (the write made them, or, for a block written
// compressed or ending in a part sector, they are made here over the
// block and the zero padding of its last sector, FORMAT.md §6.8).
func (f *FS) sumsProve(h *dedupeHit, b *block) (bool, error) {
	sums := b.sums
	if sums == nil {
		ss := int(f.st.Super().SectorSize)
		var buf []byte
		buf, sums = f.bufferSummed((len(b.data)+ss-1)/ss*ss, b.data)
		putBuffer(buf)
	}
	return f.storedSumsEqual(h.logical, sums)
}

// sameRaw reports whether the first copy of an uncompressed extent starts
// with p, read without its checksums: equal bytes are the proof sought
// (they are the block's own bytes), so the sums add nothing. A failed
// read or a difference is false, and the caller asks sameChecked, whose
// checked read tries every copy: damage to one copy costs a share, never
// a wrong one. Safe from any goroutine (nothing of the FS but the
// volume); the caller has drained the queued writes (stale bytes on the
// device could equal p while the extent's queued data does not).
func (f *FS) sameRaw(h *dedupeHit, p []byte) bool {
	ss := uint64(f.st.Super().SectorSize)
	n := (uint64(len(p)) + ss - 1) / ss * ss
	if h.compression != format.CompressNone || n > h.diskLen {
		return false
	}
	buf := rawBuffer(int(n))
	defer putBuffer(buf)
	return f.st.Vol.ReadCopy(h.logical, buf, 0) == nil && bytes.Equal(buf[:len(p)], p)
}

// sameData compares a block with the start of the extent it matched.
func (f *FS) sameData(h *dedupeHit, p []byte) (bool, error) {
	if err := f.data.drain(); err != nil {
		return false, err
	}
	if f.sameRaw(h, p) {
		return true, nil
	}
	return f.sameChecked(h, p)
}

// sameChecked compares through the checked read (every copy, repair) or
// the decompression.
func (f *FS) sameChecked(h *dedupeHit, p []byte) (bool, error) {
	x := fileExtent{FileExtentItem: format.FileExtentItem{Type: format.FileExtentRegular, Compression: h.compression,
		DiskLogical: h.logical, DiskLen: h.diskLen, NumBytes: uint64(len(p)), RAMBytes: h.ram}}
	var data []byte
	if h.compression != format.CompressNone {
		d, err := f.decompressed(x)
		if err != nil {
			return false, err
		}
		data = d
	} else {
		data = make([]byte, h.diskLen)
		if err := f.readVerified(h.logical, data); err != nil {
			return false, err
		}
	}
	return uint64(len(data)) >= uint64(len(p)) && bytes.Equal(data[:len(p)], p), nil
}
