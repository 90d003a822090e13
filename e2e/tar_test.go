package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPty returns a pseudo-terminal's controlling and terminal ends.
func openPty(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open pts: %v", err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return m, s
}

// runFileIn runs a binary with stdin from a file of dir.
func runFileIn(t *testing.T, dir, stdin, name string, args ...string) result {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, stdin))
	if err != nil {
		t.Fatal(err)
	}
	return runIn(t, dir, b, name, args...)
}

func sh(t *testing.T, dir, script string) {
	t.Helper()
	cmd := exec.Command("sh", "-ec", script)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
}

// statOf is "mtime mode uid gid" of an image path, from ddfs stat --json.
func statOf(t *testing.T, dir, imgPath string) string {
	t.Helper()
	r := must(t, run(t, dir, "ddfs", "stat", "--json", imgPath), 0)
	var st struct {
		Mode     string
		UID, GID uint32
		Mtime    string
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("stat --json %s: %v\n%s", imgPath, err, r.stdout)
	}
	mt, err := time.Parse(time.RFC3339Nano, st.Mtime)
	if err != nil {
		t.Fatalf("stat --json %s: mtime %q", imgPath, st.Mtime)
	}
	return fmt.Sprintf("%d %s %d %d", mt.Unix(), strings.TrimLeft(st.Mode, "0"), st.UID, st.GID)
}

// TestTarGNU: archives made by GNU tar (the model), compressed four ways,
// restore directory mtimes and the "./" entry's mode, owner and time on
// the target, through mkfs --tar and tar-in; tar-out's "./" carries the
// directory's own; a missing target is made; empty input fails; tar-out
// refuses a terminal.
func TestTarGNU(t *testing.T) {
	if _, err := exec.LookPath("tar"); err != nil {
		t.Skip("no tar")
	}
	dir := t.TempDir()
	sh(t, dir, `mkdir -p src/d/e && echo hi > src/d/e/f && echo x > src/g
		chmod 750 src && chmod 700 src/d/e
		touch -d @1000000000 src/d/e/f src/g && touch -d @1100000000 src/d/e && touch -d @1200000000 src/d && touch -d @1300000000 src
		tar --numeric-owner --owner=7 --group=8 -C src -cf t.tar .
		gzip -c t.tar > t.tar.gz; zstd -q -c t.tar > t.tar.zst; xz -c t.tar > t.tar.xz; bzip2 -c t.tar > t.tar.bz2`)
	want := map[string]string{"": "1300000000 750 7 8", "/d": "1200000000 755 7 8", "/d/e": "1100000000 700 7 8", "/g": "1000000000 644 7 8"}
	check := func(img, root string) {
		t.Helper()
		for p, w := range want {
			if got := statOf(t, dir, img+":"+root+p); got != w {
				t.Errorf("%s:%s%s: %s, want %s", img, root, p, got, w)
			}
		}
	}
	for _, name := range []string{"t.tar", "t.tar.gz", "t.tar.zst", "t.tar.xz", "t.tar.bz2"} {
		img := name + ".img"
		must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "64M", "--tar", name, img), 0)
		check(img, "")
		// tar-in into a directory it makes (its parent exists).
		must(t, runFileIn(t, dir, name, "ddfs", "tar-in", img+":/new"), 0)
		check(img, "/new")
		must(t, run(t, dir, "fsck.ddfs", img), 0)
	}
	// The parent missing: named, not the first entry below it.
	r := must(t, runFileIn(t, dir, "t.tar", "ddfs", "tar-in", "t.tar.img:/missing/sub"), 1)
	if strings.TrimSpace(r.stderr) != "ddfs: tar-in: t.tar.img:/missing: No such file or directory" {
		t.Errorf("tar-in below a missing directory: %q", r.stderr)
	}
	// tar-out of a directory: "./" first, with the directory's own.
	r = must(t, run(t, dir, "ddfs", "tar-out", "t.tar.img:/d"), 0)
	os.WriteFile(filepath.Join(dir, "d.tar"), []byte(r.stdout), 0o644)
	cmd := exec.Command("tar", "--numeric-owner", "--full-time", "-tvf", "d.tar")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TZ=UTC")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	first := strings.SplitN(string(out), "\n", 2)[0]
	if f := strings.Fields(first); len(f) < 6 || f[0] != "drwxr-xr-x" || f[1] != "7/8" || f[3]+" "+f[4] != "2008-01-10 21:20:00" || f[5] != "./" {
		t.Errorf("tar -tv of tar-out: first line %q", first)
	}
	// Empty input is not an archive.
	os.WriteFile(filepath.Join(dir, "empty"), nil, 0o644)
	r = must(t, runFileIn(t, dir, "empty", "ddfs", "tar-in", "t.tar.img:/"), 1)
	if !strings.Contains(r.stderr, "This does not look like a tar archive") {
		t.Errorf("empty tar-in: %q", r.stderr)
	}
	r = must(t, runFileIn(t, dir, "empty", "mkfs.ddfs", "-q", "-b", "64M", "--tar", "-", "e.img"), 1)
	if _, err := os.Stat(filepath.Join(dir, "e.img")); err == nil || !strings.Contains(r.stderr, "This does not look like a tar archive") {
		t.Errorf("mkfs --tar of empty input: %q, image left: %v", r.stderr, err == nil)
	}
	// A terminal on stdout: refused, nothing written to it.
	m, s := openPty(t)
	cmd = exec.Command(filepath.Join(binDir, "ddfs"), "tar-out", "t.tar.img")
	cmd.Dir = dir
	var e bytes.Buffer
	cmd.Stdout, cmd.Stderr = s, &e
	got := make(chan int)
	go func() { // drain the terminal, so a wrong tar-out cannot block on it
		n, _ := io.Copy(io.Discard, m)
		got <- int(n)
	}()
	err = cmd.Run()
	s.Close() // the last terminal end: the reader sees EIO
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 2 || !strings.Contains(e.String(), "Refusing to write archive contents to terminal") {
		t.Errorf("tar-out to a terminal: %v %q", err, e.String())
	}
	if n := <-got; n > 0 {
		t.Errorf("tar-out wrote %d bytes to the terminal", n)
	}
}

