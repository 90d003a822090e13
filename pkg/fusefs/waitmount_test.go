package fusefs

import (
	"errors"
	"syscall"
	"testing"
	"time"
)

// TestWaitMountRetriesENOENT: the poll hack's open failing with ENOENT is
// retried until it works; any other error, or ENOENT past the limit, is
// returned as it came.
func TestWaitMountRetriesENOENT(t *testing.T) {
	calls := 0
	flaky := func() error {
		calls++
		if calls < 3 {
			return syscall.ENOENT
		}
		return nil
	}
	if err := waitMount(flaky, 10*time.Second); err != nil || calls != 3 {
		t.Fatalf("ENOENT twice then ok: err %v after %d calls, want nil after 3", err, calls)
	}

	calls = 0
	denied := func() error { calls++; return syscall.EACCES }
	if err := waitMount(denied, 10*time.Second); !errors.Is(err, syscall.EACCES) || calls != 1 {
		t.Fatalf("EACCES: err %v after %d calls, want EACCES after 1", err, calls)
	}

	calls = 0
	never := func() error { calls++; return syscall.ENOENT }
	if err := waitMount(never, 50*time.Millisecond); !errors.Is(err, syscall.ENOENT) || calls < 2 {
		t.Fatalf("ENOENT always: err %v after %d calls, want ENOENT after retries", err, calls)
	}
}
