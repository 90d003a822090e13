package foreign

// Sparse ext2/3/4 files, read by a reader of our own. go-diskfs v1.9.4's
// ext4 File.Read maps a hole onto the blocks before the next extent, so
// files with holes (common: mke2fs -d and cp --sparse make them) are read
// here instead: the inode's extent tree (ext4) or block map (ext2/3) is
// parsed into runs, and holes and unwritten extents read as zeros. Every
// number is the image's, so each is bounded before it is used: tree
// depth, entry counts, block numbers inside the image, runs in order.

import (
	"encoding/binary"
	"fmt"
	"io"
)

// extRun maps count blocks of a file from logical block lblk to
// physical block pblk (0: a hole or an unwritten extent, zeros).
type extRun struct {
	lblk, pblk, count uint64
}

// extGeom is what reading an inode needs of an ext superblock.
type extGeom struct {
	bs, inodesPerGroup, inodeSize, descSize, firstDataBlock, blocks uint64
}

const (
	extExtentsFl    = 0x80000    // EXT4_EXTENTS_FL
	extInlineDataFl = 0x10000000 // EXT4_INLINE_DATA_FL
	extMaxDepth     = 5
	extMaxRuns      = 1 << 20 // runs of one file: bounds the walk
)

// extGeometry reads the superblock fields of r (size bytes).
func extGeometry(r io.ReaderAt, size int64) (extGeom, error) {
	sb := make([]byte, 1024)
	if _, err := r.ReadAt(sb, 1024); err != nil {
		return extGeom{}, fmt.Errorf("%w: ext superblock: %v", ErrCorrupt, err)
	}
	le := binary.LittleEndian
	g := extGeom{
		bs: 1024 << min(le.Uint32(sb[24:]), 7), inodesPerGroup: uint64(le.Uint32(sb[40:])),
		inodeSize: 128, descSize: 32, firstDataBlock: uint64(le.Uint32(sb[20:])),
	}
	if le.Uint32(sb[76:]) >= 1 {
		g.inodeSize = uint64(le.Uint16(sb[88:]))
	}
	if le.Uint32(sb[96:])&0x80 != 0 { // 64BIT
		g.descSize = uint64(le.Uint16(sb[254:]))
	}
	g.blocks = uint64(size) / g.bs
	if g.inodesPerGroup == 0 || g.inodeSize < 128 || g.inodeSize > g.bs || g.descSize < 32 || g.descSize > 1024 || g.firstDataBlock > 1 {
		return extGeom{}, fmt.Errorf("%w: ext superblock geometry (inode size %d, descriptor size %d)", ErrCorrupt, g.inodeSize, g.descSize)
	}
	return g, nil
}

// extInodes reads an ext image's inodes: the inode table of each group
// is found once, and the last inode read is kept (an import reads a
// file's inode for its mode, its attributes and its data in turn).
type extInodes struct {
	r      io.ReaderAt
	g      extGeom
	tables map[uint64]uint64 // group -> inode table block
	ino    uint64
	raw    []byte
}

// inode returns the raw inode ino (valid until the next call).
func (x *extInodes) inode(ino uint64) ([]byte, error) {
	if ino == 0 {
		return nil, fmt.Errorf("%w: inode 0", ErrCorrupt)
	}
	if ino == x.ino && x.raw != nil {
		return x.raw, nil
	}
	g := x.g
	group, index := (ino-1)/g.inodesPerGroup, (ino-1)%g.inodesPerGroup
	table, ok := x.tables[group]
	if !ok {
		desc := make([]byte, g.descSize)
		at := (g.firstDataBlock+1)*g.bs + group*g.descSize
		if _, err := x.r.ReadAt(desc, int64(at)); err != nil {
			return nil, fmt.Errorf("%w: group %d descriptor: %v", ErrCorrupt, group, err)
		}
		table = uint64(binary.LittleEndian.Uint32(desc[8:]))
		if g.descSize >= 64 {
			table |= uint64(binary.LittleEndian.Uint32(desc[0x28:])) << 32
		}
		if table == 0 || table >= g.blocks {
			return nil, fmt.Errorf("%w: group %d inode table at block %d", ErrCorrupt, group, table)
		}
		x.tables[group] = table
	}
	raw := make([]byte, g.inodeSize)
	if _, err := x.r.ReadAt(raw, int64(table*g.bs+index*g.inodeSize)); err != nil {
		return nil, fmt.Errorf("%w: inode %d: %v", ErrCorrupt, ino, err)
	}
	x.ino, x.raw = ino, raw
	return raw, nil
}