// TestCpSpecialFiles: cp -r recreates fifos and device nodes in the image
// and out of it, as GNU cp -r does; out of it without the right to mknod
// a device, it names the device, copies the rest and exits 1.
func TestCpSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir), binDir} { // nobody runs a copy below
		os.Chmod(d, 0o755)
	}
	sh(t, dir, `mkdir -p tree/sub && echo a > tree/a && echo b > tree/sub/z && mkfifo tree/zfifo && mknod tree/sub/null c 1 3`)
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "64M", "s.img"), 0)
	must(t, run(t, dir, "ddfs", "cp", "-r", "tree", "s.img:/"), 0)
	for p, want := range map[string]string{"/tree/zfifo": "fifo", "/tree/sub/null": "char"} {
		r := must(t, run(t, dir, "ddfs", "stat", "--json", "s.img:"+p), 0)
		var st struct{ Type string }
		json.Unmarshal([]byte(r.stdout), &st)
		if !strings.Contains(st.Type, want) {
			t.Errorf("%s in the image: type %q, want %s", p, st.Type, want)
		}
	}
	must(t, run(t, dir, "ddfs", "cp", "-r", "s.img:/tree", "out"), 0)
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(dir, "out/zfifo"), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		t.Errorf("out/zfifo: %v mode %o", err, st.Mode)
	}
	if err := unix.Lstat(filepath.Join(dir, "out/sub/null"), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != unix.Mkdev(1, 3) {
		t.Errorf("out/sub/null: %v mode %o rdev %x", err, st.Mode, st.Rdev)
	}
	// As nobody: no mknod of a device.
	os.Chmod(filepath.Join(dir, "s.img"), 0o644)
	os.Mkdir(filepath.Join(dir, "nob"), 0o755)
	os.Chown(filepath.Join(dir, "nob"), 65534, 65534)
	cmd := exec.Command(filepath.Join(binDir, "ddfs"), "cp", "-r", "s.img:/tree", "nob/out")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "s.img:/tree/sub/null: Operation not permitted") {
		t.Fatalf("cp -r out as nobody: %v %q", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "nob/out/sub/z")); err != nil || string(b) != "b\n" {
		t.Errorf("nob/out/sub/z after the refused device: %q %v", b, err)
	}
	if err := unix.Lstat(filepath.Join(dir, "nob/out/zfifo"), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		t.Errorf("nob/out/zfifo: %v", err)
	}
}

