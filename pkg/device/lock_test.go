package device

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func newImage(t *testing.T, size int64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "disk.img")
	d, err := Open(path, OpenOptions{Mode: ReadWrite, Create: true, CreateSize: size})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLockSameProcess(t *testing.T) {
	tests := []struct {
		name        string
		first, then Mode
		wantBusy    bool
	}{
		{"writer then writer", ReadWrite, ReadWrite, true},
		{"writer then reader", ReadWrite, ReadOnly, true},
		{"reader then writer", ReadOnly, ReadWrite, true},
		{"reader then reader", ReadOnly, ReadOnly, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := newImage(t, 1<<20)
			a, err := Open(path, OpenOptions{Mode: tc.first})
			if err != nil {
				t.Fatal(err)
			}
			b, err := Open(path, OpenOptions{Mode: tc.then})
			if !tc.wantBusy {
				if err != nil {
					t.Fatalf("second open: %v", err)
				}
				b.Close()
				a.Close()
				return
			}
			if err == nil {
				b.Close()
				t.Fatal("second open succeeded, want ErrBusy")
			}
			if !errors.Is(err, ErrBusy) {
				t.Fatalf("err = %v, want ErrBusy", err)
			}
			if want := path + " is in use by this process"; err.Error() != want {
				t.Fatalf("err = %q, want %q", err, want)
			}
			// Closing releases the lock for the next writer.
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			c, err := Open(path, OpenOptions{Mode: ReadWrite})
			if err != nil {
				t.Fatalf("open after close: %v", err)
			}
			c.Close()
		})
	}
}

func TestLockWait(t *testing.T) {
	path := newImage(t, 1<<20)
	a, err := Open(path, OpenOptions{Mode: ReadWrite})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		b, err := Open(path, OpenOptions{Mode: ReadWrite, Wait: true})
		if err == nil {
			b.Close()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("waiting open returned early: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	a.Close()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("waiting open: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waiting open did not get the lock after Close")
	}
}

const lockHelperEnv = "DDFS_DEVICE_LOCK_HELPER"

// TestLockHelperProcess is not a test: the cross-process test runs the test
// binary again with it to hold a write lock in another process.
func TestLockHelperProcess(t *testing.T) {
	path := os.Getenv(lockHelperEnv)
	if path == "" {
		t.Skip("helper process only")
	}
	d, err := Open(path, OpenOptions{Mode: ReadWrite})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	// Hold the lock until the parent closes our stdin.
	bufio.NewReader(os.Stdin).ReadString('\n')
	d.Close()
	os.Exit(0)
}

func TestLockOtherProcess(t *testing.T) {
	path := newImage(t, 1<<20)
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHelperProcess$")
	cmd.Env = append(os.Environ(), lockHelperEnv+"="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "locked" {
		t.Fatalf("helper said %q, %v", line, err)
	}

	for _, mode := range []Mode{ReadWrite, ReadOnly} {
		d, err := Open(path, OpenOptions{Mode: mode})
		if err == nil {
			d.Close()
			t.Fatalf("%v open succeeded while another process writes", mode)
		}
		want := fmt.Sprintf("%s is in use by process %d", path, cmd.Process.Pid)
		if !errors.Is(err, ErrBusy) || err.Error() != want {
			t.Fatalf("%v open: err = %q, want %q wrapping ErrBusy", mode, err, want)
		}
		var be *BusyError
		if !errors.As(err, &be) || be.PID != cmd.Process.Pid {
			t.Fatalf("BusyError = %+v, want PID %d", be, cmd.Process.Pid)
		}
	}

	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	d, err := Open(path, OpenOptions{Mode: ReadWrite})
	if err != nil {
		t.Fatalf("open after helper exit: %v", err)
	}
	d.Close()
}

func TestBusyErrorMessage(t *testing.T) {
	tests := []struct {
		e    BusyError
		want string
	}{
		{BusyError{Path: "a.img", PID: 42}, "a.img is in use by process 42"},
		{BusyError{Path: "a.img", Self: true}, "a.img is in use by this process"},
		{BusyError{Path: "a.img"}, "a.img is in use by another process"},
		{BusyError{Path: "/dev/sdb", Why: "mounted or opened exclusively"}, "/dev/sdb is in use (mounted or opened exclusively)"},
	}
	for _, tc := range tests {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
		if !errors.Is(&tc.e, ErrBusy) {
			t.Errorf("%q does not match ErrBusy", tc.want)
		}
	}
}
