package format

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every decode failure wraps ErrCorrupt as well as the
// specific sentinel, so any layer can ask errors.Is(err, ErrCorrupt).
var (
	// ErrCorrupt marks any structure that failed validation.
	ErrCorrupt = errors.New("corrupt metadata")
	// ErrBadMagic: the magic bytes are not ddfs's.
	ErrBadMagic = errors.New("bad magic")
	// ErrChecksum: the stored checksum does not match the contents.
	ErrChecksum = errors.New("checksum mismatch")
	// ErrUnsupported: a format version or incompat feature this build does not know.
	ErrUnsupported = errors.New("unsupported format")
	// ErrShort: the buffer is smaller than the structure.
	ErrShort = errors.New("truncated structure")
)

// corruptf returns an error that wraps both ErrCorrupt and sentinel.
func corruptf(sentinel error, format string, args ...any) error {
	return &CorruptError{Sentinel: sentinel, Msg: fmt.Sprintf(format, args...)}
}

// CorruptError describes a validation failure; it matches ErrCorrupt and
// its Sentinel with errors.Is.
type CorruptError struct {
	Sentinel error
	Msg      string
}

func (e *CorruptError) Error() string {
	if e.Sentinel == nil {
		return e.Msg
	}
	return e.Msg + ": " + e.Sentinel.Error()
}

// Is makes errors.Is(err, ErrCorrupt) true for every CorruptError.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

func (e *CorruptError) Unwrap() error { return e.Sentinel }
