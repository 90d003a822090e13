package fsys

import (
	"golang.org/x/sync/errgroup"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/codec"
	"github.com/ddfs/ddfs/pkg/inband"
)

// compressUnit is the block size of compression without dedupe (as btrfs).
const compressUnit = 128 << 10

// dataPolicy is how a file's new data is stored.
type dataPolicy struct {
	dedupe bool
	cdc    bool
	verify bool
	// tails: an xxh3 match whose entry has a strong tail (§6.8) is
	// proven by BLAKE3 instead of a read, unless --dedupe-verify asked
	// for byte compares.
	tails    bool
	block    uint64
	hash     format.CsumType
	compress format.Compression
	level    uint8
	// csum and ss, when ss is set, have hashBlocks also sum the sectors
	// of whole-sector blocks, while the hash has them in cache: the
	// writer's pass over cold data took 17% of a dedupe copy's CPU.
	csum format.CsumType
	ss   uint64
}

// useHash makes h the dedupe hash (0 or an unknown value: sha256, as
// FORMAT.md §3.2 reads it); xxh3 is not collision resistant, so its
// matches are byte-compared.
func (p *dataPolicy) useHash(h format.CsumType) {
	p.hash = h
	if !h.ValidDedupeHash() {
		p.hash = format.CsumSHA256
	}
	p.tails = p.hash == format.CsumXXH3 && !p.verify
	p.verify = p.verify || p.hash == format.CsumXXH3
}

func (p dataPolicy) plain() bool { return !p.dedupe && p.compress == format.CompressNone }

// policy resolves the file's properties against the filesystem settings.
func (f *FS) policy(in *Inode) dataPolicy {
	sb := f.st.Super()
	s := sb.Settings
	p := dataPolicy{dedupe: s.Dedupe, cdc: s.DedupeCDC, verify: s.DedupeVerify, block: s.DedupeBlockSize(), hash: s.DedupeHash, compress: s.Compression, level: s.CompressionLevel,
		csum: sb.CsumType, ss: uint64(sb.SectorSize)}
	switch in.Dedupe {
	case format.DedupeOn:
		p.dedupe = true
	case format.DedupeOff:
		p.dedupe = false
	}
	if c, ok := in.Compression.Compression(); ok {
		p.compress = c
	}
	if in.Flags&format.InodeNoCompress != 0 {
		p.compress = format.CompressNone
	}
	p.useHash(p.hash)
	if !p.dedupe {
		p.block = compressUnit
	}
	return p
}

// block is one dedupe/compression unit of a write.
type block struct {
	off    uint64 // file offset
	data   []byte
	hash   [format.CsumSize]byte
	sums   []byte // the data's sector sums (whole-sector blocks), or nil
	hashed bool   // hash came from Hashes
	framed []byte // compressed, framed; nil: store raw
}

