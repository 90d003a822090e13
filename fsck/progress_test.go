package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ddfs/ddfs/pkg/cli"
)

// openPty returns the controlling and the terminal side of a new pty.
func openPty(t *testing.T) (ctl, tty *os.File) {
	t.Helper()
	ctl, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	t.Cleanup(func() { ctl.Close() })
	n, err := unix.IoctlGetInt(int(ctl.Fd()), unix.TIOCGPTN)
	if err == nil {
		err = unix.IoctlSetPointerInt(int(ctl.Fd()), unix.TIOCSPTLCK, 0)
	}
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	return ctl, tty
}

// TestProgressOnTerminal: on a terminal stderr, fsck --check-data draws
// its passes (nodes, then data with a rate) and clears the line; the
// report on stdout is the same.
func TestProgressOnTerminal(t *testing.T) {
	img := image(t, "nlink-high")
	ctl, tty := openPty(t)
	got := make(chan string)
	go func() {
		b, _ := io.ReadAll(ctl) // ends with EIO once tty is closed
		got <- string(b)
	}()
	var out bytes.Buffer
	code := runContext(context.Background(), []string{"--check-data", img}, &out, tty)
	tty.Close()
	s := <-got
	if code != 4 || !strings.Contains(out.String(), "NLINK") {
		t.Fatalf("exit %d, report %q", code, out.String())
	}
	if !strings.Contains(s, "\rnodes") || !strings.Contains(s, "\rdata") || !strings.Contains(s, "/s") {
		t.Fatalf("no progress on the terminal: %q", s)
	}
	if !strings.HasSuffix(s, strings.Repeat(" ", 72)+"\r") {
		t.Fatalf("progress line not cleared: %q", s)
	}
}

// TestProgressSilentOffTerminal: a file or /dev/null (a character
// device, not a terminal) gets no progress.
func TestProgressSilentOffTerminal(t *testing.T) {
	img := image(t, "nlink-high")
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	if code := runContext(context.Background(), []string{"--check-data", img}, &out, f); code != 4 {
		t.Fatalf("exit %d", code)
	}
	if b, _ := os.ReadFile(f.Name()); len(b) != 0 {
		t.Fatalf("stderr off a terminal: %q", b)
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if cli.IsTerminal(null) {
		t.Fatal("/dev/null taken for a terminal: progress would be drawn into it")
	}
}
