package scrub

import (
	"fmt"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/volume"
)

// KindSuper: a superblock copy that cannot be read, does not verify, or
// belongs to another set or device.
const KindSuper = "super"

// scrubSupers checks every superblock copy of every present device. A
// copy that only lags the set's generation is an interrupted commit's
// trace that the next commit rewrites (fsck warns), not an error. With
// Repair a bad copy is rewritten from the device's current copy.
func (s *scrubber) scrubSupers() {
	sb := s.fs.Super()
	for _, d := range s.fs.Vol.Devices() {
		copies := volume.ReadSuperCopies(d.Dev)
		var good *format.Superblock
		for _, c := range copies {
			if c.Err == nil && c.SB.FSID == sb.FSID && c.SB.DevID == d.ID && c.SB.Generation == sb.Generation {
				good = c.SB
				break
			}
		}
		dev := &s.rep.Devices[s.devIdx[d.ID]]
		for i, c := range copies {
			dev.BytesRead += format.SuperblockSize
			s.rep.BytesRead += format.SuperblockSize
			e := CopyError{Len: format.SuperblockSize, Copy: i, DevID: d.ID, Physical: c.Offset, Metadata: true, Kind: KindSuper}
			switch {
			case c.Err != nil:
				e.Detail = c.Err.Error()
			case c.SB.FSID != sb.FSID || c.SB.DevID != d.ID:
				e.Detail = "copy belongs to another filesystem or device"
			default:
				continue
			}
			switch {
			case good == nil:
				e.Uncorrectable = true
			case s.opt.Repair:
				if err := rewriteSuper(d, good, c.Offset); err != nil {
					e.Detail += "; rewrite failed: " + err.Error()
				} else {
					e.Corrected = true
				}
			}
			s.count(dev, e)
			dev.SuperErrors++
		}
	}
}

// rewriteSuper writes good to the superblock position off of d (flushed
// with the scrub's repairs).
func rewriteSuper(d *volume.Dev, good *format.Superblock, off uint64) error {
	sb := *good
	sb.Bytenr = off
	b, err := format.MarshalSuperblock(&sb)
	if err != nil {
		return err
	}
	if _, err := d.Dev.WriteAt(b, int64(off)); err != nil {
		return fmt.Errorf("write superblock of %s at %d: %w", d.Path, off, err)
	}
	return nil
}
