//go:build linux

package device

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// blockDevice is a Linux block device. It reuses the file backend for I/O
// and adds the block-only bits: ioctl size, BLKDISCARD and sysfs props.
type blockDevice struct {
	fileDevice
	sysDir      string // /sys/dev/block/MAJ:MIN
	granularity int64  // discard granularity in bytes
	maxDiscard  int64  // 0: discard unsupported
	props       Props
}

var _ Prober = (*blockDevice)(nil)

func openBlock(path string, opt OpenOptions) (Device, error) {
	flag := os.O_RDONLY
	if opt.Mode == ReadWrite {
		// O_EXCL on a block device: the kernel refuses if it is mounted or
		// another writer holds it exclusively.
		flag = os.O_RDWR | os.O_EXCL
	}
	f, err := os.OpenFile(path, flag, 0)
	// The kernel's O_EXCL cannot be waited on; poll for it.
	for opt.Wait && errors.Is(err, unix.EBUSY) {
		time.Sleep(100 * time.Millisecond)
		f, err = os.OpenFile(path, flag, 0)
	}
	if errors.Is(err, unix.EBUSY) {
		return nil, blockBusy(path)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	d := &blockDevice{fileDevice: fileDevice{f: f, name: path, ro: opt.Mode != ReadWrite}}
	if err := d.init(); err != nil {
		f.Close()
		return nil, err
	}
	if err := d.lockAll(opt.Wait, opt.Beside); err != nil {
		f.Close()
		return nil, err
	}
	return d, nil
}

func (d *blockDevice) init() error {
	var size uint64
	var st unix.Stat_t
	err := withFd(d.f, func(fd int) error {
		var err error
		if size, err = unix.IoctlGetUint64(fd, unix.BLKGETSIZE64); err != nil {
			return fmt.Errorf("BLKGETSIZE64: %w", err)
		}
		return unix.Fstat(fd, &st)
	})
	if err != nil {
		return fmt.Errorf("open %s: %w", d.name, err)
	}
	d.size = int64(size)
	rdev := uint64(st.Rdev)
	d.sysDir = fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(rdev), unix.Minor(rdev))
	// sysfs may be missing (containers); then discard and props stay unknown.
	d.granularity, _ = d.queueAttr("discard_granularity")
	d.maxDiscard, _ = d.queueAttr("discard_max_bytes")
	if rot, err := d.queueAttr("rotational"); err == nil {
		d.props.Rotational = rot == 1
	}
	return nil
}

// queueAttr reads a number from the device's queue directory in sysfs. A
// partition has no queue of its own; it lives on the parent disk.
func (d *blockDevice) queueAttr(name string) (int64, error) {
	dir := filepath.Join(d.sysDir, "queue")
	if _, err := os.Stat(dir); err != nil {
		real, err := filepath.EvalSymlinks(d.sysDir)
		if err != nil {
			return 0, fmt.Errorf("sysfs for %s: %w", d.name, err)
		}
		dir = filepath.Join(filepath.Dir(real), "queue")
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return 0, fmt.Errorf("sysfs for %s: %w", d.name, err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("sysfs %s/%s: %w", dir, name, err)
	}
	return v, nil
}

// Props reports rotational from sysfs; speeds are left to mkfs defaults.
func (d *blockDevice) Props() Props { return d.props }

// Flush is fsync: on a block device it also flushes the disk cache.
func (d *blockDevice) Flush() error {
	if err := d.f.Sync(); err != nil {
		return fmt.Errorf("flush %s: %w", d.name, err)
	}
	return nil
}

// Discard issues BLKDISCARD for the granularity-aligned part of the range,
// in chunks the device accepts. Partial granules are left alone: discard
// is advisory.
func (d *blockDevice) Discard(off, length int64) error {
	if d.ro {
		return fmt.Errorf("discard %s: %w", d.name, ErrReadOnly)
	}
	if err := checkRange("discard", d.name, off, length, d.size); err != nil {
		return err
	}
	if d.maxDiscard <= 0 {
		return fmt.Errorf("discard %s: %w", d.name, ErrNotSupported)
	}
	for _, c := range discardChunks(off, length, d.granularity, d.maxDiscard) {
		r := [2]uint64{uint64(c[0]), uint64(c[1])}
		err := withFd(d.f, func(fd int) error {
			_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.BLKDISCARD, uintptr(unsafe.Pointer(&r)))
			if errno != 0 {
				return errno
			}
			return nil
		})
		if errors.Is(err, unix.EOPNOTSUPP) {
			return fmt.Errorf("discard %s: %w: %w", d.name, ErrNotSupported, err)
		}
		if err != nil {
			return fmt.Errorf("discard %s at %d+%d: %w", d.name, c[0], c[1], err)
		}
	}
	return nil
}

// blockBusy explains an EBUSY from an O_EXCL open, naming a ddfs holder
// when one has the lock.
func blockBusy(path string) error {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err == nil {
		id := fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}
		if heldHere(id) {
			// Do not open and close it: that would drop our POSIX locks.
			return &BusyError{Path: path, Self: true}
		}
		if f, err := os.Open(path); err == nil {
			defer f.Close()
			if e, ok := busyError(f, path, id, unix.F_WRLCK, 0, lockSpan).(*BusyError); ok && e.PID > 0 {
				return e
			}
		}
	}
	return &BusyError{Path: path, Why: "mounted or opened exclusively"}
}
