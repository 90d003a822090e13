package device

import (
	"errors"
	"fmt"
)

// ErrNotResizable: the device's size is fixed by its backend (a block
// device or partition; grow those with their own tools, then resize to max).
var ErrNotResizable = errors.New("device size cannot be changed by ddfs")

// resizer is a backend whose size ddfs may change (image files, memory).
type resizer interface {
	resize(size int64) error
}

// Resize changes the size of d's backend, looking through wrappers: an
// image file is extended sparsely or cut. It fails with ErrNotResizable
// for other backends.
func Resize(d Device, size int64) error {
	if size < 0 {
		return fmt.Errorf("resize %s to %d bytes: %w", d.Name(), size, ErrOutOfRange)
	}
	for d != nil {
		if r, ok := d.(resizer); ok {
			return r.resize(size)
		}
		u, ok := d.(Unwrapper)
		if !ok {
			break
		}
		d = u.Unwrap()
	}
	return ErrNotResizable
}

func (d *fileDevice) resize(size int64) error {
	if d.ro {
		return fmt.Errorf("resize %s: %w", d.name, ErrReadOnly)
	}
	if err := d.f.Truncate(size); err != nil {
		return fmt.Errorf("resize %s to %d bytes: %w", d.name, size, err)
	}
	d.size = size
	return nil
}

// resize of a memory device takes effect at once (not crash-simulated);
// bytes past a cut stay in memory and reappear if it grows again (tests only).
func (m *MemDevice) resize(size int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.size = size
	return nil
}