// TestImageFullKeepsCopied: ENOSPC in the middle of a cp -r keeps every
// file copied before it, whole, and not the one it hit (nor a part of it).
func TestImageFullKeepsCopied(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "in"), 0o755)
	names := []string{"a", "b", "c", "d", "e", "f"}
	for _, n := range names {
		os.WriteFile(filepath.Join(dir, "in", n), bytes.Repeat([]byte(n), 12<<20), 0o644)
	}
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "64M", "small.img"), 0)
	r := must(t, run(t, dir, "ddfs", "cp", "-r", "in", "small.img:/"), 1)
	msg := strings.TrimSpace(r.stderr)
	failed, ok := strings.CutPrefix(msg, "ddfs: cp: small.img:/in/")
	failed, ok2 := strings.CutSuffix(failed, ": No space left on device")
	if !ok || !ok2 || len(failed) != 1 || failed == "a" {
		t.Fatalf("stderr %q: want one line naming the file after at least one copied", msg)
	}
	must(t, run(t, dir, "fsck.ddfs", "small.img"), 0)
	ls := must(t, run(t, dir, "ddfs", "ls", "small.img:/in"), 0)
	var kept []string
	for _, n := range names {
		if n < failed {
			kept = append(kept, n)
			if c := must(t, run(t, dir, "ddfs", "cat", "small.img:/in/"+n), 0); c.stdout != strings.Repeat(n, 12<<20) {
				t.Errorf("/in/%s: %d bytes, not the file", n, len(c.stdout))
			}
		}
	}
	if got := strings.Fields(ls.stdout); strings.Join(got, " ") != strings.Join(kept, " ") {
		t.Errorf("after ENOSPC at %s: /in holds %q, want %q", failed, got, kept)
	}
}

