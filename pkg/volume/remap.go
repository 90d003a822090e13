package volume

import (
	"errors"
	"fmt"

	"github.com/ddfs/ddfs/format"
)

// Relocation support (device remove/replace/resize, balance): a chunk
// keeps its logical range and gets a new stripe set, so nothing that
// points at logical addresses changes. The store copies the chunk's bytes
// from the old layout to the new stripes, then switches the layout in the
// same transaction that records the new chunk item.

// ReplaceChunk switches the chunk at logical to item (same length): from
// now on reads and writes use its stripes. Holders of the *Chunk see it.
func (m *ChunkMap) ReplaceChunk(logical uint64, item *format.ChunkItem) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.chunks {
		if c.Logical == logical {
			if c.Length != item.Length {
				return fmt.Errorf("chunk %d: new layout of length %d, not %d", logical, item.Length, c.Length)
			}
			c.ChunkItem = item
			return nil
		}
	}
	return fmt.Errorf("no chunk at logical %d", logical)
}

// ReadChunk reads len(buf) bytes at offset off of chunk c as laid out by
// c (not by the chunk map), from the first copy that reads without an
// I/O error, starting with copy first. A copy on a device that is absent
// is skipped, so a chunk can be read off its mirrors when one device is
// gone.
func (v *Volume) ReadChunk(c *Chunk, off uint64, buf []byte, first int) error {
	if c.IsParity() {
		if err := c.holds(off, uint64(len(buf))); err != nil {
			return err
		}
		return v.readParity(c, c.Logical+off, buf, 0)
	}
	segs, err := c.Map(off, uint64(len(buf)))
	if err != nil {
		return err
	}
	for _, s := range segs {
		var errs error
		n := len(s.Targets)
		ok := false
		for i := 0; i < n && !ok; i++ {
			t := s.Targets[(first+i)%n]
			d, present := v.devs[t.DevID]
			if !present {
				errs = errors.Join(errs, &IOError{"read", c.Logical + off, t.DevID, "", t.Physical, ErrMissingDevice})
				continue
			}
			if _, err := d.Dev.ReadAt(buf[s.BufOff:s.BufOff+s.Len], int64(t.Physical)); err != nil {
				errs = errors.Join(errs, &IOError{"read", c.Logical + off, t.DevID, d.Path, t.Physical, err})
				continue
			}
			ok = true
		}
		if !ok {
			return errs
		}
	}
	return nil
}

// WriteChunk writes buf at offset off of chunk c as laid out by c, to the
// copies whose target want accepts (the new stripes of a relocation).
func (v *Volume) WriteChunk(c *Chunk, off uint64, buf []byte, want func(Target) bool) error {
	if !v.writable {
		return fmt.Errorf("write chunk %d: volume opened read-only", c.Logical)
	}
	if c.IsParity() {
		return fmt.Errorf("write chunk %d: a parity layout is written in whole rows (WriteRows)", c.Logical)
	}
	segs, err := c.Map(off, uint64(len(buf)))
	if err != nil {
		return err
	}
	for _, s := range segs {
		for _, t := range s.Targets {
			if !want(t) {
				continue
			}
			d, ok := v.devs[t.DevID]
			if !ok {
				return &IOError{"write", c.Logical + off, t.DevID, "", t.Physical, ErrMissingDevice}
			}
			if _, err := d.Dev.WriteAt(buf[s.BufOff:s.BufOff+s.Len], int64(t.Physical)); err != nil {
				return &IOError{"write", c.Logical + off, t.DevID, d.Path, t.Physical, err}
			}
		}
	}
	return nil
}

// DetachDevice takes device devid out of the set without closing it:
// commits no longer write its superblocks (device remove, and a removed
// device found again after a crash). It returns nil when not open.
func (v *Volume) DetachDevice(devid uint64) *Dev {
	d := v.devs[devid]
	delete(v.devs, devid)
	return d
}
