package e2e

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/ddfs/ddfs/format"
)

// Tests that signal or kill a tool wait for something the tool shows
// (it was exec'd, it wrote its image, it committed) rather than for a
// time: on a loaded machine a sleep can end before the tool got anywhere.

// proc is a started command and, once it ended, its Wait error.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func startProc(t *testing.T, cmd *exec.Cmd) *proc {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	return p
}

// wait waits for the process to end and returns its Wait error.
func (p *proc) wait() error {
	<-p.done
	return p.err
}

// until polls cond while the process runs: true once cond holds, false
// if the process ended first. A condition that never comes fails the
// test (the process is killed) rather than hang it.
func (p *proc) until(t *testing.T, what string, cond func() bool) bool {
	t.Helper()
	deadline := time.After(5 * time.Minute)
	for tick := time.NewTicker(time.Millisecond); ; {
		if cond() {
			tick.Stop()
			return true
		}
		select {
		case <-p.done:
			tick.Stop()
			return cond()
		case <-deadline:
			p.cmd.Process.Kill()
			<-p.done
			t.Fatalf("%s: still not so after 5 minutes", what)
		case <-tick.C:
		}
	}
}

// isExe reports whether the process runs the binary at path (sh has
// exec'd it).
func (p *proc) isExe(path string) func() bool {
	want, err := os.Stat(path)
	return func() bool {
		got, err2 := os.Stat("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/exe")
		return err == nil && err2 == nil && os.SameFile(got, want)
	}
}

// hasBlocks reports whether the file at path has blocks allocated: the
// tool writing it has started writing.
func hasBlocks(path string) func() bool {
	return func() bool {
		var st syscall.Stat_t
		return syscall.Stat(path, &st) == nil && st.Blocks > 0
	}
}

// modified is a condition: the file at path changed (its mtime) since
// the call.
func modified(t *testing.T, path string) func() bool {
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return func() bool {
		now, err := os.Stat(path)
		return err == nil && !now.ModTime().Equal(before.ModTime())
	}
}

// generation is the generation of the image's primary superblock, 0
// when it cannot be read whole (a read while the writer writes it).
func generation(t *testing.T, path string) uint64 {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, format.SuperblockSize)
	if _, err := f.ReadAt(b, int64(format.SuperblockOffsets[0])); err != nil {
		return 0
	}
	sb, err := format.UnmarshalSuperblock(b)
	if err != nil {
		return 0
	}
	return sb.Generation
}

// reaches is a condition: the image at path committed generation gen.
func reaches(t *testing.T, path string, gen uint64) func() bool {
	return func() bool { return generation(t, path) >= gen }
}