// writeBlocks stores p at off as dedupe/compression blocks: hashes are
// computed in parallel (bounded by GOMAXPROCS, in order), known blocks
// become references to their extent, new ones are compressed in parallel
// and written.
func (f *FS) writeBlocks(in *Inode, p []byte, off uint64, pol dataPolicy) error {
	blocks := cutBlocks(p, off, pol)
	workers := cpus()
	if pol.dedupe {
		if f.prehash != nil {
			for i := range blocks {
				b := &blocks[i]
				var h hashed
				h, b.hashed = f.prehash.m[hashKey{b.off, len(b.data), &b.data[0]}]
				b.hash, b.sums = h.hash, h.sums
			}
		}
		hashBlocks(blocks, pol)
	}
	// Look up every block first, so only new ones are compressed.
	hits := make([]*inband.Hit, len(blocks))
	if pol.dedupe {
		for i := range blocks {
			h, err := f.index.Lookup(blocks[i].hash, pol.hash, uint64(len(blocks[i].data)))
			if err != nil {
				return err
			}
			hits[i] = h
		}
		if pol.verify {
			if err := f.index.Verify(candidates(blocks), hits, pol.tails); err != nil {
				return err
			}
		}
	}
	if pol.compress != format.CompressNone {
		var g errgroup.Group
		g.SetLimit(workers)
		ss := int(f.st.Super().SectorSize)
		for i := range blocks {
			if hits[i] != nil {
				continue
			}
			b := &blocks[i]
			if fr, ok := f.framedFor(b, pol.compress); ok {
				if codec.Saves(len(fr), len(b.data), ss) {
					b.framed = fr // as received: no second compression
				}
				continue
			}
			g.Go(func() error {
				fr, ok, err := codec.Compress(b.data, pol.compress, pol.level, ss)
				if ok {
					b.framed = fr
				}
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
	}
	shrunk, err := f.storeBlocks(in, p, off, blocks, hits, pol)
	if err != nil {
		return err
	}
	if pol.compress != format.CompressNone && !shrunk && len(blocks) > 0 && len(blocks) == countNil(hits) && len(blocks[0].data) >= compressUnit {
		in.Flags |= format.InodeNoCompress // did not shrink: stop trying for this file
	}
	return nil
}

// candidates are the blocks as the index verifies them.
func candidates(blocks []block) []inband.Block {
	c := make([]inband.Block, len(blocks))
	for i, b := range blocks {
		c[i] = inband.Block{Data: b.data, Sums: b.sums}
	}
	return c
}

func countNil(h []*inband.Hit) int {
	n := 0
	for _, x := range h {
		if x == nil {
			n++
		}
	}
	return n
}

// referenceBlock maps the block of n bytes at off of the file onto an
// existing extent.
func (f *FS) referenceBlock(in *Inode, off, n uint64, h *inband.Hit) error {
	tx, err := f.txn()
	if err != nil {
		return err
	}
	x := &format.FileExtentItem{
		Generation: tx.Generation(), Type: format.FileExtentRegular, Compression: h.Compression,
		DiskLogical: h.Logical, DiskLen: h.DiskLen, NumBytes: n, RAMBytes: h.RAM,
	}
	if err := tx.Tree(format.FSTree).Insert(extentKey(in.Ino, off), format.MarshalFileExtentItem(x)); err != nil {
		return err
	}
	if err := f.addRefs(h.Logical, h.DiskLen, 1); err != nil {
		return err
	}
	in.NBytes += n
	f.dedupeHits++
	return nil
}

// writeBlock writes a new extent for a block (compressed if that saved
// space) and indexes it when dedupe is on.
func (f *FS) writeBlock(in *Inode, b block, pol dataPolicy) (*inband.Hit, error) {
	tx, err := f.txn()
	if err != nil {
		return nil, err
	}
	ss := uint64(f.st.Super().SectorSize)
	payload := b.payload()
	diskLen := (uint64(len(payload)) + ss - 1) / ss * ss
	logical, err := tx.AllocDataOn(diskLen, in.DataTier)
	if err != nil {
		return nil, err
	}
	buf := buffer(int(diskLen), payload)
	if err := f.putCsums(logical, buf); err != nil {
		putBuffer(buf)
		return nil, err
	}
	if err := f.data.write(logical, buf); err != nil {
		return nil, err
	}
	return f.recordBlock(in, b, pol, logical, diskLen)
}

// recordBlock enters a block written at logical (diskLen bytes on disk):
// its extent item, its index entry when dedupe is on, and the file's
// extent. The returned hit is the extent, for later copies of the block.
func (f *FS) recordBlock(in *Inode, b block, pol dataPolicy, logical, diskLen uint64) (*inband.Hit, error) {
	tx, err := f.txn()
	if err != nil {
		return nil, err
	}
	comp := format.CompressNone
	if b.framed != nil {
		comp = pol.compress
	}
	ram := uint64(len(b.data))
	if comp == format.CompressNone {
		ram = diskLen
	}
	e := &format.ExtentItem{Refs: 1, Generation: tx.Generation(), RAMBytes: ram, Compression: comp}
	if pol.dedupe {
		ie := inband.Entry{Hash: b.hash, Algo: pol.hash, Length: uint64(len(b.data)), Sums: b.sums}
		if err := f.index.Enter(tx, e, logical, diskLen, ie); err != nil {
			return nil, err
		}
	}
	if err := tx.Tree(format.ExtentTree).Insert(format.Key{ObjectID: logical, Type: format.ExtentItemKey, Offset: diskLen}, format.MarshalExtentItem(e)); err != nil {
		return nil, err
	}
	x := &format.FileExtentItem{
		Generation: tx.Generation(), Type: format.FileExtentRegular, Compression: comp,
		DiskLogical: logical, DiskLen: diskLen, NumBytes: uint64(len(b.data)), RAMBytes: ram,
	}
	if err := tx.Tree(format.FSTree).Insert(extentKey(in.Ino, b.off), format.MarshalFileExtentItem(x)); err != nil {
		return nil, err
	}
	in.NBytes += uint64(len(b.data))
	return &inband.Hit{Logical: logical, DiskLen: diskLen, RAM: ram, Compression: comp}, nil
}
