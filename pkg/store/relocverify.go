package store

import (
	"bytes"
	"fmt"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/volume"
)

// RelocStats counts what relocations since the FS was opened copied.
type RelocStats struct {
	Bytes uint64 // bytes copied to new stripes
	// Repaired blocks (nodes or data sectors) failed their checksum on the
	// copy read first and were taken from another copy that verifies.
	Repaired int
	// Unrecovered blocks verify on no copy; they were copied as read
	// (the first copy that could be read) and stay damaged.
	Unrecovered int
}

// RelocStats returns the relocation counters.
func (fs *FS) RelocStats() RelocStats { return fs.reloc }

// verifier checks the blocks a relocation reads, so a bad copy (the
// failing device of a replace) is not carried over when a good one
// exists: every node of a metadata or system chunk by its header and
// checksum, every data sector that has a sum by its sum.
type verifier struct {
	fs *FS
	c  *volume.Chunk
	// first is the copy read first; check tries the others.
	first int
	// dirty are the nodes of the running transaction: their blocks are
	// written from memory at commit, whatever the copy holds.
	dirty map[uint64]*format.Node
	sums  map[uint64][]byte // data sector logical -> stored sum
	// counts of this chunk, added to fs.reloc when the chunk commits
	repaired, unrecovered int
}

// newVerifier loads the sums of a data chunk from the committed csum tree
// (at most chunk length / sector size sums).
func (fs *FS) newVerifier(c *volume.Chunk, first int, dirty map[uint64]*format.Node) (*verifier, error) {
	v := &verifier{fs: fs, c: c, first: first, dirty: dirty}
	if c.Type != format.ChunkData {
		return v, nil
	}
	v.sums = map[uint64][]byte{}
	ss, cl := uint64(fs.sb.SectorSize), fs.sb.CsumType.Len()
	from := format.Key{ObjectID: format.CsumObjectID, Type: format.CsumItemKey, Offset: c.Logical}
	to := format.Key{ObjectID: format.CsumObjectID, Type: format.CsumItemKey, Offset: c.End()}
	err := fs.Tree(format.CsumTree).Scan(from, to, func(it format.Item) (bool, error) {
		if len(it.Data)%cl != 0 {
			return false, fmt.Errorf("csum item %d: %d bytes: %w", it.Key.Offset, len(it.Data), ErrCorrupt)
		}
		for i := 0; i*cl < len(it.Data); i++ {
			at := it.Key.Offset + uint64(i)*ss
			if at >= c.End() {
				break
			}
			v.sums[at] = it.Data[i*cl : (i+1)*cl]
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("relocate chunk %d: checksums: %w", c.Logical, err)
	}
	return v, nil
}

// block is the unit verified: a node, or a data sector.
func (v *verifier) block() uint64 {
	if v.c.Type == format.ChunkData {
		return uint64(v.fs.sb.SectorSize)
	}
	return uint64(v.fs.sb.NodeSize)
}

// good reports whether blk, at chunk offset off, verifies.
func (v *verifier) good(off uint64, blk []byte) bool {
	logical := v.c.Logical + off
	if _, ok := v.dirty[logical]; ok {
		return true
	}
	if v.c.Type != format.ChunkData {
		_, err := format.UnmarshalNode(blk, v.fs.sb.CsumType, format.NodeExpect{FSID: v.fs.sb.FSID, AltFSID: v.fs.sb.NewFSID, Logical: logical, Level: -1})
		return err == nil
	}
	want, ok := v.sums[logical]
	if !ok {
		return true // prealloc or unsummed: nothing to check against
	}
	sum := format.Checksum(v.fs.sb.CsumType, blk)
	return bytes.Equal(sum[:len(want)], want)
}

// copies is the number of copies of the chunk being read (its old layout).
func (v *verifier) copies() int {
	pi, _ := v.c.Profile.Info()
	if pi.Striped {
		return pi.SubStripes
	}
	return len(v.c.Stripes)
}

// check verifies b, read at chunk offset off, block by block; a block
// that fails is replaced by another copy's when one verifies.
func (v *verifier) check(off uint64, b []byte) {
	bs := v.block()
	copies := v.copies()
	alt := make([]byte, bs)
	for i := uint64(0); i+bs <= uint64(len(b)); i += bs {
		blk := b[i : i+bs]
		if v.good(off+i, blk) {
			continue
		}
		fixed := false
		for k := 1; k < copies && !fixed; k++ {
			if v.fs.Vol.ReadChunk(v.c, off+i, alt, (v.first+k)%copies) == nil && v.good(off+i, alt) {
				copy(blk, alt)
				fixed = true
			}
		}
		if fixed {
			v.repaired++
		} else {
			v.unrecovered++
		}
	}
}
