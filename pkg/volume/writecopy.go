package volume

import "fmt"

// WriteCopy writes buf at logical to copy number mirror only (numbered as
// ReadCopy numbers them). Self-healing reads, scrub and fsck repair use it
// to rewrite one bad copy from a good one without touching the others.
func (v *Volume) WriteCopy(logical uint64, buf []byte, mirror int) error {
	if !v.writable {
		return fmt.Errorf("write logical %d copy %d: volume opened read-only", logical, mirror)
	}
	c, segs, err := v.mapRange(logical, len(buf))
	if err != nil {
		return err
	}
	if c.IsParity() {
		return v.writeParityCopy(c, logical, buf, mirror)
	}
	for _, s := range segs {
		if mirror < 0 || mirror >= len(s.Targets) {
			return fmt.Errorf("logical %d has %d copies, not copy %d", logical, len(s.Targets), mirror)
		}
		t := s.Targets[mirror]
		d, ok := v.devs[t.DevID]
		if !ok {
			return &IOError{"write", logical, t.DevID, "", t.Physical, errMissingIO}
		}
		if _, err := d.Dev.WriteAt(buf[s.BufOff:s.BufOff+s.Len], int64(t.Physical)); err != nil {
			return &IOError{"write", logical, t.DevID, d.Path, t.Physical, err}
		}
	}
	return nil
}
