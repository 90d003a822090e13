package fsys

import (
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/ddfs/ddfs/pkg/cdc"
	"github.com/ddfs/ddfs/pkg/codec"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
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
	hits := make([]*dedupeHit, len(blocks))
	if pol.dedupe {
		for i := range blocks {
			h, err := f.lookupBlock(blocks[i].hash, pol.hash, uint64(len(blocks[i].data)))
			if err != nil {
				return err
			}
			hits[i] = h
		}
		if pol.verify {
			if err := f.verifyHits(blocks, hits, pol); err != nil {
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

func countNil(h []*dedupeHit) int {
	n := 0
	for _, x := range h {
		if x == nil {
			n++
		}
	}
	return n
}

// dedupeHit is an existing extent holding a block.
type dedupeHit struct {
	logical, diskLen, ram uint64
	compression           format.Compression
	strong                *[format.DedupeHashLen]byte // the entry's strong tail, if any
}

// lookupBlock finds an extent whose block has this hash (of algo) and
// length: the in-memory cache first, then the dedupe tree (prefix,
// DEDUPE_ITEM, *). Entries of another algorithm never match (§6.8).
func (f *FS) lookupBlock(hash [format.CsumSize]byte, algo format.CsumType, n uint64) (*dedupeHit, error) {
	prefix := format.DedupeHashPrefix(hash)
	t := f.rtree(format.DedupeTree)
	var found uint64
	var strong *[format.DedupeHashLen]byte
	check := func(it format.Item) (bool, error) {
		d, err := format.UnmarshalDedupeItem(prefix, it.Data)
		if err != nil {
			return false, err
		}
		if d.Hash == hash && d.Length == n && d.HashAlgo == algo {
			found = it.Key.Offset
			strong = d.Strong
			return false, nil
		}
		return true, nil
	}
	if l, ok := f.index.get(prefix); ok {
		b, err := getOptional(t, format.Key{ObjectID: prefix, Type: format.DedupeItemKey, Offset: l})
		if err != nil {
			return nil, err
		}
		if b != nil {
			if _, err := check(format.Item{Key: format.Key{Offset: l}, Data: b}); err != nil {
				return nil, err
			}
		}
	}
	if found == 0 {
		start := format.Key{ObjectID: prefix, Type: format.DedupeItemKey}
		if err := t.Scan(start, format.Key{ObjectID: prefix, Type: format.DedupeItemKey + 1}, check); err != nil {
			return nil, err
		}
	}
	if found == 0 {
		return nil, nil
	}
	f.index.put(prefix, found)
	it := f.rtree(format.ExtentTree).Seek(format.Key{ObjectID: found, Type: format.ExtentItemKey})
	if !it.Valid() || it.Key().ObjectID != found || it.Key().Type != format.ExtentItemKey {
		return nil, errors.Join(it.Err(), fmt.Errorf("dedupe entry for %d without its extent: %w", found, format.ErrCorrupt))
	}
	e, err := format.UnmarshalExtentItem(it.Item().Data)
	if err == nil {
		err = format.CheckExtentItemKey(it.Key()) // the length sizes a verify read
	}
	if err != nil {
		return nil, err
	}
	return &dedupeHit{logical: found, diskLen: it.Key().Offset, ram: e.RAMBytes, compression: e.Compression, strong: strong}, nil
}

// referenceBlock maps the block of n bytes at off of the file onto an
// existing extent.
func (f *FS) referenceBlock(in *Inode, off, n uint64, h *dedupeHit) error {
	tx, err := f.txn()
	if err != nil {
		return err
	}
	x := &format.FileExtentItem{
		Generation: tx.Generation(), Type: format.FileExtentRegular, Compression: h.compression,
		DiskLogical: h.logical, DiskLen: h.diskLen, NumBytes: n, RAMBytes: h.ram,
	}
	if err := tx.Tree(format.FSTree).Insert(extentKey(in.Ino, off), format.MarshalFileExtentItem(x)); err != nil {
		return err
	}
	if err := f.addRefs(h.logical, h.diskLen, 1); err != nil {
		return err
	}
	in.NBytes += n
	f.dedupeHits++
	return nil
}

// writeBlock writes a new extent for a block (compressed if that saved
// space) and indexes it when dedupe is on.
func (f *FS) writeBlock(in *Inode, b block, pol dataPolicy) (*dedupeHit, error) {
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
func (f *FS) recordBlock(in *Inode, b block, pol dataPolicy, logical, diskLen uint64) (*dedupeHit, error) {
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
		e.Flags, e.HashPrefix = format.ExtentFlagDeduped, format.DedupeHashPrefix(b.hash)
		d := &format.DedupeItem{Hash: b.hash, Length: uint64(len(b.data)), HashAlgo: pol.hash}
		k := format.Key{ObjectID: e.HashPrefix, Type: format.DedupeItemKey, Offset: logical}
		if err := tx.Tree(format.DedupeTree).Insert(k, format.MarshalDedupeItem(d)); err != nil {
			return nil, err
		}
		f.index.put(e.HashPrefix, logical)
		f.noteUntailed(untailed{key: k, hash: b.hash, length: uint64(len(b.data)), sums: b.sums,
			diskLen: diskLen, ram: e.RAMBytes, compression: comp}, pol.hash)
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
	return &dedupeHit{logical: logical, diskLen: diskLen, ram: ram, compression: comp}, nil
}

// dropDedupe removes the index entry of a freed extent.
func (f *FS) dropDedupe(logical uint64, e *format.ExtentItem) error {
	if e.Flags&format.ExtentFlagDeduped == 0 {
		return nil
	}
	f.index.del(e.HashPrefix, logical)
	err := f.tx.Tree(format.DedupeTree).Delete(format.Key{ObjectID: e.HashPrefix, Type: format.DedupeItemKey, Offset: logical})
	if errors.Is(err, btree.ErrNotFound) {
		return fmt.Errorf("extent %d is marked deduped but has no index entry: %w", logical, format.ErrCorrupt)
	}
	return err
}

// dedupeIndex is the in-memory cache in front of the dedupe tree: hash
// prefix -> extent logical, 16 bytes of payload per entry, bounded.
type dedupeIndex struct {
	m   map[uint64]uint64
	max int
}

func (x *dedupeIndex) get(prefix uint64) (uint64, bool) {
	l, ok := x.m[prefix]
	return l, ok
}

func (x *dedupeIndex) put(prefix, logical uint64) {
	if x.m == nil {
		x.m = map[uint64]uint64{}
	}
	if len(x.m) >= x.max {
		for k := range x.m { // evict an arbitrary entry: the tree still has it
			delete(x.m, k)
			break
		}
	}
	x.m[prefix] = logical
}

func (x *dedupeIndex) del(prefix, logical uint64) {
	if x.m[prefix] == logical {
		delete(x.m, prefix)
	}
}

// Len is the number of cached entries.
func (x *dedupeIndex) Len() int { return len(x.m) }

func cdcCut(p []byte, avg uint64) int { return cdc.Cut(p, cdc.ForAverage(int(avg))) }
