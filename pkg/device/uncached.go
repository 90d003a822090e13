package device

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"
)

// DirectAlign is the alignment of buffer address, offset and length that
// ReadUncached needs to bypass the page cache (the largest logical block
// size of the disks we meet).
const DirectAlign = 4096

// UncachedReader is a Device that can read from the medium itself rather
// than from the page cache.
type UncachedReader interface {
	// ReadUncached is ReadAt, bypassing the page cache when p and off
	// are aligned to DirectAlign and the file system allows it.
	ReadUncached(p []byte, off int64) (int, error)
}

// ReadUncached reads from dev past the page cache when dev can, else
// with ReadAt. A scrub uses it: it must check what is on the medium (a
// cached page proves nothing about the disk), and reading a whole set
// through the cache costs a copy per byte and evicts everyone else's pages.
func ReadUncached(dev Device, p []byte, off int64) (int, error) {
	if u, ok := dev.(UncachedReader); ok {
		return u.ReadUncached(p, off)
	}
	return dev.ReadAt(p, off)
}

// AlignedBuf returns n bytes whose address is aligned to DirectAlign.
func AlignedBuf(n int) []byte {
	b := make([]byte, n+DirectAlign)
	skip := 0
	if r := int(uintptr(unsafe.Pointer(unsafe.SliceData(b))) % DirectAlign); r != 0 {
		skip = DirectAlign - r
	}
	return b[skip : skip+n : skip+n]
}

// aligned reports whether p and off suit a direct read.
func aligned(p []byte, off int64) bool {
	return len(p) > 0 && off%DirectAlign == 0 && len(p)%DirectAlign == 0 &&
		uintptr(unsafe.Pointer(unsafe.SliceData(p)))%DirectAlign == 0
}

// direct is a second, page-cache-bypassing descriptor of an image file,
// opened on first use; when the file system refuses direct I/O (tmpfs),
// reads fall back to the cached descriptor.
type direct struct {
	once sync.Once
	f    *os.File    // nil: unavailable
	off  atomic.Bool // set after a refused read
}

func (dr *direct) file(path string) *os.File {
	dr.once.Do(func() { dr.f, _ = openDirect(path) })
	if dr.off.Load() {
		return nil
	}
	return dr.f
}

func (dr *direct) close() {
	dr.once.Do(func() {}) // none opened after Close
	if dr.f != nil {
		dr.f.Close()
	}
}

// ReadUncached implements UncachedReader.
func (d *fileDevice) ReadUncached(p []byte, off int64) (int, error) {
	n, eof := clipRead(d.name, off, len(p), d.size)
	if n == 0 || !aligned(p[:n], off) {
		return d.ReadAt(p, off)
	}
	f := d.direct.file(d.name)
	if f == nil {
		return d.ReadAt(p, off)
	}
	m, err := f.ReadAt(p[:n], off)
	if errors.Is(err, errDirectRefused) {
		d.direct.off.Store(true)
		return d.ReadAt(p, off)
	}
	if err != nil {
		return m, fmt.Errorf("read %s at %d: %w", d.name, off, err)
	}
	return m, eof
}
