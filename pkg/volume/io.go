package volume

import (
	"fmt"

	"github.com/ddfs/ddfs/format"
)

// IOError locates a failed device I/O.
type IOError struct {
	Op       string
	Logical  uint64
	DevID    uint64
	Path     string
	Physical uint64
	Err      error
}

func (e *IOError) Error() string {
	return fmt.Sprintf("%s logical %d on device %d (%s) offset %d: %v", e.Op, e.Logical, e.DevID, e.Path, e.Physical, e.Err)
}

func (e *IOError) Unwrap() error { return e.Err }

// chunkAt is the chunk holding logical.
func (v *Volume) chunkAt(logical uint64) (*Chunk, error) {
	c, ok := v.Chunks.Lookup(logical)
	if !ok {
		return nil, fmt.Errorf("logical %d is in no chunk: %w", logical, format.ErrCorrupt)
	}
	return c, nil
}

func (v *Volume) mapRange(logical uint64, n int) (*Chunk, []Segment, error) {
	c, err := v.chunkAt(logical)
	if err != nil {
		return nil, nil, err
	}
	segs, err := mapIn(c, logical, n)
	return c, segs, err
}

// mapIn is c.Map of [logical, +n), with logical in c.
func mapIn(c *Chunk, logical uint64, n int) ([]Segment, error) {
	segs, err := c.Map(logical-c.Logical, uint64(n))
	if err != nil {
		return nil, fmt.Errorf("logical %d: %w", logical, err)
	}
	return segs, nil
}

// Copies is the number of copies that hold logical.
func (v *Volume) Copies(logical uint64) int {
	c, ok := v.Chunks.Lookup(logical)
	if !ok {
		return 0
	}
	pi, _ := c.Profile.Info()
	if pi.Striped {
		return pi.SubStripes + pi.Parity // parity: copy 0 and one rebuilt from each parity strip
	}
	return len(c.Stripes)
}

// ReadCopy reads len(buf) bytes at logical from copy number mirror.
func (v *Volume) ReadCopy(logical uint64, buf []byte, mirror int) error {
	c, err := v.chunkAt(logical)
	if err != nil {
		return err
	}
	if pi, _ := c.Profile.Info(); !pi.Striped && len(c.Stripes) > 0 {
		return v.readWhole(c, logical, buf, mirror)
	}
	if c.IsParity() {
		if err := c.holds(logical-c.Logical, uint64(len(buf))); err != nil {
			return fmt.Errorf("logical %d: %w", logical, err)
		}
		return v.readParity(c, logical, buf, mirror)
	}
	segs, err := mapIn(c, logical, len(buf))
	if err != nil {
		return err
	}
	for _, s := range segs {
		t := s.Targets[mirror%len(s.Targets)]
		d, ok := v.devs[t.DevID]
		if !ok {
			return &IOError{"read", logical, t.DevID, "", t.Physical, errMissingIO}
		}
		if _, err := d.Dev.ReadAt(buf[s.BufOff:s.BufOff+s.Len], int64(t.Physical)); err != nil {
			return &IOError{"read", logical, t.DevID, d.Path, t.Physical, err}
		}
	}
	return nil
}

// readWhole is ReadCopy of a chunk whose copies are whole (single, dup,
// raid1*): one device read and no Segments built (a 4K read through a
// FUSE mount is a few microseconds; Map's two allocations were a tenth).
func (v *Volume) readWhole(c *Chunk, logical uint64, buf []byte, mirror int) error {
	off := logical - c.Logical
	if err := c.holds(off, uint64(len(buf))); err != nil {
		return fmt.Errorf("logical %d: %w", logical, err)
	}
	s := c.Stripes[mirror%len(c.Stripes)]
	d, ok := v.devs[s.DevID]
	if !ok {
		return &IOError{"read", logical, s.DevID, "", s.Offset + off, errMissingIO}
	}
	if _, err := d.Dev.ReadAt(buf, int64(s.Offset+off)); err != nil {
		return &IOError{"read", logical, s.DevID, d.Path, s.Offset + off, err}
	}
	return nil
}

// Locate returns where each copy of the first byte of logical lives.
func (v *Volume) Locate(logical uint64) ([]Target, error) {
	_, segs, err := v.mapRange(logical, 1)
	if err != nil {
		return nil, err
	}
	return segs[0].Targets, nil
}

// Write writes buf at logical to every copy.
func (v *Volume) Write(logical uint64, buf []byte) error {
	if !v.writable {
		return fmt.Errorf("write logical %d: volume opened read-only", logical)
	}
	c, segs, err := v.mapRange(logical, len(buf))
	if err != nil {
		return err
	}
	if c.IsParity() {
		return v.writeParity(c, logical, buf)
	}
	for _, s := range segs {
		for _, t := range s.Targets {
			d, ok := v.devs[t.DevID]
			if !ok {
				return &IOError{"write", logical, t.DevID, "", t.Physical, errMissingIO}
			}
			if _, err := d.Dev.WriteAt(buf[s.BufOff:s.BufOff+s.Len], int64(t.Physical)); err != nil {
				return &IOError{"write", logical, t.DevID, d.Path, t.Physical, err}
			}
		}
	}
	return nil
}
