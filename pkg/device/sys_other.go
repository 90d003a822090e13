//go:build !linux

package device

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

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

func fdatasync(f *os.File) error { return f.Sync() }

func punchHole(f *os.File, off, n int64) error {
	return fmt.Errorf("%w: hole punching on this OS", ErrNotSupported)
}

// regionLock falls back to flock, which (on BSDs and macOS) conflicts
// between separate opens in one process too; it locks the whole file, so
// two partitions of one image exclude each other here.
func regionLock(f *os.File, typ int16, off, n int64, wait bool) error {
	how := unix.LOCK_SH
	if typ == unix.F_WRLCK {
		how = unix.LOCK_EX
	}
	if !wait {
		how |= unix.LOCK_NB
	}
	return withFd(f, func(fd int) error {
		err := unix.Flock(fd, how)
		if err == unix.EWOULDBLOCK {
			return unix.EAGAIN
		}
		return err
	})
}

func startWriteback(f *os.File, off, n int64) {}

func mappedBytes(f *os.File, off, n int64) (int64, error) {
	return 0, fmt.Errorf("%w: SEEK_DATA on this OS", ErrNotSupported)
}

func markByte(f *os.File, at, mirror int64) error   { return ErrNoReaderMarks }
func unmarkByte(f *os.File, at, mirror int64) error { return ErrNoReaderMarks }
func firstLock(f *os.File, off, n int64) (int64, bool, error) {
	return 0, false, nil
}
func lockPID(f *os.File, at int64) int { return 0 }
