package device

// Readers beside a writer. A read-only open that finds the image held by
// a writer (OpenOptions.Beside) takes no shared lock; it reads the last
// committed state and marks the generation it reads with a shared lock
// on one byte of a reader region of the lock space (readerBase + gen).
// The writer asks for the oldest mark (OldestReader) before it makes
// space a commit freed reusable: space freed by commit C may still be
// read by a reader of a generation below C, so it stays unused until no
// such reader remains. A mark lives as long as the open file description
// (the kernel drops it when the reader exits, even killed).

import (
	"errors"
	"fmt"
)

const (
	readerBase   = 1 << 62            // reader marks: byte readerBase+gen
	readerSpan   = 1 << 60            // generations a mark can name
	readerMirror = readerBase + 1<<61 // classic POSIX copy of each mark, for the PID
)

// ErrNoReaderMarks: the device cannot carry reader marks (an NBD export,
// a partition window, a platform without OFD locks).
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

// Beside reports whether d was opened beside a writer (no shared lock).
func (d *fileDevice) Beside() bool { return d.beside }

// MarkReader implements ReaderMarks.
func (d *fileDevice) MarkReader(gen uint64) error {
	if gen >= readerSpan {
		return fmt.Errorf("mark generation %d: %w", gen, ErrNoReaderMarks)
	}
	if err := markByte(d.f, readerBase+int64(gen), readerMirror+int64(gen)); err != nil {
		return fmt.Errorf("mark %s as read at generation %d: %w", d.name, gen, err)
	}
	if d.marked && d.mark != gen {
		if err := unmarkByte(d.f, readerBase+int64(d.mark), readerMirror+int64(d.mark)); err != nil {
			return fmt.Errorf("unmark %s: %w", d.name, err)
		}
	}
	d.mark, d.marked = gen, true
	return nil
}

// OldestReader implements ReaderMarks: the lowest mark, found by asking
// the kernel for a conflicting lock below the lowest one found so far
// (each answer is lower: as many asks as readers, plus one).
func (d *fileDevice) OldestReader() (uint64, int, bool, error) {
	end := int64(readerBase + readerSpan)
	found := int64(-1)
	for {
		start, ok, err := firstLock(d.f, readerBase, end-readerBase)
		if err != nil {
			return 0, 0, false, fmt.Errorf("readers of %s: %w", d.name, err)
		}
		if !ok {
			break
		}
		found, end = start, start
	}
	if found < 0 {
		return 0, 0, false, nil
	}
	gen := uint64(found - readerBase)
	return gen, lockPID(d.f, readerMirror+int64(gen)), true, nil
}
