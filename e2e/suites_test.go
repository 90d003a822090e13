package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// Foreign test suites run against a mount. They take minutes, so make
// test leaves them out: `make test-fuse-suites` sets DDFS_FUSE_SUITES=full
// (the sizes for a human's run), `make test-fuse-ci` (run by .ci/run)
// DDFS_FUSE_SUITES=ci: the same suites, each shorter.
func needSuites(t *testing.T) {
	t.Helper()
	if os.Getenv("DDFS_FUSE_SUITES") == "" {
		t.Skip("a foreign suite on a mount, minutes long: make test-fuse-suites or make test-fuse-ci (DDFS_FUSE_SUITES=full|ci) runs it")
	}
}

// suiteSize picks the CI or the full size of a suite's knob.
func suiteSize[T any](ci, full T) T {
	if os.Getenv("DDFS_FUSE_SUITES") == "ci" {
		return ci
	}
	return full
}

// suiteMount makes a.img (mkfs.ddfs -q -b SIZE plus mkfs) in a new temp
// directory and mounts it: the start of every suite test.
func suiteMount(t *testing.T, size string, mkfs ...string) (string, *mounted) {
	t.Helper()
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", append(append([]string{"-q", "-b", size}, mkfs...), "a.img")...), 0)
	return dir, mountImage(t, dir, "a.img")
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
	dir, m := suiteMount(t, "4G", "--dedupe", "--compress", "zstd")
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
// on a dedupe+zstd mount, one after another, 10 s each (CI: 3 s); every one must
// complete successfully, and fsck be clean after.
func TestStressNGOnMount(t *testing.T) {
	needSuites(t)
	needTool(t, "stress-ng", "stress-ng")
	dir, m := suiteMount(t, "4G", "--dedupe", "--compress", "zstd")
	passed := 0
	stressors := []string{"dir", "dentry", "rename", "link", "symlink", "xattr", "hdd", "seek", "fallocate", "iomix", "filename", "chmod", "utime", "readahead", "mmap"}
	for _, s := range stressors {
		out, err := exec.Command("stress-ng", "--"+s, "1", "--timeout", suiteSize("3s", "10s"), "--verify", "--temp-path", m.dir).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "successful run completed") {
			t.Errorf("stress-ng --%s: %v\n%s", s, err, out)
			continue
		}
		passed++
	}
	t.Logf("stress-ng --verify on the mount: %d of %d stressors passed", passed, len(stressors))
	m.unmount()
	fsckClean(t, dir, "a.img")
}

// TestFioOnMount runs fio verify jobs (crc32c, fatal on a mismatch):
// random writes then reads, mixed random read/write with fsyncs, and
// writes through mmap, on 64 MiB (CI: 16 MiB); then fsck clean.
func TestFioOnMount(t *testing.T) {
	needSuites(t)
	needTool(t, "fio", "fio")
	dir, m := suiteMount(t, "2G", "--dedupe", "--compress", "zstd")
	mb := suiteSize(16, 64)
	jobs := [][]string{
		{"--rw=randwrite", "--ioengine=psync", fmt.Sprintf("--size=%dm", mb)},
		{"--rw=randrw", "--ioengine=psync", "--fsync=64", fmt.Sprintf("--size=%dm", mb)},
		{"--rw=randwrite", "--ioengine=mmap", fmt.Sprintf("--size=%dm", mb/2)},
	}
	passed := 0
	for _, job := range jobs {
		args := append([]string{"--name=verify", "--directory=" + m.dir, "--bs=4k", "--verify=crc32c", "--do_verify=1", "--verify_fatal=1", "--minimal"}, job...)
		cmd := exec.Command("fio", args...)
		cmd.Dir = dir // its verify state files land there, not in e2e/
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("fio %v: %v\n%s", job, err, out)
			continue
		}
		passed++
	}
	t.Logf("fio crc32c verify jobs on the mount: %d of %d passed", passed, len(jobs))
	m.unmount()
	fsckClean(t, dir, "a.img")
}

// TestBuildOnMount: a build-like workload: the installed Go tree (source,
// tools) untarred onto a dedupe+zstd mount, then this module's source, and
// go vet ./... of the module with GOROOT the mount's copy, so the toolchain
// runs from and reads the standard library off the mount; the full size
// also keeps GOCACHE on the mount (every package compiled there) and adds
// go build. fsck clean after.
func TestBuildOnMount(t *testing.T) {
	needSuites(t)
	dir, m := suiteMount(t, "4G", "--dedupe", "--compress", "zstd")
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatal(err)
	}
	gr := strings.TrimSpace(string(goroot))
	src := m.path("src")
	os.Mkdir(src, 0o755)
	start := time.Now()
	for _, c := range []string{
		"tar -C " + filepath.Dir(gr) + " -cf - " + filepath.Base(gr) + " | tar -C " + m.dir + " -xf -",
		"tar -C .. --exclude=./.git --exclude=./bin --exclude=./demo -cf - . | tar -C " + src + " -xf -",
	} {
		if out, err := exec.Command("sh", "-c", c).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v %s", c, err, out)
		}
	}
	t.Logf("untarred %s and this module onto the mount in %v", gr, time.Since(start).Round(time.Millisecond))
	env := append(os.Environ(), "GOROOT="+m.path(filepath.Base(gr)), "GOTOOLCHAIN=local")
	cmds := [][]string{{"vet", "./..."}}
	if suiteSize(false, true) {
		env = append(env, "GOCACHE="+m.path("gocache"))
		cmds = append(cmds, []string{"build", "-o", os.DevNull, "./ddfs"})
	}
	for _, args := range cmds {
		start := time.Now()
		cmd := exec.Command(m.path(filepath.Base(gr)+"/bin/go"), args...)
		cmd.Dir = src
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %v on the mount: %v\n%s", args, err, out)
		}
		t.Logf("go %v on the mount (GOROOT there too): %v", args, time.Since(start).Round(time.Millisecond))
	}
	m.unmount()
	fsckClean(t, dir, "a.img")
}

// TestDbenchOnMount: dbench's client load (4 clients, 20 s; CI: 5 s) on a
// mount runs without an error; fsck clean after.
func TestDbenchOnMount(t *testing.T) {
	needSuites(t)
	needTool(t, "dbench", "dbench")
	dir, m := suiteMount(t, "4G")
	out, err := exec.Command("dbench", "-D", m.dir, "-t", suiteSize("5", "20"), "4").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Throughput") {
		t.Fatalf("dbench: %v\n%s", err, out)
	}
	t.Logf("dbench: %s", out[strings.LastIndex(string(out), "Throughput"):])
	m.unmount()
	fsckClean(t, dir, "a.img")
}
