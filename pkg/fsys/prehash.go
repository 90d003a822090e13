package fsys

import (
	"golang.org/x/sync/errgroup"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/inband"
)

// DataPolicy is how a file's new data will be cut and hashed. It is
// taken in the FS's goroutine (Policy) and may then be used from any
// goroutine to hash data ahead of the write (Hashes): a copier hashes
// the next buffer while the FS stores the current one.
type DataPolicy struct {
	p  dataPolicy
	ss uint64
}

// Policy returns the data policy of in.
func (f *FS) Policy(in *Inode) DataPolicy {
	return DataPolicy{p: f.policy(in), ss: uint64(f.st.Super().SectorSize)}
}

// Dedupe reports whether writes under the policy are hashed.
func (dp DataPolicy) Dedupe() bool { return dp.p.dedupe }

type hashKey struct {
	off uint64
	n   int
	at  *byte // the block's first byte: the hash is for this very data
}

// Hashes are dedupe hashes (and sector sums) computed ahead of a write.
type Hashes struct {
	m map[hashKey]hashed
}

type hashed struct {
	hash [format.CsumSize]byte
	sums []byte
}

// Hashes cuts data (to be written at off) the way a write will and hashes
// the blocks in parallel. Pure: safe from any goroutine.
func (dp DataPolicy) Hashes(data []byte, off uint64) *Hashes {
	if !dp.p.dedupe {
		return nil
	}
	var blocks []block
	for p, o := data, off; len(p) > 0; {
		if z := zeroPrefix(p, o, dp.ss); z > 0 {
			p, o = p[z:], o+z
			continue
		}
		n := dataRun(p, o, dp.ss, maxExtent)
		blocks = append(blocks, cutBlocks(p[:n], o, dp.p)...)
		p, o = p[n:], o+n
	}
	hashBlocks(blocks, dp.p)
	h := &Hashes{m: make(map[hashKey]hashed, len(blocks))}
	for _, b := range blocks {
		h.m[hashKey{b.off, len(b.data), &b.data[0]}] = hashed{b.hash, b.sums}
	}
	return h
}

// WriteAtHashed is WriteAt with hashes from Hashes for the same data.
func (f *FS) WriteAtHashed(in *Inode, p []byte, off uint64, h *Hashes) error {
	f.prehash = h
	defer func() { f.prehash = nil }()
	return f.WriteAt(in, p, off)
}

// Framed is a block's compressed frame (FORMAT.md §6.6) made elsewhere:
// a send stream's ENCODED record.
type Framed struct {
	Compression format.Compression
	Frame       []byte
}

type preframed struct {
	key hashKey
	Framed
}

// WriteAtFramed is WriteAt of p, the bytes frame fr decompresses to (the
// caller checked it decodes to exactly p): where the write stores p as
// one block compressed the way fr is, it stores fr as it is instead of
// compressing p again. Anywhere else (another compression, dedupe cut
// p, a zero run split it) p is written as WriteAt writes it.
func (f *FS) WriteAtFramed(in *Inode, p []byte, off uint64, fr Framed) error {
	if len(p) > 0 {
		f.preframed = &preframed{hashKey{off, len(p), &p[0]}, fr}
		defer func() { f.preframed = nil }()
	}
	return f.WriteAt(in, p, off)
}

// framedFor returns the frame WriteAtFramed gave for block b, if b is
// that write's whole data and compressed as it is.
func (f *FS) framedFor(b *block, c format.Compression) ([]byte, bool) {
	fr := f.preframed
	if fr == nil || fr.Compression != c || fr.key != (hashKey{b.off, len(b.data), &b.data[0]}) {
		return nil, false
	}
	return fr.Frame, true
}

// cutBlocks splits a run into dedupe/compression blocks.
func cutBlocks(p []byte, off uint64, pol dataPolicy) []block {
	var blocks []block
	for len(p) > 0 {
		n := inband.Cut(p, off, pol.block, pol.dedupe && pol.cdc)
		blocks = append(blocks, block{off: off, data: p[:n]})
		p, off = p[n:], off+n
	}
	return blocks
}

// hashBlocks hashes blocks in parallel (bounded by GOMAXPROCS), skipping
// those already hashed.
// One block is hashed on the caller's goroutine: dedupe-tool run passes
// a block at a time, and a goroutine per block cost a futex wake and
// sleep each (61k of them over 45,916 files, ~10% of the run's CPU).
func hashBlocks(blocks []block, pol dataPolicy) {
	todo := 0
	for i := range blocks {
		if !blocks[i].hashed {
			todo++
		}
	}
	if todo <= 1 {
		for i := range blocks {
			if b := &blocks[i]; !b.hashed {
				hashBlock(b, pol)
			}
		}
		return
	}
	var g errgroup.Group
	g.SetLimit(cpus())
	for i := range blocks {
		b := &blocks[i]
		if b.hashed {
			continue
		}
		g.Go(func() error { hashBlock(b, pol); return nil })
	}
	g.Wait()
}

// hashBlock hashes b and, under a policy that asks (ss set) and for a
// block of whole sectors, sums its sectors right after, in cache (not
// with compression: such a block is mostly stored framed, with the sums
// of its frame).
func hashBlock(b *block, pol dataPolicy) {
	spec := inband.HashSpec{Algo: pol.hash, Csum: pol.csum, SS: pol.ss}
	if pol.compress != format.CompressNone {
		spec.SS = 0
	}
	b.hash, b.sums = inband.Hash(b.data, spec)
}
