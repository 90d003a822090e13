package device

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Locking scheme. Every open takes a lock: exclusive for writers, shared
// for readers. The real exclusion is an open-file-description (OFD) lock,
// which conflicts between two opens even inside one process. OFD locks
// report pid -1 to F_GETLK, so each open also takes a classic POSIX lock of
// the same kind on a mirror region; a failed open asks F_GETLK there who
// the holder is. The mirror lock is only a hint: POSIX locks vanish when
// the process closes any descriptor of the file, so a missing PID just
// makes the message vaguer.
//
// The locked region is the byte range the device covers (the whole file,
// or a partition's window), so two partitions of one image can be opened
// for writing at once while the whole image conflicts with both.
const (
	lockSpan   = 1 << 61  // region of a whole device; images are smaller
	mirrorBase = lockSpan // PID mirror of region [off, off+n) starts here
)

// BusyError reports a lock conflict. It matches ErrBusy with errors.Is.
type BusyError struct {
	Path string
	PID  int    // holder's process ID; 0 when unknown
	Self bool   // held by another open in this process
	Why  string // set when the kernel refused (mounted, O_EXCL holder)
}

func (e *BusyError) Error() string {
	switch {
	case e.PID > 0:
		return fmt.Sprintf("%s is in use by process %d", e.Path, e.PID)
	case e.Self:
		return fmt.Sprintf("%s is in use by this process", e.Path)
	case e.Why != "":
		return fmt.Sprintf("%s is in use (%s)", e.Path, e.Why)
	default:
		return fmt.Sprintf("%s is in use by another process", e.Path)
	}
}

func (e *BusyError) Unwrap() error { return ErrBusy }

// fileID names the inode a lock lives on.
type fileID struct{ dev, ino uint64 }

// held counts this process's locks per inode, so a conflict F_GETLK cannot
// attribute (our own POSIX locks never conflict with us) can still be
// reported as "this process".
var held = struct {
	sync.Mutex
	n map[fileID]int
}{n: map[fileID]int{}}

// devLock is one acquired lock; the kernel drops it when the descriptor
// closes, release only forgets it here.
type devLock struct {
	id       fileID
	released bool
}

func idOf(f *os.File) (fileID, error) {
	var st unix.Stat_t
	err := withFd(f, func(fd int) error { return unix.Fstat(fd, &st) })
	if err != nil {
		return fileID{}, err
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, nil
}

// lockFile locks [off, off+n) of f for name: exclusively when write, else
// shared. Without wait a conflict fails at once with a *BusyError.
func lockFile(f *os.File, name string, write, wait bool, off, n int64) (*devLock, error) {
	id, err := idOf(f)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	typ := int16(unix.F_RDLCK)
	if write {
		typ = unix.F_WRLCK
	}
	if err := regionLock(f, typ, off, n, wait); err != nil {
		if isLockConflict(err) {
			return nil, busyError(f, name, id, typ, off, n)
		}
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	// Best effort: a failure here only costs the PID in other's messages.
	_ = withFd(f, func(fd int) error {
		lk := unix.Flock_t{Type: typ, Start: mirrorBase + off, Len: n}
		return unix.FcntlFlock(uintptr(fd), unix.F_SETLK, &lk)
	})
	held.Lock()
	held.n[id]++
	held.Unlock()
	return &devLock{id: id}, nil
}

func isLockConflict(err error) bool {
	return errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.EWOULDBLOCK)
}

// busyError finds out who holds a conflicting lock on [off, off+n).
func busyError(f *os.File, name string, id fileID, typ int16, off, n int64) error {
	e := &BusyError{Path: name}
	lk := unix.Flock_t{Type: typ, Start: mirrorBase + off, Len: n}
	err := withFd(f, func(fd int) error { return unix.FcntlFlock(uintptr(fd), unix.F_GETLK, &lk) })
	if err == nil && lk.Type != unix.F_UNLCK && lk.Pid > 0 && int(lk.Pid) != os.Getpid() {
		e.PID = int(lk.Pid)
		return e
	}
	held.Lock()
	e.Self = held.n[id] > 0
	held.Unlock()
	return e
}

// heldHere reports whether this process holds a lock on the inode.
func heldHere(id fileID) bool {
	held.Lock()
	defer held.Unlock()
	return held.n[id] > 0
}

// release forgets the lock; call it after closing the descriptor.
func (l *devLock) release() {
	if l == nil {
		return
	}
	held.Lock()
	defer held.Unlock()
	if l.released {
		return
	}
	l.released = true
	if held.n[l.id]--; held.n[l.id] <= 0 {
		delete(held.n, l.id)
	}
}
