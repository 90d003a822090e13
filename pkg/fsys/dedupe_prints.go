package fsys

import (
	"encoding/binary"
	"errors"
	"hash/maphash"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
)

// BlockPrint is a file block's fingerprint made of the stored checksums
// of its sectors (no data read): equal data gives equal prints, so a
// block whose print no other block has cannot be a duplicate.
type BlockPrint struct {
	Off     uint64   // file offset (block aligned)
	Len     uint64   // bytes of the file in the block
	Print   uint64   // of the length and the sector sums; valid when Known
	Disk    uint64   // logical of its first stored sector (0: a hole)
	Known   bool     // false: compressed, inline or unaligned data: only its bytes tell
	Indexed bool     // the block is one indexed dedupe extent already
	Extents []uint64 // the data extents (logicals) the block uses
}

// printSeed makes prints comparable within one process (a run).
var printSeed = maphash.MakeSeed()

// holeSum stands for a sector no extent covers (the dedupe write path
// leaves zero sectors as holes too).
var holeSum = []byte{0xff, 0xfe, 0xfd, 0xfc, 0xfb, 0xfa, 0xf9, 0xf8}

// BlockPrints calls fn for each block of size bs of the regular file in,
// in file order, from the extent map and the csum tree. Work is a window
// of at most maxExtent of the file at a time.
func (f *FS) BlockPrints(in *Inode, bs uint64, fn func(*BlockPrint) error) error {
	if !in.IsRegular() || bs == 0 || maxExtent%bs != 0 {
		return nil
	}
	rs, err := f.DataRanges(in)
	if err != nil {
		return err
	}
	p := &printer{f: f, in: in, bs: bs, ss: uint64(f.st.Super().SectorSize), sums: &sumCache{f: f}, fn: fn}
	p.h.SetSeed(printSeed)
	// Only windows holding data: one of a hole's blocks prints as holes
	// only (disk 0), which no other copy can match, and a sparse file of
	// 2^63 bytes must cost its extents, not its size.
	w := uint64(0)
	for _, r := range rs {
		for w = max(w, r.Off/maxExtent*maxExtent); w < r.Off+r.Len; w += maxExtent {
			if err := p.window(w); err != nil {
				return err
			}
		}
	}
	return nil
}

// printer holds what BlockPrints needs from window to window.
type printer struct {
	f      *FS
	in     *Inode
	bs, ss uint64
	h      maphash.Hash
	sums   *sumCache
	fn     func(*BlockPrint) error
}

// window prints the blocks of the window of maxExtent bytes at w.
func (p *printer) window(w uint64) error {
	we := min(w+maxExtent, p.in.Size)
	xs, err := p.f.extentMap(p.in.Ino, w, we)
	if err != nil {
		return err
	}
	k := 0
	for bo := w; bo < we; bo += p.bs {
		for k < len(xs) && xs[k].end() <= bo {
			k++
		}
		bp, err := p.block(xs[k:], bo)
		if err == nil {
			err = p.fn(bp)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// block prints the block at bo from xs, the extents from the first one
// ending after bo.
func (p *printer) block(xs []fileExtent, bo uint64) (*BlockPrint, error) {
	f, in, ss, h := p.f, p.in, p.ss, &p.h
	be := min(bo+p.bs, in.Size)
	bp := &BlockPrint{Off: bo, Len: be - bo, Known: true}
	h.Reset()
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], be-bo)
	h.Write(n[:])
	for s := bo; s < be; s += ss {
		x := coverAt(xs, s)
		if x == nil {
			h.Write(holeSum)
			continue
		}
		if len(bp.Extents) == 0 || bp.Extents[len(bp.Extents)-1] != x.DiskLogical {
			bp.Extents = append(bp.Extents, x.DiskLogical)
		}
		if !bp.Known {
			continue
		}
		sum, d, err := p.sums.sector(x, s, in.Size)
		if err != nil {
			return nil, err
		}
		if sum == nil {
			bp.Known = false // only the data can tell
			continue
		}
		if bp.Disk == 0 {
			bp.Disk = d
		}
		h.Write(sum)
	}
	bp.Print = h.Sum64()
	if len(bp.Extents) == 1 && bp.Extents[0] != 0 {
		x := coverAt(xs, bo)
		if x != nil && x.off == bo && x.Offset == 0 && x.end() >= be {
			done, err := f.indexedBlock(*x)
			if err != nil {
				return nil, err
			}
			bp.Indexed = done
		}
	}
	return bp, nil
}

// coverAt is the extent of xs (sorted, none ending at or before the first
// sector asked for) that holds file offset s, nil for a hole; prealloc
// extents read as zeros and count as holes.
func coverAt(xs []fileExtent, s uint64) *fileExtent {
	for i := range xs {
		x := &xs[i]
		if x.off > s {
			return nil
		}
		if s < x.end() {
			if x.Type == format.FileExtentPrealloc || (x.Type == format.FileExtentRegular && x.DiskLogical == 0) {
				return nil
			}
			return x
		}
	}
	return nil
}

// sumCache holds the csum item last read, so a block's sectors cost one
// tree lookup per item, not per sector.
type sumCache struct {
	f     *FS
	start uint64
	data  []byte
}

// sector returns the stored sum of the file sector at s in x and its
// logical, nil when the sum does not cover the file's bytes there as they
// are (compressed, inline, not sector aligned) or none is stored.
func (c *sumCache) sector(x *fileExtent, s, size uint64) ([]byte, uint64, error) {
	ss := uint64(c.f.st.Super().SectorSize)
	if x.Type != format.FileExtentRegular || x.Compression != format.CompressNone ||
		(x.off-x.Offset)%ss != 0 || (x.end()%ss != 0 && x.end() < size) {
		return nil, 0, nil
	}
	d := x.DiskLogical + x.Offset + (s - x.off)
	sum, err := c.get(d)
	return sum, d, err
}

// get returns the stored sum of the data sector at logical, nil if none.
func (c *sumCache) get(logical uint64) ([]byte, error) {
	sb := c.f.st.Super()
	ss, cl := uint64(sb.SectorSize), uint64(sb.CsumType.Len())
	if c.data == nil || logical < c.start || logical >= c.start+uint64(len(c.data))/cl*ss {
		it, err := c.f.rtree(format.CsumTree).SeekLE(csumKey(logical))
		if errors.Is(err, btree.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if !isCsumKey(it.Key) || logical >= it.Key.Offset+uint64(len(it.Data))/cl*ss {
			return nil, nil
		}
		c.start, c.data = it.Key.Offset, it.Data
	}
	i := (logical - c.start) / ss * cl
	return c.data[i : i+cl], nil
}
