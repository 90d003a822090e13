package device

import (
	"errors"
	"fmt"
	"io"
)

// ErrOutOfRange: a write or discard reaches outside the device (or the
// partition window). Writes are refused, never clipped, so a bad offset
// cannot silently lose data or spill into a neighbouring partition.
var ErrOutOfRange = errors.New("I/O outside the device")

// clipRead returns how many of n bytes at off can be read from a device of
// the given size. eof is io.EOF when the read is cut short, mirroring
// os.File.ReadAt at end of file.
func clipRead(name string, off int64, n int, size int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("read %s at %d: negative offset: %w", name, off, ErrOutOfRange)
	}
	if off >= size {
		if n == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	if int64(n) > size-off {
		return int(size - off), io.EOF
	}
	return n, nil
}

// checkRange refuses ranges that are not entirely inside [0, size).
func checkRange(op, name string, off, n, size int64) error {
	if off < 0 || n < 0 || off > size || n > size-off {
		return fmt.Errorf("%s %s at %d+%d: device size is %d: %w", op, name, off, n, size, ErrOutOfRange)
	}
	return nil
}

// Unwrapper is implemented by devices that wrap another one (Recorder,
// Faulty, future accounting wrappers) so callers can reach the backend.
type Unwrapper interface {
	Unwrap() Device
}

// PropsOf returns the device's Props, looking through wrappers; zero
// values mean unknown.
func PropsOf(d Device) Props {
	for d != nil {
		if p, ok := d.(Prober); ok {
			return p.Props()
		}
		u, ok := d.(Unwrapper)
		if !ok {
			break
		}
		d = u.Unwrap()
	}
	return Props{}
}
