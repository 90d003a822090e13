package volume

import (
	"errors"
	"fmt"
	"io"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
)

// SuperCopy is the result of reading one superblock copy of a device.
type SuperCopy struct {
	Offset uint64
	SB     *format.Superblock // nil when Err != nil
	Err    error
}

// ErrNoSuperblock: a device holds no valid ddfs superblock.
var ErrNoSuperblock = errors.New("no valid ddfs superblock")

// SuperOffsets returns the superblock offsets that fit on a device of size.
func SuperOffsets(size int64) []uint64 {
	var out []uint64
	for _, off := range format.SuperblockOffsets {
		if off+format.SuperblockSize <= uint64(size) {
			out = append(out, off)
		}
	}
	return out
}

// ReadSuperCopies reads and validates every superblock copy of dev.
func ReadSuperCopies(dev device.Device) []SuperCopy { return readSuperCopies(dev, dev.Size()) }

// readSuperCopies reads the copies that fit in size bytes of r.
func readSuperCopies(r io.ReaderAt, size int64) []SuperCopy {
	var out []SuperCopy
	buf := make([]byte, format.SuperblockSize)
	for _, off := range SuperOffsets(size) {
		c := SuperCopy{Offset: off}
		if _, err := r.ReadAt(buf, int64(off)); err != nil {
			c.Err = fmt.Errorf("read superblock at %d: %w", off, err)
		} else if sb, err := format.UnmarshalSuperblock(buf); err != nil {
			c.Err = fmt.Errorf("superblock at %d: %w", off, err)
		} else if sb.Bytenr != off {
			c.Err = fmt.Errorf("superblock at %d says it lives at %d: %w", off, sb.Bytenr, format.ErrCorrupt)
		} else {
			c.SB = sb
		}
		out = append(out, c)
	}
	return out
}

// BestSuper returns the valid copy with the highest generation.
func BestSuper(copies []SuperCopy) (*format.Superblock, error) {
	var best *format.Superblock
	var firstErr error
	for _, c := range copies {
		if c.Err != nil {
			// Report the primary's error, unless it only lacks the magic
			// and a copy shows real ddfs damage.
			if firstErr == nil || (errors.Is(firstErr, format.ErrBadMagic) && !errors.Is(c.Err, format.ErrBadMagic)) {
				firstErr = c.Err
			}
			continue
		}
		if best == nil || format.NewerSuper(c.SB, best) {
			best = c.SB
		}
	}
	if best != nil {
		return best, nil
	}
	if firstErr == nil {
		return nil, fmt.Errorf("device too small for a superblock: %w", ErrNoSuperblock)
	}
	if errors.Is(firstErr, format.ErrUnsupported) {
		return nil, firstErr
	}
	if errors.Is(firstErr, format.ErrBadMagic) {
		return nil, fmt.Errorf("not a ddfs filesystem: %w", ErrNoSuperblock)
	}
	return nil, fmt.Errorf("%w (%v)", ErrNoSuperblock, firstErr)
}

// WriteSupers writes sb, adjusted for each device and copy, to every
// superblock position of every device. It does not flush.
func (v *Volume) WriteSupers(sb *format.Superblock) error {
	return v.WriteSupersOf(sb, func(*Dev) bool { return true })
}

// WriteSupersOf is WriteSupers for the devices which selects (a commit
// writes and flushes those of newly added devices first).
func (v *Volume) WriteSupersOf(sb *format.Superblock, which func(*Dev) bool) error {
	for _, d := range v.Devices() {
		if !which(d) {
			continue
		}
		s := *sb
		s.DevID = d.ID
		s.DevUUID = d.UUID
		for _, off := range SuperOffsets(d.Dev.Size()) {
			s.Bytenr = off
			b, err := format.MarshalSuperblock(&s)
			if err != nil {
				return err
			}
			if _, err := d.Dev.WriteAt(b, int64(off)); err != nil {
				return fmt.Errorf("write superblock of %s at %d: %w", d.Path, off, err)
			}
		}
	}
	return nil
}
