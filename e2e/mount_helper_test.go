package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// needFUSE skips a test only where the kernel has no FUSE (/dev/fuse
// absent); with /dev/fuse but without fusermount3 it fails: .ci/run
// installs fuse3, so CI never skips these silently.
func needFUSE(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("needs /dev/fuse (FUSE in the kernel) to mount: %v", err)
	}
	if _, err := exec.LookPath("fusermount3"); err != nil {
		t.Fatalf("/dev/fuse exists but fusermount3 does not: install the fuse3 package (.ci/run does): %v", err)
	}
}

// mounted is a `ddfs mount --foreground` process serving dir.
type mounted struct {
	t      *testing.T
	dir    string
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan struct{}
	gone   bool
	dev    string // the mount's device, "0:N" (mountinfo): FUSE connection N
}

// mountImage mounts image (in wd) on a new directory and waits until the
// kernel shows the mount. It is unmounted at the end of the test.
func mountImage(t *testing.T, wd, image string, args ...string) *mounted {
	t.Helper()
	needFUSE(t)
	dir, err := os.MkdirTemp(wd, "mnt")
	if err != nil {
		t.Fatal(err)
	}
	m := &mounted{t: t, dir: dir, stderr: &bytes.Buffer{}, done: make(chan struct{})}
	m.cmd = exec.Command(filepath.Join(binDir, "ddfs"), append(append([]string{"mount", "--foreground"}, args...), image, dir)...)
	m.cmd.Dir = wd
	m.cmd.Stderr = m.stderr
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { m.cmd.Wait(); close(m.done) }()
	for deadline := time.Now().Add(20 * time.Second); ; {
		if m.dev = mountDev(dir); m.dev != "" {
			break
		}
		select {
		case <-m.done:
			t.Fatalf("ddfs mount exited: %v\n%s", m.cmd.ProcessState, m.stderr)
		default:
		}
		if time.Now().After(deadline) {
			m.kill()
			t.Fatalf("not mounted after 20 s\n%s", m.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() {
		if !m.gone {
			m.kill()
		}
	})
	return m
}

// isMountPoint reports whether dir is a mount point (in mountinfo).
func isMountPoint(dir string) bool { return mountDev(dir) != "" }

// mountDev is the device ("major:minor") mounted on dir, "" if none.
func mountDev(dir string) string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[4] == dir {
			return f[2]
		}
	}
	return ""
}

func (m *mounted) path(p string) string { return filepath.Join(m.dir, p) }

// unmount runs fusermount3 -u and waits for the server to commit and
// exit; it must exit 0.
func (m *mounted) unmount() {
	m.t.Helper()
	// Busy for a moment after a mount: another process (with allow_other,
	// anyone's) may still be looking at it.
	for i := 0; ; i++ {
		out, err := exec.Command("fusermount3", "-u", m.dir).CombinedOutput()
		if err == nil {
			break
		}
		if !strings.Contains(string(out), "busy") || i == 50 {
			m.t.Fatalf("fusermount3 -u: %v: %s", err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	m.wait(0)
}

// wait waits for the server to exit with code.
func (m *mounted) wait(code int) {
	m.t.Helper()
	select {
	case <-m.done:
	case <-time.After(60 * time.Second):
		m.kill()
		m.t.Fatalf("ddfs mount still running 60 s after unmount\n%s", m.stderr)
	}
	m.gone = true
	if got := m.cmd.ProcessState.ExitCode(); got != code {
		exec.Command("fusermount3", "-u", "-z", m.dir).Run() // a dead server's mount
		m.t.Fatalf("ddfs mount exit %d, want %d\n%s", got, code, m.stderr)
	}
}

// kill9 kills the server (no commit) and cleans the dead mount up.
// Killed while one of its threads held a request of its own (the stat
// of its mount point as it starts, the flush of a file it had open
// there as it exits), the server would never exit: the kernel waits
// for that answer. A forced unmount (root) aborts the connection,
// failing it (SIGKILL already stopped the server's code); with the
// mount already gone, fusectl does.
func (m *mounted) kill() {
	m.cmd.Process.Signal(syscall.SIGKILL)
	unix.Unmount(m.dir, unix.MNT_FORCE|unix.MNT_DETACH)
	select {
	case <-m.done:
	case <-time.After(10 * time.Second):
		abortFUSE(m.dev)
		<-m.done
	}
	m.gone = true
	exec.Command("fusermount3", "-u", "-z", m.dir).Run()
}

// abortFUSE aborts the FUSE connection of device dev ("0:N") through
// fusectl, mounted for it where it is not (root only).
func abortFUSE(dev string) {
	_, n, _ := strings.Cut(dev, ":")
	const ctl = "/sys/fs/fuse/connections"
	if _, err := os.Stat(filepath.Join(ctl, n)); err != nil && unix.Mount("fusectl", ctl, "fusectl", 0, "") == nil {
		defer unix.Unmount(ctl, 0)
	}
	os.WriteFile(filepath.Join(ctl, n, "abort"), []byte("1"), 0)
}

// fsckClean runs fsck.ddfs on image and fails unless it is clean.
func fsckClean(t *testing.T, wd, image string) {
	t.Helper()
	r := run(t, wd, "fsck.ddfs", "--check-data", image)
	if r.code != 0 || !strings.Contains(r.stdout, "clean") {
		t.Fatalf("fsck %s: exit %d\n%s%s", image, r.code, r.stdout, r.stderr)
	}
}