// extRuns maps the file of inode raw (ino, size bytes) into runs, in
// logical order.
func extRuns(r io.ReaderAt, g extGeom, ino uint64, raw []byte, size int64) ([]extRun, error) {
	flags := binary.LittleEndian.Uint32(raw[0x20:])
	iblock := raw[0x28 : 0x28+60]
	w := &runWalk{r: r, g: g, limit: (uint64(size) + g.bs - 1) / g.bs}
	var err error
	switch {
	case flags&extInlineDataFl != 0:
		return nil, fmt.Errorf("%w: inline data", ErrUnsupported)
	case flags&extExtentsFl != 0:
		err = w.extents(iblock, 0)
	default:
		err = w.blockMap(iblock)
	}
	if err != nil {
		return nil, fmt.Errorf("inode %d: %w", ino, err)
	}
	return w.runs, nil
}

// runWalk collects a file's runs; limit is its size in blocks.
type runWalk struct {
	r         io.ReaderAt
	g         extGeom
	limit     uint64
	runs      []extRun
	rootDepth int
	reads     int // tree and map blocks read: bounded by limit
}

// add appends a run, in order and inside the file's size (blocks past
// the size are preallocated: never read).
func (w *runWalk) add(lblk, pblk, count uint64) error {
	if count == 0 || lblk >= w.limit {
		return nil
	}
	count = min(count, w.limit-lblk)
	if n := len(w.runs); n > 0 && lblk < w.runs[n-1].lblk+w.runs[n-1].count {
		return fmt.Errorf("%w: block %d mapped twice or out of order", ErrCorrupt, lblk)
	}
	if pblk != 0 && (pblk >= w.g.blocks || count > w.g.blocks-pblk) {
		return fmt.Errorf("%w: blocks %d+%d outside the image", ErrCorrupt, pblk, count)
	}
	if n := len(w.runs); n > 0 { // block maps give a run per block: merge
		last := &w.runs[n-1]
		if last.lblk+last.count == lblk && (last.pblk == 0) == (pblk == 0) && (pblk == 0 || last.pblk+last.count == pblk) {
			last.count += count
			return nil
		}
	}
	if len(w.runs) == extMaxRuns {
		return fmt.Errorf("%w: more than %d extents", ErrCorrupt, extMaxRuns)
	}
	w.runs = append(w.runs, extRun{lblk, pblk, count})
	return nil
}

// block reads block b of the image (a tree or map block).
func (w *runWalk) block(b uint64) ([]byte, error) {
	if b == 0 || b >= w.g.blocks {
		return nil, fmt.Errorf("%w: map block %d outside the image", ErrCorrupt, b)
	}
	// A file of n blocks needs about n/340 tree blocks (4 KiB blocks) or
	// n/1024 map blocks, all distinct blocks of the image: more is a loop
	// in a hostile image.
	if w.reads++; uint64(w.reads) > min(w.limit/64+64, w.g.blocks) {
		return nil, fmt.Errorf("%w: more map blocks than a file of %d blocks needs", ErrCorrupt, w.limit)
	}
	buf := make([]byte, w.g.bs)
	if _, err := w.r.ReadAt(buf, int64(b*w.g.bs)); err != nil {
		return nil, fmt.Errorf("%w: map block %d: %v", ErrCorrupt, b, err)
	}
	return buf, nil
}

