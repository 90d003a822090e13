package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// Foreign test suites run against a mount. They take minutes, so make
// test leaves them out: `make test-fuse-suites` sets DDFS_FUSE_SUITES=1.
func needSuites(t *testing.T) {
	t.Helper()
	if os.Getenv("DDFS_FUSE_SUITES") == "" {
		t.Skip("a foreign suite on a mount, minutes long: make test-fuse-suites (DDFS_FUSE_SUITES=1) runs it")
	}
}

// stdlibKnown are the Go standard library tests that fail on any FUSE
// mount, with why; every other failure fails TestStdlibOnMount.
var stdlibKnown = map[string]string{
	// The kernel gives every FUSE file a poll method, so epoll accepts a
	// regular file there and os.File deadlines "work": a kernel FUSE
	// property, the same for every FUSE filesystem.
	"os/TestNonpollableDeadline": "FUSE files are pollable (kernel)",
}

// TestStdlibOnMount runs `go test os path/filepath io/fs archive/tar` of
// the installed Go with TMPDIR on a dedupe+zstd mount, counts passes and
// failures, and wants no failure outside stdlibKnown, then fsck clean.
func TestStdlibOnMount(t *testing.T) {
	needSuites(t)
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "4G", "--dedupe", "--compress", "zstd", "a.img"), 0)
	m := mountImage(t, dir, "a.img")
	tmp := m.path("tmp")
	if err := os.Mkdir(tmp, 0o1777); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "test", "-count=1", "-json", "os", "path/filepath", "io/fs", "archive/tar")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Run() // the exit code is judged from the events below
	counts := map[string]int{}
	var unexpected []string
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct{ Action, Package, Test string }
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Test == "" {
			continue
		}
		switch ev.Action {
		case "pass", "fail", "skip":
			counts[ev.Action]++
		}
		id := ev.Package + "/" + ev.Test
		if ev.Action == "fail" && stdlibKnown[id] == "" && !strings.Contains(ev.Test, "/") {
			unexpected = append(unexpected, id)
		}
	}
	t.Logf("go test os path/filepath io/fs archive/tar on the mount: %d passed, %d failed, %d skipped (known: %v)", counts["pass"], counts["fail"], counts["skip"], stdlibKnown)
	if counts["pass"] < 1000 {
		t.Fatalf("only %d tests passed: the suite did not run\n%s", counts["pass"], out.String()[:min(out.Len(), 4000)])
	}
	sort.Strings(unexpected)
	if len(unexpected) > 0 {
		t.Errorf("failures on the mount: %v", unexpected)
	}
	m.unmount()
	fsckClean(t, dir, "a.img")
}

// needTool fails (never skips) when a suite's Debian package is missing.
func needTool(t *testing.T, name, pkg string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Fatalf("%s not found: apt-get install -y %s", name, pkg)
	}
}

// TestStressNGOnMount runs stress-ng's filesystem stressors with --verify
// on a dedupe+zstd mount, one after another, 10 s each; every one must
// complete successfully, and fsck be clean after.
func TestStressNGOnMount(t *testing.T) {
	needSuites(t)
	needTool(t, "stress-ng", "stress-ng")
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "4G", "--dedupe", "--compress", "zstd", "a.img"), 0)
	m := mountImage(t, dir, "a.img")
	passed := 0
	for _, s := range []string{"dir", "dentry", "rename", "link", "symlink", "xattr", "hdd", "seek", "fallocate", "iomix", "filename", "chmod", "utime", "readahead", "mmap"} {
		out, err := exec.Command("stress-ng", "--"+s, "1", "--timeout", "10s", "--verify", "--temp-path", m.dir).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "successful run completed") {
			t.Errorf("stress-ng --%s: %v\n%s", s, err, out)
			continue
		}
		passed++
	}
	t.Logf("stress-ng --verify on the mount: %d stressors passed", passed)
	m.unmount()
	fsckClean(t, dir, "a.img")
}

// TestFioOnMount runs fio verify jobs (crc32c, fatal on a mismatch):
// random writes then reads, mixed random read/write with fsyncs, and
// writes through mmap; then fsck clean.
func TestFioOnMount(t *testing.T) {
	needSuites(t)
	needTool(t, "fio", "fio")
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "2G", "--dedupe", "--compress", "zstd", "a.img"), 0)
	m := mountImage(t, dir, "a.img")
	for _, job := range [][]string{
		{"--rw=randwrite", "--ioengine=psync", "--size=64m"},
		{"--rw=randrw", "--ioengine=psync", "--fsync=64", "--size=64m"},
		{"--rw=randwrite", "--ioengine=mmap", "--size=32m"},
	} {
		args := append([]string{"--name=verify", "--directory=" + m.dir, "--bs=4k", "--verify=crc32c", "--do_verify=1", "--verify_fatal=1", "--minimal"}, job...)
		if out, err := exec.Command("fio", args...).CombinedOutput(); err != nil {
			t.Errorf("fio %v: %v\n%s", job, err, out)
		}
	}
	m.unmount()
	fsckClean(t, dir, "a.img")
}

// TestBuildOnMount: a build-like workload: this module's source untarred
// onto a dedupe+zstd mount, then go vet ./... and go build there; fsck
// clean after.
func TestBuildOnMount(t *testing.T) {
	needSuites(t)
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "2G", "--dedupe", "--compress", "zstd", "a.img"), 0)
	m := mountImage(t, dir, "a.img")
	src := m.path("src")
	os.Mkdir(src, 0o755)
	tarCmd := "tar -C .. --exclude=./.git --exclude=./bin --exclude=./demo -cf - . | tar -C " + src + " -xf -"
	if out, err := exec.Command("sh", "-c", tarCmd).CombinedOutput(); err != nil {
		t.Fatalf("untar: %v %s", err, out)
	}
	for _, args := range [][]string{{"vet", "./..."}, {"build", "-o", os.DevNull, "./ddfs"}} {
		cmd := exec.Command("go", args...)
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %v on the mount: %v\n%s", args, err, out)
		}
	}
	m.unmount()
	fsckClean(t, dir, "a.img")
}

// TestDbenchOnMount: dbench's client load (4 clients, 20 s) on a mount
// runs without an error; fsck clean after.
func TestDbenchOnMount(t *testing.T) {
	needSuites(t)
	needTool(t, "dbench", "dbench")
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "4G", "a.img"), 0)
	m := mountImage(t, dir, "a.img")
	out, err := exec.Command("dbench", "-D", m.dir, "-t", "20", "4").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Throughput") {
		t.Fatalf("dbench: %v\n%s", err, out)
	}
	t.Logf("dbench: %s", out[strings.LastIndex(string(out), "Throughput"):])
	m.unmount()
	fsckClean(t, dir, "a.img")
}
