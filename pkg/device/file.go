package device

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
)

// fileDevice is an image file. Its size is fixed at open: a write past the
// end is refused rather than growing the image behind mkfs's back.
type fileDevice struct {
	f    *os.File
	name string
	size int64
	ro   bool
	lock *devLock
	// dirty counts bytes written since writeback was last started.
	dirty atomic.Int64
	marks // slot 0: readers beside a writer (readers.go)
}

var _ Device = (*fileDevice)(nil)

// writebackMin: after this many bytes written, writeback of the file starts.
const writebackMin = 4 << 20

// openFile opens and locks an existing image file.
func openFile(path string, opt OpenOptions) (*fileDevice, error) {
	flag := os.O_RDONLY
	if opt.Mode == ReadWrite {
		flag = os.O_RDWR
	}
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("open %s: not a regular file", path)
	}
	d := &fileDevice{f: f, name: path, size: fi.Size(), ro: opt.Mode != ReadWrite}
	return d, nil
}

// lockAll locks the whole file. A read-only open with beside that finds
// a writer goes on without a lock, beside it (readers.go).
func (d *fileDevice) lockAll(wait, beside bool) error {
	err := d.lockRegion(d.name, wait && !beside, 0, lockSpan)
	var busy *BusyError
	if err != nil && beside && d.ro && errors.As(err, &busy) {
		d.beside = true
		return nil
	}
	return err
}

// lockRegion locks [off, off+n); name is what a conflict message shows.
func (d *fileDevice) lockRegion(name string, wait bool, off, n int64) error {
	l, err := lockFile(d.f, name, !d.ro, wait, off, n)
	if err != nil {
		return err
	}
	d.lock = l
	return nil
}

func (d *fileDevice) ReadAt(p []byte, off int64) (int, error) {
	n, eof := clipRead(d.name, off, len(p), d.size)
	if n == 0 {
		return 0, eof
	}
	// Holes in a sparse image read back as zeros from the kernel.
	m, err := d.f.ReadAt(p[:n], off)
	if err != nil {
		return m, fmt.Errorf("read %s at %d: %w", d.name, off, err)
	}
	return m, eof
}

func (d *fileDevice) WriteAt(p []byte, off int64) (int, error) {
	if d.ro {
		return 0, fmt.Errorf("write %s: %w", d.name, ErrReadOnly)
	}
	if err := checkRange("write", d.name, off, int64(len(p)), d.size); err != nil {
		return 0, err
	}
	n, err := d.f.WriteAt(p, off)
	if err != nil {
		return n, fmt.Errorf("write %s at %d: %w", d.name, off, err)
	}
	// Start writeback once a few MiB are dirty, so the flush at commit
	// has little left and the disk works while we compute.
	if d.dirty.Add(int64(n)) >= writebackMin {
		d.dirty.Store(0)
		startWriteback(d.f, 0, 0)
	}
	return n, nil
}

func (d *fileDevice) Size() int64 { return d.size }

func (d *fileDevice) Flush() error {
	if err := fdatasync(d.f); err != nil {
		return fmt.Errorf("flush %s: %w", d.name, err)
	}
	return nil
}

func (d *fileDevice) Discard(off, length int64) error {
	if d.ro {
		return fmt.Errorf("discard %s: %w", d.name, ErrReadOnly)
	}
	if err := checkRange("discard", d.name, off, length, d.size); err != nil {
		return err
	}
	if length == 0 {
		return nil
	}
	if err := punchHole(d.f, off, length); err != nil {
		return fmt.Errorf("discard %s at %d+%d: %w", d.name, off, length, err)
	}
	return nil
}

// Close closes the file, which drops its locks.
func (d *fileDevice) Close() error {
	err := d.f.Close()
	d.lock.release()
	if err != nil {
		return fmt.Errorf("close %s: %w", d.name, err)
	}
	return nil
}

func (d *fileDevice) Name() string { return d.name }

// Props of an image file are unknown; mkfs picks the image defaults.
func (d *fileDevice) Props() Props { return Props{} }
