package e2e

import (
	"context"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// onTerminal runs a shell command line with a pty for its stdin, stdout
// and stderr (script(1)) and returns what the terminal got.
func onTerminal(t *testing.T, dir, line string) string {
	t.Helper()
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("no script(1) for a pty")
	}
	// A bound, not a timing: a line that hangs fails the test with what
	// it printed instead of holding CI to go test's hour.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, "-qec", line, "/dev/null")
	cmd.WaitDelay = 10 * time.Second // the pty's other holders (a stalled job) do not keep Wait waiting
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+binDir+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s on a terminal: %v\n%s", line, err, out)
	}
	return string(out)
}

// TestCopyProgress: on a terminal cp draws done of total, a percentage, a
// rate and the time left, and ends its line; piped or with -q it says
// nothing.
func TestCopyProgress(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "src"), 0o755)
	for _, n := range []string{"a", "b", "c"} {
		b := make([]byte, 6<<20)
		rand.Read(b)
		os.WriteFile(filepath.Join(dir, "src", n), b, 0o644)
	}
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "d.img"), 0)
	out := onTerminal(t, dir, "ddfs cp -r src d.img:/")
	body := strings.TrimSuffix(out, "\r\n") // the tty turns the final \n into \r\n
	last := body[strings.LastIndex(body, "\r")+1:]
	if !strings.Contains(last, "18M of 18M 100%") || !strings.Contains(last, "/s  ETA 0:00 copied") || !strings.HasSuffix(out, "\n") {
		t.Errorf("cp on a terminal drew %q", out)
	}
	if q := onTerminal(t, dir, "ddfs cp -q -r src d.img:/q"); q != "" {
		t.Errorf("cp -q on a terminal: %q", q)
	}
	if r := must(t, run(t, dir, "ddfs", "cp", "-r", "src", "d.img:/piped"), 0); r.stderr != "" {
		t.Errorf("cp piped: stderr %q", r.stderr)
	}
}

// TestCopyProgressInterrupted: Ctrl-C during a copy on a terminal ends the
// bar's line and the copy still dies of SIGINT (exit 130 from the shell).
func TestCopyProgressInterrupted(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "512M", "d.img"), 0)
	// A stream that stalls after 10 MiB keeps the copy running; the
	// signal comes once cp has read the 10 MiB (its rchar), so its bar is
	// drawn whatever the load (a sleep 1 raced: no bar yet under load).
	// SIGINT goes to the whole job, as Ctrl-C sends it to the foreground
	// group (cp alone would wait for its stalled stdin). A cp that ended
	// before (it failed) ends the wait too: the test then fails on its
	// exit and output instead of waiting for ever.
	out := onTerminal(t, dir, `set -m; (head -c 10M /dev/urandom; sleep 600) | ddfs cp - d.img:/big & p=$!; `+
		`until ! kill -0 $p 2>/dev/null || [ "$(awk '/^rchar/{print $2}' /proc/$p/io 2>/dev/null)" -ge 10485760 ] 2>/dev/null; do sleep 0.05; done; `+
		`kill -INT %1; wait $p; echo "exit=$?"`)
	if !strings.Contains(out, "exit=130") {
		t.Fatalf("cp was not killed by SIGINT: %q", out)
	}
	// The bar's last drawing is followed by the end of its line, before
	// the shell's own report of the job; bash prints that "[1]+ Interrupt"
	// line only when the job ends before wait reaps it, so either may follow.
	if !regexp.MustCompile(`M copied  [^\r\n]*\r\n(\[1\]|exit=130)`).MatchString(out) {
		t.Errorf("the bar's line was not ended before the shell went on: %q", out)
	}
	must(t, run(t, dir, "fsck.ddfs", "d.img"), 0)
}

// TestTarProgress: tar-in from an archive file shows done of its size
// with an ETA, tar-out the bytes written (stdout redirected, stderr the
// terminal); -q says nothing.
func TestTarProgress(t *testing.T) {
	dir := t.TempDir()
	b := make([]byte, 8<<20)
	rand.Read(b)
	os.WriteFile(filepath.Join(dir, "f"), b, 0o644)
	if out, err := exec.Command("tar", "-cf", filepath.Join(dir, "a.tar"), "-C", dir, "f").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v %s", err, out)
	}
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "d.img"), 0)
	in := onTerminal(t, dir, "ddfs tar-in d.img:/x < a.tar")
	if !regexp.MustCompile(`(8\.\dM) of (8\.\dM) 100%  [^ ]+/s  ETA 0:00 read *\r\n$`).MatchString(in) {
		t.Errorf("tar-in on a terminal drew %q", in)
	}
	out := onTerminal(t, dir, "ddfs tar-out d.img:/x > /dev/null")
	if !regexp.MustCompile(`8\.\dM written  [^ ]+/s  0:0\d *\r\n$`).MatchString(out) {
		t.Errorf("tar-out on a terminal drew %q", out)
	}
	if q := onTerminal(t, dir, "ddfs tar-out -q d.img:/x > /dev/null; ddfs tar-in -q d.img:/y < a.tar"); q != "" {
		t.Errorf("-q on a terminal: %q", q)
	}
}

// TestBuildProgress: mkfs.ddfs -r and dedupe-tool estimate of a host tree
// draw done of total with an ETA on a terminal and end the bar's line
// before their report.
func TestBuildProgress(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "src"), 0o755)
	for _, n := range []string{"a", "b"} {
		b := make([]byte, 4<<20)
		rand.Read(b)
		os.WriteFile(filepath.Join(dir, "src", n), b, 0o644)
	}
	line := regexp.MustCompile(`8\.0M of 8\.0M 100%  [^ ]+/s  ETA 0:00 (copied|read) *\r\n[A-Za-z]`)
	if out := onTerminal(t, dir, "mkfs.ddfs -b 256M -r src m.img"); !line.MatchString(out) {
		t.Errorf("mkfs -r on a terminal: %q", out)
	}
	if out := onTerminal(t, dir, "dedupe-tool estimate src"); !line.MatchString(out) {
		t.Errorf("estimate on a terminal: %q", out)
	}
	// trimtool: done of the free bytes it will discard, then -v's report.
	if out := onTerminal(t, dir, "trimtool -v m.img"); !regexp.MustCompile(`M of \d+M 100%  [^ ]+/s  ETA 0:00 trimmed *\r\nm\.img \(devid 1\): trimmed`).MatchString(out) {
		t.Errorf("trimtool on a terminal: %q", out)
	}
	if out := onTerminal(t, dir, "trimtool -q m.img; trimtool -n -v m.img"); strings.Contains(out, "%") {
		t.Errorf("trimtool drew a bar with -q or on a dry run: %q", out)
	}
}

// TestScrubProgressBar: on a terminal scrub draws bytes read of the bytes
// it expects to read, with a percentage and the time left.
func TestScrubProgressBar(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "src"), 0o755)
	b := make([]byte, 6<<20)
	rand.Read(b)
	os.WriteFile(filepath.Join(dir, "src", "a"), b, 0o644)
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "-m", "raid1", "-d", "raid1", "-r", "src", "a.img", "b.img"), 0)
	out := onTerminal(t, dir, "ddfs scrub a.img >/dev/null")
	body := strings.TrimSuffix(out, "\r\n")
	last := body[strings.LastIndex(body, "\r")+1:]
	if !regexp.MustCompile(`^\S+ of \S+ 100%  \S+/s  ETA 0:00 read\s*$`).MatchString(last) {
		t.Errorf("scrub on a terminal drew %q", out)
	}
}
