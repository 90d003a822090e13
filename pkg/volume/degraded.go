package volume

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/google/uuid"
)

// MissingDeviceError names a member of the set that is not open: not
// found (Err nil), or found but unusable (Err says why: EACCES, EROFS, a
// bad superblock). It matches ErrMissingDevice and Err.
type MissingDeviceError struct {
	DevID uint64
	UUID  [16]byte
	Path  string // the last path the set recorded for it ("" when none: §4.3)
	Err   error
	// Unread are files next to the set that could not be read to tell
	// whether they are this device ("PATH: reason").
	Unread []string
}

func (e *MissingDeviceError) Error() string {
	name := fmt.Sprintf("device %d (uuid %s)", e.DevID, uuid.UUID(e.UUID))
	if e.Path != "" {
		name = fmt.Sprintf("device %d (%s, uuid %s)", e.DevID, e.Path, uuid.UUID(e.UUID))
	}
	if e.Err == nil && len(e.Unread) > 0 {
		return fmt.Sprintf("%s: could not read %s", name, strings.Join(e.Unread, ", "))
	}
	if e.Err == nil {
		return name + " not found"
	}
	return fmt.Sprintf("%s cannot be used: %v", name, e.Err)
}

// Unwrap lets errors.Is match ErrMissingDevice and the cause.
func (e *MissingDeviceError) Unwrap() []error { return []error{ErrMissingDevice, e.Err} }

// errMissingIO is what reading or writing a copy on a device that is not
// open returns: an I/O error (EIO), so a chunk whose every copy is gone
// reads as damaged, never as "not found".
var errMissingIO = fmt.Errorf("%w: %w", ErrMissingDevice, syscall.EIO)

// IsMissing reports whether devid is a member the set was opened without.
func (v *Volume) IsMissing(devid uint64) bool {
	_, ok := v.devs[devid]
	return !ok
}

// ChunkDegraded reports whether some copy of c lies on a device that is
// not open; a degraded set never writes into such a chunk.
func (v *Volume) ChunkDegraded(c *Chunk) bool {
	for _, s := range c.Stripes {
		if v.IsMissing(s.DevID) {
			return true
		}
	}
	return false
}

// ErrNeedDegraded marks an open that failed only because a member is
// missing or unusable: with Options.Degraded (--degraded) it would work.
var ErrNeedDegraded = errors.New("open it degraded with --degraded")

// setUnusable records why member devid, found by the folder scan, could
// not be opened; the set then opens only degraded, and says why.
func (v *Volume) setUnusable(devid uint64, err error) {
	if v.unusable == nil {
		v.unusable = map[uint64]error{}
	}
	v.unusable[devid] = err
}

// Unusable returns why member devid was found but could not be opened
// (nil: not found at all, or open).
func (v *Volume) Unusable(devid uint64) error { return v.unusable[devid] }
