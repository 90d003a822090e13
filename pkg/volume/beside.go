package volume

// A read-only open beside a writer (Options.Beside, device.ReaderMarks):
// the set is read at its last commit, whose generation every member
// marks; the writer keeps the space later commits free until no reader
// of an older generation remains.

import (
	"errors"
	"fmt"

	"github.com/ddfs/ddfs/pkg/device"
)

// Beside reports whether the set was opened beside a writer.
func (v *Volume) Beside() bool {
	for _, d := range v.devs {
		if m, ok := d.raw().(device.ReaderMarks); ok && m.Beside() {
			return true
		}
	}
	return false
}

// raw is the device under the I/O counter.
func (d *Dev) raw() device.Device {
	if c, ok := d.Dev.(*device.Counting); ok {
		return c.Unwrap()
	}
	return d.Dev
}

// errMoved: a commit landed between reading the superblock and marking
// its generation; the open starts again.
var errMoved = errors.New("the image moved to a newer commit while it was opened")

// besideTries bounds the opens a reader makes while the writer keeps
// committing under it.
const besideTries = 50

// markBeside marks the generation the set was read at on every member,
// then reads the superblocks again: when they still name that commit,
// no commit ended before the marks were in place, so the writer has kept
// (and will keep) what that commit references. Else errMoved.
func (v *Volume) markBeside() error {
	gen := v.Super.Generation
	for _, d := range v.devs {
		m, ok := d.raw().(device.ReaderMarks)
		if !ok {
			return fmt.Errorf("%s: %w", d.Path, device.ErrNoReaderMarks)
		}
		if err := m.MarkReader(gen); err != nil {
			return err
		}
	}
	for _, d := range v.devs {
		sb, err := BestSuper(ReadSuperCopies(d.Dev))
		if err != nil || sb.Generation != gen || sb.LogSeq != v.Super.LogSeq {
			return errMoved
		}
	}
	return nil
}

// OldestReader returns the lowest generation a reader beside this
// writer marked on any member, and its process when known.
func (v *Volume) OldestReader() (gen uint64, pid int, ok bool, err error) {
	for _, d := range v.devs {
		m, isM := d.raw().(device.ReaderMarks)
		if !isM {
			continue
		}
		g, p, found, err := m.OldestReader()
		if err != nil {
			return 0, 0, false, err
		}
		if found && (!ok || g < gen) {
			gen, pid, ok = g, p, true
		}
	}
	return gen, pid, ok, nil
}
