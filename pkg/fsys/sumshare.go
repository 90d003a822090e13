package fsys

import (
	"encoding/binary"

	"github.com/zeebo/blake3"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/inband"
)

// SumShares lets Rededupe share a block without reading it when the
// image's sector sums are strong (format.CsumType.Strong): it maps the
// digest of a block's stored sector sums to the dedupe hash of the bytes
// they cover, learned when a copy of the block was read and verified. A
// later block with the same digest has the same sums, so the same bytes,
// so the same hash; the dedupe index then says where they lie. With weak
// sums nothing is learned and every block is read. One goroutine (the
// FS's).
type SumShares struct {
	m   map[[32]byte][format.DedupeHashLen]byte // the index keeps 20 hash bytes
	max int
	buf []byte // sumDigest's input
}

// sumShareBytes is what one learned block costs in SumShares: a 32-byte
// digest, 20 hash bytes and the map's overhead (measured heap: 118 bytes
// an entry at 7.7k entries, 112 at 32k).
const sumShareBytes = 120

// NewSumShares holds at most maxBytes of learned blocks (at
// sumShareBytes each); once full it learns no more, and blocks not
// learned are read as without it.
func NewSumShares(maxBytes uint64) *SumShares {
	return &SumShares{m: map[[32]byte][format.DedupeHashLen]byte{}, max: int(maxBytes / sumShareBytes)}
}

// Len is the number of blocks learned.
func (s *SumShares) Len() int { return len(s.m) }

func (s *SumShares) learn(d [32]byte, hash [format.CsumSize]byte) {
	if len(s.m) < s.max {
		s.m[d] = [format.DedupeHashLen]byte(hash[:format.DedupeHashLen])
	}
}

// sumDigest is the blake3 digest of the csum type, n and the stored sums
// of the sectors of [bo, bo+n) of in, in order; false when a sector has
// no sum that covers the file's bytes as they are (a hole, compressed or
// unaligned data): only the data can tell then.
func (f *FS) sumDigest(in *Inode, bo, n uint64, s *SumShares) ([32]byte, bool, error) {
	sb := f.st.Super()
	ss := uint64(sb.SectorSize)
	xs, err := f.extents(in.Ino, bo, bo+n)
	if err != nil {
		return [32]byte{}, false, err
	}
	// A fresh cache per block: the csum tree changes between blocks.
	c := &sumCache{f: f}
	b := binary.LittleEndian.AppendUint16(s.buf[:0], uint16(sb.CsumType))
	b = binary.LittleEndian.AppendUint64(b, n)
	for sec := bo; sec < bo+n; sec += ss {
		x := coverAt(xs, sec)
		if x == nil {
			return [32]byte{}, false, nil
		}
		sum, _, err := c.sector(x, sec, in.Size)
		if err != nil || sum == nil {
			return [32]byte{}, false, err
		}
		b = append(b, sum...)
	}
	s.buf = b
	return blake3.Sum256(b), true, nil
}

// shareBySums makes the block of n bytes at bo a reference to the extent
// holding the same bytes, judged by its stored strong sums alone (no
// read), when a copy was learned. It returns the block's digest (known:
// its sums tell) for learning after a read, and whether it shared.
func (f *FS) shareBySums(in *Inode, bo, n uint64, pol dataPolicy, s *SumShares) (d [32]byte, known, shared bool, err error) {
	sb := f.st.Super()
	if s == nil || sb.Settings.DedupeVerify || !sb.CsumType.Strong() {
		return d, false, false, nil // verify byte-compares: it reads anyway
	}
	d, known, err = f.sumDigest(in, bo, n, s)
	if err != nil || !known {
		return d, known, false, err
	}
	h20, ok := s.m[d]
	if !ok {
		return d, true, false, nil
	}
	var hash [format.CsumSize]byte // as format.DedupeHash makes it
	copy(hash[:], h20[:])
	h, err := f.index.Lookup(hash, pol.hash, n)
	if err != nil || h == nil {
		return d, true, false, err // no longer indexed: read it
	}
	if !pol.hash.Strong() {
		// An xxh3 match proves nothing: the extent found must hold the
		// same stored sums (so the same bytes) as the block.
		if same, err := f.sameSums(h, n, d, s); err != nil || !same {
			return d, true, false, err
		}
	}
	// As dedupeAdoptable: cut first, so the rest of the extent stays at
	// its first byte and its next block can be adopted; the punch frees
	// the cut.
	x, ok, err := f.adoptable(in, bo, n)
	if err == nil && ok {
		_, err = f.cut(in, x, n, [format.CsumSize]byte{}, nil)
	}
	if err == nil {
		err = f.punch(in, bo, bo+n)
	}
	if err == nil {
		err = f.referenceBlock(in, bo, n, h)
	}
	return d, true, err == nil, err
}

// sameSums reports whether the first n bytes of h's extent have, sector
// by sector, the stored sums digest d was made of (as sumDigest makes
// it): with strong sums, the same bytes. A compressed extent's sums are
// of its stored bytes: false.
func (f *FS) sameSums(h *inband.Hit, n uint64, d [32]byte, s *SumShares) (bool, error) {
	sb := f.st.Super()
	ss := uint64(sb.SectorSize)
	if h.Compression != format.CompressNone || n > h.DiskLen {
		return false, nil
	}
	c := &sumCache{f: f}
	b := binary.LittleEndian.AppendUint16(s.buf[:0], uint16(sb.CsumType))
	b = binary.LittleEndian.AppendUint64(b, n)
	for off := uint64(0); off < n; off += ss {
		sum, err := c.get(h.Logical + off)
		if err != nil || sum == nil {
			return false, err
		}
		b = append(b, sum...)
	}
	s.buf = b
	return blake3.Sum256(b) == d, nil
}
