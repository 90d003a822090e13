package fsys

import (
	"bytes"
	"errors"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/inband"
	"github.com/ddfs/ddfs/pkg/store"
)

// storeBlocks stores the blocks of one write in file order: a hit becomes
// a reference, and each run of consecutive new blocks is written as one
// contiguous allocation and one device write (still an extent per block),
// not a syscall, writer hand-off and allocation per block.
// A block repeating an earlier new block of this write references it.
// It reports whether any block was stored compressed.
func (f *FS) storeBlocks(in *Inode, p []byte, off uint64, blocks []block, hits []*inband.Hit, pol dataPolicy) (bool, error) {
	type hashLen struct {
		h [format.CsumSize]byte
		n int
	}
	made := make([]*inband.Hit, len(blocks))
	first := map[hashLen]int{}
	var run []int
	shrunk := false
	flush := func() error {
		err := f.writeRun(in, p, off, blocks, run, made, pol)
		run = run[:0]
		return err
	}
	for i := range blocks {
		b := &blocks[i]
		h := hits[i]
		if h == nil && pol.dedupe {
			k := hashLen{b.hash, len(b.data)}
			if j, ok := first[k]; ok && (!pol.verify || bytes.Equal(blocks[j].data, b.data)) {
				if err := flush(); err != nil {
					return shrunk, err
				}
				h = made[j]
			} else if !ok {
				first[k] = i
			}
		}
		if h != nil {
			if err := flush(); err != nil {
				return shrunk, err
			}
			if err := f.referenceBlock(in, b.off, uint64(len(b.data)), h); err != nil {
				return shrunk, err
			}
			continue
		}
		shrunk = shrunk || b.framed != nil
		run = append(run, i)
	}
	return shrunk, flush()
}

// writeRun writes the new blocks blocks[run...] (consecutive in the file
// and in p, the write's data, which starts at file offset off) and
// records each one's extent in made. The run takes one allocation unless
// small-data placement applies to its blocks or free space has no range
// that big; then each block is written on its own.
func (f *FS) writeRun(in *Inode, p []byte, off uint64, blocks []block, run []int, made []*inband.Hit, pol dataPolicy) error {
	if len(run) == 0 {
		return nil
	}
	tx, err := f.txn()
	if err != nil {
		return err
	}
	ss := uint64(f.st.Super().SectorSize)
	lens := make([]uint64, len(run))
	var total uint64
	raw := true // every block unframed and whole sectors: written from p
	for k, i := range run {
		b := &blocks[i]
		lens[k] = (uint64(len(b.payload())) + ss - 1) / ss * ss
		total += lens[k]
		raw = raw && b.framed == nil && uint64(len(b.data)) == lens[k]
	}
	s := f.st.Super().Settings
	smallData := s.SmallDataMax > 0 && s.AllocPolicy != format.AllocClassic && lens[0] <= s.SmallDataMax
	var logical uint64
	if len(run) == 1 || !smallData {
		logical, err = tx.AllocDataOn(total, in.DataTier)
		if err != nil && (len(run) == 1 || !errors.Is(err, store.ErrNoSpace)) {
			return err
		}
	}
	switch {
	case logical == 0: // small data, or no single free range for the run
		for _, i := range run {
			h, err := f.writeBlock(in, blocks[i], pol)
			if err != nil {
				return err
			}
			made[i] = h
		}
		return nil
	case raw:
		// Written now, from the caller's buffer: no copy into a writer
		// buffer. On unique data that copy was as costly as the hash.
		start := blocks[run[0]].off - off
		data := p[start : start+total]
		if err := f.putSums(logical, data, runSums(blocks, run, total/ss*uint64(f.st.Super().CsumType.Len()))); err != nil {
			return err
		}
		if err := f.data.writeNow(logical, data); err != nil {
			return err
		}
	default:
		buf := rawBuffer(int(total))
		pos := uint64(0)
		for k, i := range run {
			pl := blocks[i].payload()
			copy(buf[pos:], pl)
			clear(buf[pos+uint64(len(pl)) : pos+lens[k]])
			pos += lens[k]
		}
		err := f.putCsums(logical, buf)
		if err == nil {
			err = f.data.writeNow(logical, buf) // nothing left in flight to hold memory
		}
		putBuffer(buf)
		if err != nil {
			return err
		}
	}
	pos := uint64(0)
	for k, i := range run {
		h, err := f.recordBlock(in, blocks[i], pol, logical+pos, lens[k])
		if err != nil {
			return err
		}
		made[i] = h
		pos += lens[k]
	}
	return nil
}

// payload is what a block stores on disk: its compressed frame or its data.
func (b *block) payload() []byte {
	if b.framed != nil {
		return b.framed
	}
	return b.data
}

// runSums joins the sector sums hashBlock made for the blocks of a run
// (want bytes in all), or nil when a block has none.
func runSums(blocks []block, run []int, want uint64) []byte {
	var n uint64
	for _, i := range run {
		if blocks[i].sums == nil {
			return nil
		}
		n += uint64(len(blocks[i].sums))
	}
	if n != want {
		return nil
	}
	sums := make([]byte, 0, n)
	for _, i := range run {
		sums = append(sums, blocks[i].sums...)
	}
	return sums
}
