// Package device is the only door between ddfs and storage: image files,
// block devices, partitions of disk images, and the in-memory, recording and
// fault-injecting devices the tests use. Everything above it sees a Device.
package device

import (
	"errors"
	"io"
)

// Device is one storage device of a ddfs set. Offsets are physical byte
// offsets on the device. Implementations are safe for concurrent ReadAt and
// WriteAt on disjoint ranges.
type Device interface {
	io.ReaderAt
	io.WriterAt
	// Size is the usable size in bytes.
	Size() int64
	// Flush makes every completed WriteAt durable (fdatasync / cache flush).
	Flush() error
	// Discard tells the device a range holds no data any more (hole punch
	// on image files, BLKDISCARD on block devices). Reads of a discarded
	// range return zeros or the old data; callers must not rely on either.
	Discard(off, length int64) error
	// Close releases the device and its lock.
	Close() error
	// Name is the path or spec the device was opened by, for messages.
	Name() string
}

// Props are the performance properties of a device as its backend sees
// them. Zero values mean "unknown"; mkfs fills defaults.
type Props struct {
	Rotational bool
	SeekSpeed  uint64 // seeks per second
	Bandwidth  uint64 // bytes per second
}

// Prober is implemented by backends that can report Props (block devices
// read sysfs).
type Prober interface {
	Props() Props
}

// Sentinel errors callers test with errors.Is.
var (
	// ErrBusy: another process holds a conflicting lock on the device.
	ErrBusy = errors.New("device is in use")
	// ErrNotSupported: the operation (e.g. Discard) is not available on this backend.
	ErrNotSupported = errors.New("operation not supported by device")
	// ErrReadOnly: a write was attempted on a device opened read-only.
	ErrReadOnly = errors.New("device opened read-only")
)
