package foreign

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/diskfs/go-diskfs/backend"
)

// Limits of one operation (one call into go-diskfs). A real walk of a
// directory or a read of a file stays far below them; a loop in a
// crafted image (an extent tree or a directory chain naming itself) hits
// them after bounded memory and time.
const (
	opBudget       = 256 << 20 // bytes read by one operation (less for a small image: 64 times its size and 16 MiB)
	offsetRevisits = 1 << 13   // reads of one offset in one operation
)

// errBudget is what the backend panics with when an operation exceeds its
// limits; guard turns it into ErrCorrupt.
type errBudget struct{ why string }

// roBackend is go-diskfs's view of the image: reads within [0, size) of
// the opened device (or partition window), no writes, no *os.File (so no
// ioctl either), and read accounting for the current operation.
type roBackend struct {
	r    io.ReaderAt
	size int64
	name string
	pos  int64
	// read and seen account the current operation (reset by guard).
	read int64
	seen map[int64]int
	// sniff checks what a squashfs image's reads return (sqbomb.go).
	sniff *sqSniffer
}

var _ backend.Storage = (*roBackend)(nil)

// errNoWrite: go-diskfs asked to write (or for the raw file).
var errNoWrite = errors.New("foreign images are opened read-only")

// minReadCost is what one read call costs of an operation's budget at
// least.
const minReadCost = 512

func (b *roBackend) reset() { b.read, b.seen = 0, nil }

func (b *roBackend) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("read %s at %d: %w", b.name, off, ErrCorrupt)
	}
	n := len(p)
	var eof error
	if off >= b.size {
		n, eof = 0, io.EOF
	} else if int64(n) > b.size-off {
		n, eof = int(b.size-off), io.EOF
	}
	// Every call costs at least minReadCost of the budget: go-diskfs read
	// 2-byte squashfs headers past the end of a crafted image forever
	// (each at a new offset, each nothing), which no byte count stopped.
	b.read += max(int64(n), minReadCost)
	if limit := min(opBudget, 64*b.size+16<<20); b.read > limit {
		panic(errBudget{fmt.Sprintf("one operation read over %d bytes (64 times the image and 16 MiB, at most 256 MiB)", limit)})
	}
	if b.seen == nil {
		b.seen = map[int64]int{}
	}
	if b.seen[off]++; b.seen[off] > offsetRevisits {
		panic(errBudget{fmt.Sprintf("one operation read offset %d over %d times (a loop?)", off, offsetRevisits)})
	}
	if n == 0 {
		return 0, eof
	}
	m, err := b.r.ReadAt(p[:n], off)
	if err == nil {
		err = eof
	}
	if b.sniff != nil {
		if serr := b.sniff.check(off, p[:m]); serr != nil {
			panic(errBudget{serr.Error()})
		}
	}
	return m, err
}

func (b *roBackend) Read(p []byte) (int, error) {
	n, err := b.ReadAt(p, b.pos)
	b.pos += int64(n)
	return n, err
}

func (b *roBackend) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		off += b.pos
	case io.SeekEnd:
		off += b.size
	default:
		return 0, fmt.Errorf("seek %s: bad whence %d", b.name, whence)
	}
	if off < 0 {
		return 0, fmt.Errorf("seek %s: negative offset", b.name)
	}
	b.pos = off
	return off, nil
}

func (b *roBackend) Stat() (fs.FileInfo, error)              { return sizeInfo{b.name, b.size}, nil }
func (b *roBackend) Close() error                            { return nil }
func (b *roBackend) Sys() (*os.File, error)                  { return nil, errNoWrite }
func (b *roBackend) Writable() (backend.WritableFile, error) { return nil, errNoWrite }
func (b *roBackend) Path() string                            { return "" }

// sizeInfo is the FileInfo go-diskfs gets from Stat: a regular file of
// the window's size.
type sizeInfo struct {
	name string
	size int64
}

func (s sizeInfo) Name() string       { return s.name }
func (s sizeInfo) Size() int64        { return s.size }
func (s sizeInfo) Mode() fs.FileMode  { return 0o444 }
func (s sizeInfo) ModTime() time.Time { return time.Time{} }
func (s sizeInfo) IsDir() bool        { return false }
func (s sizeInfo) Sys() any           { return nil }
