package crashtest

import (
	"errors"
	"syscall"
)

// isPrecondition reports the errors a call returns without changing
// anything (see package fsys).
func isPrecondition(err error) bool {
	for _, e := range []syscall.Errno{syscall.ENOENT, syscall.EEXIST, syscall.ENOTEMPTY, syscall.EISDIR,
		syscall.ENOTDIR, syscall.EINVAL, syscall.ELOOP, syscall.ENODATA, syscall.EPERM} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
