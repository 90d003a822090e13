package device

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/diskfs/go-diskfs/partition"
	"github.com/diskfs/go-diskfs/partition/gpt"
	"github.com/diskfs/go-diskfs/partition/mbr"
	"github.com/diskfs/go-diskfs/partition/part"
)

// partDevice is a window [off, off+size) onto an image file. go-diskfs only
// reads the partition table; all I/O goes through the file backend.
type partDevice struct {
	dev   *fileDevice
	name  string
	off   int64
	size  int64
	marks // slot num: readers beside the window's writer (readers.go)
}

var _ Device = (*partDevice)(nil)

func openPartition(spec, path string, num int, opt OpenOptions) (Device, error) {
	d, err := openFile(path, opt)
	if err != nil {
		return nil, err
	}
	off, size, err := findPartition(d, num)
	if err != nil {
		d.f.Close()
		return nil, err
	}
	p := &partDevice{dev: d, name: spec, off: off, size: size, marks: marks{slot: int64(num)}}
	// Lock only the window so two partitions of one image can both be
	// written, while the whole image still conflicts with each of them.
	// A read-only open beside finding a writer goes on without a lock.
	beside := opt.Beside && d.ro && num < readerSlots
	err = d.lockRegion(spec, opt.Wait && !beside, off, size)
	var busy *BusyError
	if err != nil && beside && errors.As(err, &busy) {
		p.beside, err = true, nil
	}
	if err != nil {
		d.f.Close()
		return nil, err
	}
	return p, nil
}

// findPartition returns the byte window of 1-based partition num.
func findPartition(d *fileDevice, num int) (off, size int64, err error) {
	r := tableReader{SectionReader: io.NewSectionReader(d, 0, d.size), d: d}
	tbl, err := partition.Read(r, 512, 512)
	if err == nil && isProtectiveMBR(tbl) {
		// A GPT on 4 KiB sectors looks like a bare protective MBR at 512.
		if t, gerr := gpt.Read(r, 4096, 4096); gerr == nil {
			tbl = t
		}
	}
	if err != nil {
		return 0, 0, fmt.Errorf("%s: read partition table: %w", d.name, err)
	}
	var parts []part.Partition
	for _, p := range tbl.GetPartitions() {
		if p.GetSize() > 0 { // MBR lists empty slots too
			parts = append(parts, p)
		}
	}
	for _, p := range parts {
		if p.GetIndex() != num {
			continue
		}
		off, size = p.GetStart(), p.GetSize()
		if off < 0 || size <= 0 || off > d.size || size > d.size-off {
			return 0, 0, fmt.Errorf("%s: partition %d (%d+%d) extends past the image end %d", d.name, num, off, size, d.size)
		}
		return off, size, nil
	}
	return 0, 0, fmt.Errorf("%s: no partition %d (table has %d)", d.name, num, len(parts))
}

func isProtectiveMBR(t partition.Table) bool {
	m, ok := t.(*mbr.Table)
	if !ok {
		return false
	}
	for _, p := range m.Partitions {
		if p.Type == mbr.GPTProtective {
			return true
		}
	}
	return false
}

// tableReader adapts the file backend to go-diskfs's backend.File, which
// wants Stat and Close besides ReadAt and Seek.
type tableReader struct {
	*io.SectionReader
	d *fileDevice
}

func (t tableReader) Stat() (fs.FileInfo, error) { return t.d.f.Stat() }
func (t tableReader) Close() error               { return nil }

func (p *partDevice) ReadAt(b []byte, off int64) (int, error) {
	n, eof := clipRead(p.name, off, len(b), p.size)
	if n == 0 {
		return 0, eof
	}
	m, err := p.dev.ReadAt(b[:n], p.off+off)
	if err != nil {
		return m, err
	}
	return m, eof
}

func (p *partDevice) WriteAt(b []byte, off int64) (int, error) {
	if p.dev.ro {
		return 0, fmt.Errorf("write %s: %w", p.name, ErrReadOnly)
	}
	if err := checkRange("write", p.name, off, int64(len(b)), p.size); err != nil {
		return 0, err
	}
	return p.dev.WriteAt(b, p.off+off)
}

func (p *partDevice) Discard(off, length int64) error {
	if p.dev.ro {
		return fmt.Errorf("discard %s: %w", p.name, ErrReadOnly)
	}
	if err := checkRange("discard", p.name, off, length, p.size); err != nil {
		return err
	}
	return p.dev.Discard(p.off+off, length)
}

func (p *partDevice) Size() int64  { return p.size }
func (p *partDevice) Flush() error { return p.dev.Flush() }
func (p *partDevice) Close() error { return p.dev.Close() }
func (p *partDevice) Name() string { return p.name }
func (p *partDevice) Props() Props { return Props{} }