// extents walks an extent tree node (a header and entries) at depth
// below the root (whose header says the tree's depth).
func (w *runWalk) extents(node []byte, depth int) error {
	le := binary.LittleEndian
	if len(node) < 12 || le.Uint16(node) != 0xF30A {
		return fmt.Errorf("%w: extent header", ErrCorrupt)
	}
	entries, d := int(le.Uint16(node[2:])), int(le.Uint16(node[6:]))
	if depth == 0 {
		w.rootDepth = d
	}
	if entries > (len(node)-12)/12 || d > extMaxDepth || d != w.rootDepth-depth {
		return fmt.Errorf("%w: extent node of %d entries at depth %d", ErrCorrupt, entries, d)
	}
	for i := 0; i < entries; i++ {
		e := node[12+12*i:]
		if d == 0 {
			n := uint64(le.Uint16(e[4:]))
			start := uint64(le.Uint16(e[6:]))<<32 | uint64(le.Uint32(e[8:]))
			if n > 32768 { // unwritten: reads as zeros
				n, start = n-32768, 0
			}
			if err := w.add(uint64(le.Uint32(e)), start, n); err != nil {
				return err
			}
			continue
		}
		buf, err := w.block(uint64(le.Uint16(e[8:]))<<32 | uint64(le.Uint32(e[4:])))
		if err != nil {
			return err
		}
		if err := w.extents(buf, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// blockMap walks an ext2/3 block map: 12 direct blocks, then single,
// double and triple indirect blocks; 0 is a hole.
func (w *runWalk) blockMap(iblock []byte) error {
	le := binary.LittleEndian
	per := w.g.bs / 4
	lblk := uint64(0)
	for i := 0; i < 12; i++ {
		if b := uint64(le.Uint32(iblock[4*i:])); b != 0 {
			if err := w.add(lblk, b, 1); err != nil {
				return err
			}
		}
		lblk++
	}
	span := per // blocks one pointer covers at each level
	for level := 1; level <= 3; level++ {
		if err := w.indirect(uint64(le.Uint32(iblock[4*(11+level):])), level, lblk); err != nil {
			return err
		}
		lblk += span
		span *= per
	}
	return nil
}

// indirect walks indirect block b of level (1: pointers to data) that
// maps the blocks from lblk.
func (w *runWalk) indirect(b uint64, level int, lblk uint64) error {
	if b == 0 || lblk >= w.limit {
		return nil // a hole, or past the size
	}
	buf, err := w.block(b)
	if err != nil {
		return err
	}
	per := w.g.bs / 4
	span := uint64(1)
	for range level - 1 {
		span *= per
	}
	for i := uint64(0); i < per; i++ {
		p := uint64(binary.LittleEndian.Uint32(buf[4*i:]))
		at := lblk + i*span
		switch {
		case p == 0:
		case level == 1:
			err = w.add(at, p, 1)
		default:
			err = w.indirect(p, level-1, at)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// extReader reads a file through its runs: holes as zeros.
type extReader struct {
	r    io.ReaderAt
	bs   uint64
	runs []extRun
	size uint64
	off  uint64
	next int // the first run that may hold off
}

func (x *extReader) Read(b []byte) (int, error) {
	if x.off >= x.size {
		return 0, io.EOF
	}
	n := min(uint64(len(b)), x.size-x.off)
	b = b[:n]
	blk := x.off / x.bs
	for x.next < len(x.runs) && x.runs[x.next].lblk+x.runs[x.next].count <= blk {
		x.next++
	}
	if x.next == len(x.runs) || x.runs[x.next].lblk > blk { // a hole up to the next run
		end := x.size
		if x.next < len(x.runs) {
			end = min(end, x.runs[x.next].lblk*x.bs)
		}
		n = min(n, end-x.off)
		clear(b[:n])
	} else {
		r := x.runs[x.next]
		end := (r.lblk + r.count) * x.bs
		n = min(n, end-x.off)
		if r.pblk == 0 {
			clear(b[:n])
		} else if _, err := x.r.ReadAt(b[:n], int64(r.pblk*x.bs+x.off-r.lblk*x.bs)); err != nil {
			return 0, fmt.Errorf("%w: data block: %v", ErrCorrupt, err)
		}
	}
	x.off += n
	return int(n), nil
}

func (x *extReader) Close() error { return nil }
