//go:build linux

package device

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// withFd runs fn on the raw descriptor without f.Fd(), which would switch
// the file to blocking mode and pin it against a concurrent Close.
func withFd(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

func fdatasync(f *os.File) error {
	return withFd(f, func(fd int) error {
		return ignoringEINTR(func() error { return unix.Fdatasync(fd) })
	})
}

// punchHole deallocates [off, off+n) keeping the file size, so reads return
// zeros and the image shrinks on disk.
func punchHole(f *os.File, off, n int64) error {
	err := withFd(f, func(fd int) error {
		return ignoringEINTR(func() error {
			return unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
		})
	})
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return fmt.Errorf("%w: hole punching: %w", ErrNotSupported, err)
	}
	return err
}

// regionLock takes the open-file-description lock that excludes other
// opens, also inside this process (classic POSIX locks would not).
func regionLock(f *os.File, typ int16, off, n int64, wait bool) error {
	cmd := unix.F_OFD_SETLK
	if wait {
		cmd = unix.F_OFD_SETLKW
	}
	return withFd(f, func(fd int) error {
		lk := unix.Flock_t{Type: typ, Whence: 0, Start: off, Len: n}
		return ignoringEINTR(func() error { return unix.FcntlFlock(uintptr(fd), cmd, &lk) })
	})
}

func ignoringEINTR(fn func() error) error {
	for {
		err := fn()
		if err != unix.EINTR {
			return err
		}
	}
}

// startWriteback asks the kernel to begin writing a range now, so a
// later flush has little left to do and the disk works while we compute.
func startWriteback(f *os.File, off, n int64) {
	_ = withFd(f, func(fd int) error {
		return unix.SyncFileRange(fd, off, n, unix.SYNC_FILE_RANGE_WRITE)
	})
}

// mappedBytes counts the data (not holes) in [off, off+n) by SEEK_DATA and
// SEEK_HOLE; these move the file offset, which pread and pwrite ignore.
func mappedBytes(f *os.File, off, n int64) (int64, error) {
	var total int64
	err := withFd(f, func(fd int) error {
		for pos, end := off, off+n; pos < end; {
			data, err := unix.Seek(fd, pos, unix.SEEK_DATA)
			if errors.Is(err, unix.ENXIO) || (err == nil && data >= end) {
				return nil // only holes up to end
			}
			if errors.Is(err, unix.EINVAL) {
				return fmt.Errorf("%w: SEEK_DATA: %w", ErrNotSupported, err)
			}
			if err != nil {
				return err
			}
			hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
			if err != nil {
				return err
			}
			total += min(hole, end) - data
			pos = hole
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("map %s at %d+%d: %w", f.Name(), off, n, err)
	}
	return total, nil
}

// markByte takes a shared OFD lock on byte at (the mark) and a classic
// POSIX one on byte mirror (the PID hint); unmarkByte drops both.
func markByte(f *os.File, at, mirror int64) error { return setMark(f, unix.F_RDLCK, at, mirror) }

func unmarkByte(f *os.File, at, mirror int64) error { return setMark(f, unix.F_UNLCK, at, mirror) }

func setMark(f *os.File, typ int16, at, mirror int64) error {
	if err := regionLock(f, typ, at, 1, false); err != nil {
		return err
	}
	_ = withFd(f, func(fd int) error { // best effort: only the PID in messages
		lk := unix.Flock_t{Type: typ, Start: mirror, Len: 1}
		return unix.FcntlFlock(uintptr(fd), unix.F_SETLK, &lk)
	})
	return nil
}

// firstLock asks whether another open description holds a lock in
// [off, off+n); it returns where one starts.
func firstLock(f *os.File, off, n int64) (int64, bool, error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Start: off, Len: n}
	err := withFd(f, func(fd int) error {
		return ignoringEINTR(func() error { return unix.FcntlFlock(uintptr(fd), unix.F_OFD_GETLK, &lk) })
	})
	if err != nil || lk.Type == unix.F_UNLCK {
		return 0, false, err
	}
	return lk.Start, true, nil
}

// lockPID is the process holding a classic lock on byte at (0: unknown).
func lockPID(f *os.File, at int64) int {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Start: at, Len: 1}
	if withFd(f, func(fd int) error { return unix.FcntlFlock(uintptr(fd), unix.F_GETLK, &lk) }) != nil || lk.Type == unix.F_UNLCK || lk.Pid <= 0 {
		return 0
	}
	return int(lk.Pid)
}
