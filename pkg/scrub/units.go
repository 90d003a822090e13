package scrub

import (
	"fmt"

	"github.com/ddfs/ddfs/format"
)

// unit is one piece of work: one tree node, or a run of checksummed data
// sectors; a worker reads every copy of it.
type unit struct {
	seq     uint64
	logical uint64
	length  int
	meta    bool
	parity  bool // in a raid5/raid6 chunk: copies 1.. are rebuilds
	// a node's expected header (from its metadata item)
	owner format.TreeID
	level int
	gen   uint64
	// sums holds one checksum per data sector.
	sums []byte
	// filled by the worker
	read map[uint64]uint64 // bytes read per devid
	errs []CopyError
	err  error // operational failure (not a bad copy)
}

func (u *unit) end() uint64 { return u.logical + uint64(u.length) }

// pieceSectors bounds a data unit (1 MiB at 4 KiB sectors): big reads,
// few system calls, small buffers per copy.
const pieceSectors = 256

// produce sends the units at or above start in logical order: per chunk,
// the nodes its metadata items list or the sectors its csum items cover.
func (s *scrubber) produce(start uint64, out chan<- *unit) error {
	seq := uint64(0)
	send := func(u *unit) error {
		u.seq = seq
		select { // a stop wins over a free slot
		case <-s.opt.Stop:
			return ErrInterrupted
		default:
		}
		select {
		case <-s.opt.Stop:
			return ErrInterrupted
		case out <- u:
			seq++
			return nil
		}
	}
	for _, c := range s.fs.Vol.Chunks.All() {
		if c.End() <= start {
			continue
		}
		var err error
		if c.Type == format.ChunkData {
			err = s.produceData(c.Logical, c.End(), start, send)
		} else {
			err = s.produceNodes(c.Logical, c.End(), start, send)
		}
		if err != nil {
			return fmt.Errorf("scrub chunk %d: %w", c.Logical, err)
		}
	}
	return nil
}

// produceNodes sends a unit per metadata item of [lo, hi) at or above start.
func (s *scrubber) produceNodes(lo, hi, start uint64, send func(*unit) error) error {
	ns := uint64(s.fs.Super().NodeSize)
	from := format.Key{ObjectID: max(lo, start)}
	return s.scan(format.ExtentTree, from, format.Key{ObjectID: hi}, func(it format.Item) (bool, error) {
		if it.Key.Type != format.MetadataItemKey || it.Key.ObjectID+ns > hi {
			return true, nil // a node crossing its chunk is fsck's to report
		}
		u := &unit{logical: it.Key.ObjectID, length: int(ns), meta: true, level: -1}
		if it.Key.Offset < format.MaxLevel {
			u.level = int(it.Key.Offset)
		}
		if m, err := format.UnmarshalMetadataItem(it.Data); err == nil {
			u.owner, u.gen = m.Owner, m.Generation
		}
		return true, send(u)
	})
}

// produceData sends the checksummed sectors of [lo, hi) at or above
// start, cut into pieces.
func (s *scrubber) produceData(lo, hi, start uint64, send func(*unit) error) error {
	sb := s.fs.Super()
	ss, cl := uint64(sb.SectorSize), sb.CsumType.Len()
	key := func(l uint64) format.Key {
		return format.Key{ObjectID: format.CsumObjectID, Type: format.CsumItemKey, Offset: l}
	}
	return s.scan(format.CsumTree, key(lo), key(hi), func(it format.Item) (bool, error) {
		n := uint64(len(it.Data) / cl)
		l := it.Key.Offset
		if l%ss != 0 || n == 0 || n > (hi-l)/ss {
			return true, nil // fsck reports a csum item outside its chunk
		}
		for i := uint64(0); i < n; i += pieceSectors {
			cnt := min(pieceSectors, n-i)
			at := l + i*ss
			if at+cnt*ss <= start {
				continue // scrubbed before the interruption
			}
			sums := append([]byte(nil), it.Data[i*uint64(cl):(i+cnt)*uint64(cl)]...)
			if err := send(&unit{logical: at, length: int(cnt * ss), sums: sums}); err != nil {
				return false, err
			}
		}
		return true, nil
	})
}
