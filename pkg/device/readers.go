package device

// Readers beside a writer. A read-only open that finds the image held by
// a writer (OpenOptions.Beside) takes no shared lock; it reads the last
// committed state and marks the generation it reads with a shared lock
// on one byte of a reader region of the lock space (its slot's, + gen).
// The writer asks for the oldest mark (OldestReader) before it makes
// space a commit freed reusable: space freed by commit C may still be
// read by a reader of a generation below C, so it stays unused until no
// such reader remains. A mark lives as long as the open file description
// (the kernel drops it when the reader exits, even killed).

import (
	"errors"
	"fmt"
	"os"
)

const (
	readerBase   = 1 << 62            // reader marks: byte readerBase + slot*slotSpan + gen
	readerSpan   = 1 << 60            // all slots' marks
	readerMirror = readerBase + 1<<61 // classic POSIX copy of each mark, for the PID
	// readerSlots: a whole image or device has slot 0 and partition N's
	// window slot N, so the readers and the writer of one window never
	// see another window's marks (two partitions are written at once).
	readerSlots = 512
	slotSpan    = readerSpan / readerSlots // generations a mark can name: 2^51
)

// ErrNoReaderMarks: the device cannot carry reader marks (an NBD export,
// a partition numbered past readerSlots, a platform without OFD locks).
var ErrNoReaderMarks = errors.New("reader marks not supported")

// ReaderMarks is a device that can carry reader marks.
type ReaderMarks interface {
	// Beside reports whether the open was made beside a writer.
	Beside() bool
	// MarkReader marks generation gen as read through this open,
	// replacing its earlier mark.
	MarkReader(gen uint64) error
	// OldestReader returns the lowest generation another open marked,
	// and its process when known (ok false: no mark).
	OldestReader() (gen uint64, pid int, ok bool, err error)
}

// marks is one open's reader marks, in its slot of the lock space.
type marks struct {
	// beside: a read-only open made beside a writer, with no shared
	// lock; mark is the generation it marked.
	beside, marked bool
	mark           uint64
	slot           int64
}

// Beside reports whether the open was made beside a writer (no shared lock).
func (m *marks) Beside() bool { return m.beside }

// at is the lock byte of generation gen's mark in m's slot.
func (m *marks) at(gen uint64) int64 { return readerBase + m.slot*slotSpan + int64(gen) }

// mirror is the byte of the classic POSIX copy of the mark at at.
func mirror(at int64) int64 { return at - readerBase + readerMirror }

// markReader marks gen on f (named name), replacing the earlier mark.
func (m *marks) markReader(f *os.File, name string, gen uint64) error {
	if gen >= slotSpan || m.slot < 0 || m.slot >= readerSlots {
		return fmt.Errorf("mark generation %d: %w", gen, ErrNoReaderMarks)
	}
	if err := markByte(f, m.at(gen), mirror(m.at(gen))); err != nil {
		return fmt.Errorf("mark %s as read at generation %d: %w", name, gen, err)
	}
	if m.marked && m.mark != gen {
		if err := unmarkByte(f, m.at(m.mark), mirror(m.at(m.mark))); err != nil {
			return fmt.Errorf("unmark %s: %w", name, err)
		}
	}
	m.mark, m.marked = gen, true
	return nil
}

// oldestReader is the lowest mark in m's slot of f, found by asking the
// kernel for a conflicting lock below the lowest one found so far (each
// answer is lower: as many asks as readers, plus one).
func (m *marks) oldestReader(f *os.File, name string) (uint64, int, bool, error) {
	base := m.at(0)
	end, found := base+slotSpan, int64(-1)
	for {
		start, ok, err := firstLock(f, base, end-base)
		if err != nil {
			return 0, 0, false, fmt.Errorf("readers of %s: %w", name, err)
		}
		if !ok {
			break
		}
		found, end = start, start
	}
	if found < 0 {
		return 0, 0, false, nil
	}
	return uint64(found - base), lockPID(f, mirror(found)), true, nil
}

// MarkReader implements ReaderMarks.
func (d *fileDevice) MarkReader(gen uint64) error { return d.markReader(d.f, d.name, gen) }

// OldestReader implements ReaderMarks.
func (d *fileDevice) OldestReader() (uint64, int, bool, error) { return d.oldestReader(d.f, d.name) }

// MarkReader implements ReaderMarks: in the window's own slot.
func (p *partDevice) MarkReader(gen uint64) error { return p.markReader(p.dev.f, p.name, gen) }

// OldestReader implements ReaderMarks: the window's readers only.
func (p *partDevice) OldestReader() (uint64, int, bool, error) {
	return p.oldestReader(p.dev.f, p.name)
}
