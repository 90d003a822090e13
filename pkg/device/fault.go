package device

import (
	"errors"
	"fmt"
	"io"
	"sync"
)

// Rule decides whether an operation fails. count is the 0-based index of
// this operation among the operations of the same kind on this device
// (flush: off and n are 0). A nil error lets it through. Returning an error
// that wraps io.ErrShortWrite for a write makes it write only half.
type Rule func(op OpKind, off, n int64, count int) error

// FailAfter fails every op of kind after the first n succeeded. Pass a
// syscall errno (syscall.EIO, syscall.ENOSPC) to get errors callers can
// test with errors.Is, as from a real device.
func FailAfter(n int, kind OpKind, err error) Rule {
	return func(op OpKind, _, _ int64, count int) error {
		if op == kind && count >= n {
			return err
		}
		return nil
	}
}

// ShortWrite makes every write after the first n write only half its bytes
// and return io.ErrShortWrite.
func ShortWrite(n int) Rule {
	return FailAfter(n, OpWrite, io.ErrShortWrite)
}

// Faulty is a Device that injects errors by a Rule. Close is never failed,
// so tests can always clean up.
type Faulty struct {
	dev    Device
	mu     sync.Mutex
	rule   Rule
	counts map[OpKind]int
}

var _ Device = (*Faulty)(nil)

// NewFaulty wraps dev; a nil rule injects nothing until SetRule.
func NewFaulty(dev Device, rule Rule) *Faulty {
	return &Faulty{dev: dev, rule: rule, counts: map[OpKind]int{}}
}

// SetRule replaces the rule, e.g. to arm faults after a clean mkfs. Op
// counts keep running.
func (f *Faulty) SetRule(rule Rule) {
	f.mu.Lock()
	f.rule = rule
	f.mu.Unlock()
}

// check counts the op and asks the rule about it.
func (f *Faulty) check(op OpKind, off, n int64) error {
	f.mu.Lock()
	count := f.counts[op]
	f.counts[op]++
	rule := f.rule
	f.mu.Unlock()
	if rule == nil {
		return nil
	}
	return rule(op, off, n, count)
}

func (f *Faulty) ReadAt(p []byte, off int64) (int, error) {
	if err := f.check(OpRead, off, int64(len(p))); err != nil {
		return 0, fmt.Errorf("read %s at %d: injected: %w", f.dev.Name(), off, err)
	}
	return f.dev.ReadAt(p, off)
}

func (f *Faulty) WriteAt(p []byte, off int64) (int, error) {
	err := f.check(OpWrite, off, int64(len(p)))
	if err == nil {
		return f.dev.WriteAt(p, off)
	}
	if errors.Is(err, io.ErrShortWrite) && len(p) > 1 {
		n, werr := f.dev.WriteAt(p[:len(p)/2], off)
		if werr != nil {
			return n, werr
		}
		return n, fmt.Errorf("write %s at %d: injected: %w", f.dev.Name(), off, err)
	}
	return 0, fmt.Errorf("write %s at %d: injected: %w", f.dev.Name(), off, err)
}

func (f *Faulty) Flush() error {
	if err := f.check(OpFlush, 0, 0); err != nil {
		return fmt.Errorf("flush %s: injected: %w", f.dev.Name(), err)
	}
	return f.dev.Flush()
}

func (f *Faulty) Discard(off, length int64) error {
	if err := f.check(OpDiscard, off, length); err != nil {
		return fmt.Errorf("discard %s at %d+%d: injected: %w", f.dev.Name(), off, length, err)
	}
	return f.dev.Discard(off, length)
}

func (f *Faulty) Size() int64    { return f.dev.Size() }
func (f *Faulty) Close() error   { return f.dev.Close() }
func (f *Faulty) Name() string   { return f.dev.Name() }
func (f *Faulty) Props() Props   { return PropsOf(f.dev) }
func (f *Faulty) Unwrap() Device { return f.dev }
