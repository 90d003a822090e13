package inband

import (
	"bytes"
	"runtime"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/ddfs/ddfs/format"
)

// Block is a block a write wants to share: its bytes and, when the
// write computed them, its sector sums.
type Block struct {
	Data []byte
	Sums []byte
}

// Verify proves every hit and drops those that differ (a collision: the
// block is then stored on its own). With xxh3 this is what makes a match
// safe: with tails set, a hit whose entry has a strong tail (§6.8) is
// proven by the block's BLAKE3 and the extent's stored sums, unread; the
// others are byte-compared with the extent, in parallel, on a raw read of
// the first copy, a difference or a failed read going through the
// checked read of every copy.
func (x *Index) Verify(blocks []Block, hits []*Hit, tails bool) error {
	read, err := x.proveByTails(blocks, hits, tails)
	if err != nil || len(read) == 0 {
		return err
	}
	return x.compare(blocks, hits, read)
}

// proveByTails drops the hits a strong tail disproves and returns the
// ones left to compare: those without a usable tail, and those whose
// extent's stored sums are not the block's.
func (x *Index) proveByTails(blocks []Block, hits []*Hit, tails bool) ([]int, error) {
	var read []int
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, h := range hits {
		switch {
		case h == nil:
		case tails && h.Strong != nil && h.Compression == format.CompressNone:
			g.Go(func() error {
				if format.StrongDedupeHash(blocks[i].Data) != *h.Strong {
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
		if h == nil || !tails || h.Strong == nil || h.Compression != format.CompressNone {
			continue
		}
		ok, err := x.sumsProve(h, &blocks[i])
		if err != nil {
			return nil, err
		}
		if !ok {
			read = append(read, i)
		}
	}
	return read, nil
}

// compare byte-compares the hits read names with their blocks, dropping
// those that differ.
func (x *Index) compare(blocks []Block, hits []*Hit, read []int) error {
	// A match may be data still queued for writing (one drain per write
	// call, not per hit).
	if err := x.host.Drain(); err != nil {
		return err
	}
	same := make([]bool, len(hits))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	if len(read) == 1 {
		same[read[0]] = x.sameRaw(hits[read[0]], blocks[read[0]].Data)
	} else {
		for _, i := range read {
			g.Go(func() error { same[i] = x.sameRaw(hits[i], blocks[i].Data); return nil })
		}
		g.Wait()
	}
	for _, i := range read {
		if same[i] {
			continue
		}
		ok, err := x.sameChecked(hits[i], blocks[i].Data)
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
func (x *Index) sumsProve(h *Hit, b *Block) (bool, error) {
	sums := b.Sums
	if sums == nil {
		sb := x.st.Super()
		ss := uint64(sb.SectorSize)
		padded := make([]byte, (uint64(len(b.Data))+ss-1)/ss*ss)
		copy(padded, b.Data)
		sums = sectorSums(padded, sb.CsumType, ss)
	}
	return x.host.SumsStored(h.Logical, sums)
}

// Same compares a block with the start of the extent it matched.
func (x *Index) Same(h *Hit, p []byte) (bool, error) {
	if err := x.host.Drain(); err != nil {
		return false, err
	}
	if x.sameRaw(h, p) {
		return true, nil
	}
	return x.sameChecked(h, p)
}

// sameRaw reports whether the first copy of an uncompressed extent starts
// with p, read without its checksums: equal bytes are the proof sought
// (they are the block's own bytes), so the sums add nothing. A failed
// read or a difference is false, and the caller asks sameChecked, whose
// checked read tries every copy: damage to one copy costs a share, never
// a wrong one. Safe from any goroutine (nothing but the volume); the
// caller has drained the queued writes (stale bytes on the device could
// equal p while the extent's queued data does not).
func (x *Index) sameRaw(h *Hit, p []byte) bool {
	ss := uint64(x.st.Super().SectorSize)
	n := (uint64(len(p)) + ss - 1) / ss * ss
	if h.Compression != format.CompressNone || n > h.DiskLen {
		return false
	}
	buf := getBuf(int(n))
	defer putBuf(buf)
	return x.st.Vol.ReadCopy(h.Logical, buf, 0) == nil && bytes.Equal(buf[:len(p)], p)
}

// sameChecked compares through the checked read (every copy, repair) or
// the decompression.
func (x *Index) sameChecked(h *Hit, p []byte) (bool, error) {
	data, err := x.host.Extent(h.Logical, h.DiskLen, h.RAM, h.Compression)
	if err != nil {
		return false, err
	}
	return uint64(len(data)) >= uint64(len(p)) && bytes.Equal(data[:len(p)], p), nil
}

// bufs keeps read buffers of raw compares and tails (up to a block).
var bufs sync.Pool

func getBuf(n int) []byte {
	if b, ok := bufs.Get().(*[]byte); ok && cap(*b) >= n {
		return (*b)[:n]
	}
	return make([]byte, n)
}

func putBuf(b []byte) { bufs.Put(&b) }
