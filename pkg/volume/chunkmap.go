package volume

import (
	"fmt"
	"sort"
	"sync"

	"github.com/ddfs/ddfs/format"
)

// Chunk is a chunk item placed at its logical start.
type Chunk struct {
	Logical uint64
	*format.ChunkItem
}

// End is the first logical byte after the chunk.
func (c *Chunk) End() uint64 { return c.Logical + c.Length }

// Target is one physical location that holds (a copy of) some logical bytes.
type Target struct {
	DevID    uint64
	Physical uint64
}

// Segment is a piece of a logical range that maps contiguously onto each
// of its Targets (one per copy).
type Segment struct {
	BufOff  int // offset of the segment in the caller's buffer
	Len     int
	Targets []Target
}

// holds refuses a range [off, off+length) (off relative to the chunk's
// start) that does not lie inside the chunk.
func (c *Chunk) holds(off, length uint64) error {
	if off > c.Length || length > c.Length-off {
		return fmt.Errorf("range [%d,+%d) outside chunk %d of length %d", off, length, c.Logical, c.Length)
	}
	return nil
}

// Map cuts [off, off+length) of the chunk (off relative to its start)
// into segments that do not cross stripe boundaries.
func (c *Chunk) Map(off, length uint64) ([]Segment, error) {
	if err := c.holds(off, length); err != nil {
		return nil, err
	}
	pi, _ := c.Profile.Info()
	var segs []Segment
	if !pi.Striped {
		t := make([]Target, len(c.Stripes))
		for i, s := range c.Stripes {
			t[i] = Target{s.DevID, s.Offset + off}
		}
		return []Segment{{Len: int(length), Targets: t}}, nil
	}
	if pi.Parity > 0 {
		return c.mapParity(off, length), nil
	}
	sl := uint64(c.StripeLen)
	data := uint64(len(c.Stripes) / pi.SubStripes)
	bufOff := 0
	for length > 0 {
		nr := off / sl
		idx := nr % data
		row := nr / data
		in := off % sl
		n := min(sl-in, length)
		t := make([]Target, pi.SubStripes)
		for j := range t {
			s := c.Stripes[int(idx)*pi.SubStripes+j]
			t[j] = Target{s.DevID, s.Offset + row*sl + in}
		}
		segs = append(segs, Segment{BufOff: bufOff, Len: int(n), Targets: t})
		bufOff += int(n)
		off += n
		length -= n
	}
	return segs, nil
}

// LostWithout reports whether some byte of the chunk has no copy left
// when the devices gone names are lost: a mirror group (every stripe of
// a chunk that is not striped; each SubStripes-long run of a striped
// one) with all its stripes on such devices, or more stripes of a parity
// chunk than it has parity.
func (c *Chunk) LostWithout(gone func(devid uint64) bool) bool {
	pi, _ := c.Profile.Info()
	if pi.Parity > 0 { // a row survives while at most Parity strips are gone
		n := 0
		for _, s := range c.Stripes {
			if gone(s.DevID) {
				n++
			}
		}
		return n > pi.Parity
	}
	group := len(c.Stripes)
	if pi.Striped {
		group = max(pi.SubStripes, 1)
	}
	for i := 0; i < len(c.Stripes); i += group {
		lost := true
		for _, s := range c.Stripes[i:min(i+group, len(c.Stripes))] {
			lost = lost && gone(s.DevID)
		}
		if lost {
			return true
		}
	}
	return false
}

// ChunkMap is the logical address space: chunks sorted by logical start.
// It is safe for concurrent use: background data writes look chunks up
// while the transaction adds new ones.
type ChunkMap struct {
	mu     sync.RWMutex
	chunks []*Chunk
}

// Add inserts a chunk; overlapping chunks are corruption.
func (m *ChunkMap) Add(logical uint64, item *format.ChunkItem) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := &Chunk{Logical: logical, ChunkItem: item}
	i := sort.Search(len(m.chunks), func(i int) bool { return m.chunks[i].Logical >= logical })
	if i < len(m.chunks) && m.chunks[i].Logical == logical {
		if m.chunks[i].Length == item.Length {
			m.chunks[i] = c // same chunk seen twice (bootstrap array and chunk tree)
			return nil
		}
	}
	if (i > 0 && m.chunks[i-1].End() > logical) || (i < len(m.chunks) && m.chunks[i].Logical < c.End()) {
		return fmt.Errorf("chunk %d+%d overlaps another chunk: %w", logical, item.Length, format.ErrCorrupt)
	}
	m.chunks = append(m.chunks, nil)
	copy(m.chunks[i+1:], m.chunks[i:])
	m.chunks[i] = c
	return nil
}

// Lookup finds the chunk holding logical.
func (m *ChunkMap) Lookup(logical uint64) (*Chunk, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	i := sort.Search(len(m.chunks), func(i int) bool { return m.chunks[i].End() > logical })
	if i < len(m.chunks) && m.chunks[i].Logical <= logical {
		return m.chunks[i], true
	}
	return nil, false
}

// All returns the chunks in logical order; the slice must not be modified.
func (m *ChunkMap) All() []*Chunk {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.chunks[:len(m.chunks):len(m.chunks)]
}

// End is the first logical address after every chunk (where the next
// chunk may start).
func (m *ChunkMap) End() uint64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if len(m.chunks) == 0 {
		return 0
	}
	return m.chunks[len(m.chunks)-1].End()
}

// DevExtent is a physical range of a device used by one stripe of a chunk.
type DevExtent struct {
	DevID, Physical, Length uint64
	ChunkLogical            uint64
}

// DevExtents lists the physical ranges that chunks occupy on devid, sorted.
func (m *ChunkMap) DevExtents(devid uint64) []DevExtent {
	var out []DevExtent
	for _, c := range m.All() {
		sl := c.StripeLength()
		for _, s := range c.Stripes {
			if s.DevID == devid {
				out = append(out, DevExtent{devid, s.Offset, sl, c.Logical})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Physical < out[j].Physical })
	return out
}