// TestMkfsInterrupted: SIGINT or SIGTERM in the middle of mkfs -r removes
// the image file it created and kills it by the signal; an image file
// that was there before is not removed.
func TestMkfsInterrupted(t *testing.T) {
	src := "/usr/local/go/src"
	if _, err := os.Stat(src); err != nil {
		t.Skip("no large tree to copy")
	}
	dir := t.TempDir()
	// The signal goes once mkfs writes the image: its handler is set
	// and the file it made recorded before it writes a block.
	start := func(img string, sig syscall.Signal) error {
		cmd := exec.Command(filepath.Join(binDir, "mkfs.ddfs"), "-q", "-b", "1G", "-r", src, img)
		cmd.Dir = dir
		p := startProc(t, cmd)
		if !p.until(t, "mkfs writes "+img, hasBlocks(filepath.Join(dir, img))) {
			t.Fatalf("mkfs ended before it wrote %s: %v", img, p.wait())
		}
		cmd.Process.Signal(sig)
		return p.wait()
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		err := start("new.img", sig)
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.Sys().(syscall.WaitStatus).Signal() != sig {
			t.Fatalf("%v: mkfs ended with %v, want killed by the signal", sig, err)
		}
		if _, err := os.Stat(filepath.Join(dir, "new.img")); !os.IsNotExist(err) {
			t.Fatalf("%v: the image mkfs created is still there (%v)", sig, err)
		}
	}
	// A file it was told to overwrite is not its to delete.
	os.WriteFile(filepath.Join(dir, "old.img"), nil, 0o644)
	os.Truncate(filepath.Join(dir, "old.img"), 1<<30)
	if err := start("old.img", syscall.SIGINT); err == nil {
		t.Fatal("interrupted mkfs exited 0")
	}
	if st, err := os.Stat(filepath.Join(dir, "old.img")); err != nil || st.Size() != 1<<30 {
		t.Fatalf("the pre-existing image: %v", err)
	}
	// sh starts `mkfs.ddfs ... &` with SIGINT ignored: a Ctrl-C meant for
	// the script does not reach it, and mkfs keeps it ignored (it used to
	// remove its image on it and still exit 0).
	cmd := ignoringSIGINT(filepath.Join(binDir, "mkfs.ddfs"), "-q", "-b", "1G", "-r", src, "bg.img")
	cmd.Dir = dir
	if err := signalUntilExit(t, cmd, syscall.SIGINT); err != nil {
		t.Fatalf("mkfs started with SIGINT ignored, sent SIGINT: %v", err)
	}
	must(t, run(t, dir, "fsck.ddfs", "bg.img"), 0)
	// So does scrub (it stopped, leaving its state file to resume from).
	cmd = ignoringSIGINT(filepath.Join(binDir, "ddfs"), "scrub", "bg.img")
	cmd.Dir = dir
	if err := signalUntilExit(t, cmd, syscall.SIGINT); err != nil {
		t.Fatalf("scrub started with SIGINT ignored, sent SIGINT: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".bg.img.ddfs-scrub")); !os.IsNotExist(err) {
		t.Fatalf("scrub's state file after a full run: %v", err)
	}
}

// ignoringSIGINT is cmd started as sh starts a background job: with
// SIGINT ignored (SIG_IGN is kept across exec).
func ignoringSIGINT(name string, args ...string) *exec.Cmd {
	return exec.Command("sh", append([]string{"-c", `trap "" INT; exec "$0" "$@"`, name}, args...)...)
}

// signalUntilExit starts cmd, one of ignoringSIGINT, and once sh has
// exec'd the tool (its trap was set: a signal before it would kill sh)
// sends it sig every few milliseconds until it exits, so some signal
// lands whatever the run's phase; it returns cmd's Wait error.
func signalUntilExit(t *testing.T, cmd *exec.Cmd, sig syscall.Signal) error {
	t.Helper()
	p := startProc(t, cmd)
	if !p.until(t, "sh execs "+cmd.Args[3], p.isExe(cmd.Args[3])) {
		t.Fatalf("%s ended before it was signalled: %v", cmd.Args[3], p.wait())
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.done:
			return p.err
		case <-tick.C:
			cmd.Process.Signal(sig)
		}
	}
}

// TestMkfsDiscard: mkfs discards the whole device first, so a reused
// image file gives its old blocks back; -K/--nodiscard keeps them.
func TestMkfsDiscard(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "reused.img")
	fill := func() {
		f, err := os.Create(img)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 8<<20)
		for i := range b {
			b[i] = byte(i*7 + i>>9) // no signature, not zeros
		}
		f.WriteAt(b, 16<<20)
		f.Truncate(64 << 20)
		f.Close()
		if a := allocated(t, img); a < 8<<20 {
			t.Fatalf("filled image: %d bytes allocated", a)
		}
	}
	fill()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "reused.img"), 0)
	after := allocated(t, img)
	if after > 1<<20 {
		t.Errorf("after mkfs: %d bytes still allocated, want the old 8 MiB discarded", after)
	}
	t.Logf("after mkfs of a reused 8 MiB-filled image: %d KiB allocated", after>>10)
	must(t, run(t, dir, "fsck.ddfs", "reused.img"), 0)
	for _, k := range []string{"-K", "--nodiscard"} {
		fill()
		must(t, run(t, dir, "mkfs.ddfs", "-q", k, "reused.img"), 0)
		if a := allocated(t, img); a < 8<<20 {
			t.Errorf("mkfs %s: %d bytes allocated, want the old 8 MiB kept", k, a)
		}
		must(t, run(t, dir, "fsck.ddfs", "reused.img"), 0)
	}
}
