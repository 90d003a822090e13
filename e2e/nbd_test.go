package e2e

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ddfs/ddfs/pkg/device/nbdkittest"
)

// nbdSet is a three-device set: an nbdkit file-plugin export on a unix
// socket, a memory-plugin export on 127.0.0.1, and a local image file.
type nbdSet struct {
	dir       string
	back      string // the file plugin's backing file
	file, mem *nbdkittest.Server
	devs      []string // --device flags naming the other two members
}

// newNBDSet makes the set with data and metadata on all three (raid1c3),
// so every member is written and read.
func newNBDSet(t *testing.T) *nbdSet {
	t.Helper()
	nbdkittest.Need(t)
	s := &nbdSet{dir: t.TempDir()}
	s.back = filepath.Join(s.dir, "export.img")
	if err := os.WriteFile(s.back, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Truncate(s.back, 256<<20)
	s.file = nbdkittest.Start(t, true, "file", "file="+s.back)
	s.mem = nbdkittest.Start(t, false, "memory", "size=256M")
	must(t, run(t, s.dir, "mkfs.ddfs", "-q", "-b", "256M", "-d", "raid1c3", "-m", "raid1c3", s.file.URL, s.mem.URL, "local.img"), 0)
	s.devs = []string{"--device", s.mem.URL, "--device", "local.img"}
	return s
}

// img is the IMAGE:PATH operand of path in the set.
func (s *nbdSet) img(path string) string { return s.file.URL + ":" + path }

func (s *nbdSet) run(t *testing.T, name string, args ...string) result {
	t.Helper()
	return run(t, s.dir, name, append(append([]string{}, s.devs...), args...)...)
}

// sameTree compares every regular file under want with its copy under got.
func sameTree(t *testing.T, want, got string) int {
	t.Helper()
	n := 0
	err := filepath.Walk(want, func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(want, p)
		a, _ := os.ReadFile(p)
		if b, err := os.ReadFile(filepath.Join(got, rel)); err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: contents differ (%v)", rel, err)
		}
		n++
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("compared %d files: %v", n, err)
	}
	return n
}

// TestNBDSet: mkfs across two NBD exports and a local file; the Go fmt
// tree goes in through the export's URL and comes out whole; fsck is
// clean; without --device the set refuses to open and names the network
// members it will not look for; trimtool gives the file export's backing
// file its space back.
func TestNBDSet(t *testing.T) {
	src := filepath.Join(runtime.GOROOT(), "src", "fmt")
	s := newNBDSet(t)
	must(t, s.run(t, "ddfs", "cp", "-r", src, s.img("/")), 0)
	must(t, s.run(t, "ddfs", "cp", "-r", s.img("/fmt"), filepath.Join(s.dir, "out")), 0)
	sameTree(t, src, filepath.Join(s.dir, "out"))
	must(t, s.run(t, "fsck.ddfs", "--check-data", s.file.URL), 0)
	must(t, run(t, s.dir, "fsck.ddfs", "local.img", "--device", s.file.URL, "--device", s.mem.URL), 0)

	// The local member records the others' URLs but does not dial them.
	r := run(t, s.dir, "ddfs", "ls", "local.img:/")
	if r.code == 0 || !strings.Contains(r.stderr, "nbd") || !strings.Contains(r.stderr, "--device") {
		t.Fatalf("open without --device: %d %q", r.code, r.stderr)
	}

	big := make([]byte, 48<<20) // random: no dedupe or compression
	rand.New(rand.NewSource(1)).Read(big)
	os.WriteFile(filepath.Join(s.dir, "big"), big, 0o644)
	must(t, s.run(t, "ddfs", "cp", filepath.Join(s.dir, "big"), s.img("/big")), 0)
	before := allocated(t, s.back)
	must(t, s.run(t, "ddfs", "rm", s.img("/big")), 0)
	var rep struct {
		Devices []struct {
			Device   string `json:"device"`
			Bytes    uint64 `json:"bytes"`
			Discards uint64 `json:"discards"`
		} `json:"devices"`
	}
	out := must(t, s.run(t, "trimtool", "--json", s.file.URL), 0).stdout
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Devices) != 3 {
		t.Fatalf("trimtool --json: %v %s", err, out)
	}
	after := allocated(t, s.back)
	if before-after < 8<<20 {
		t.Fatalf("backing file allocated %d -> %d after removing 48 MiB and trimming: %s", before, after, out)
	}
	must(t, s.run(t, "fsck.ddfs", "--check-data", s.file.URL), 0)
	must(t, s.run(t, "dedupe-tool", "status", s.file.URL), 0)
}

// TestNBDServerKilled: the file export's server dies during a long copy
// (once the copy has written 1 MiB to it).
// The copy fails naming the device and does not hang; after the server
// restarts on the same file the set checks clean, the tree committed
// before is whole and every file of the interrupted copy that is there
// is a prefix of its source (fsck --check-data proves its checksums).
func TestNBDServerKilled(t *testing.T) {
	fmtSrc := filepath.Join(runtime.GOROOT(), "src", "fmt")
	netSrc := filepath.Join(runtime.GOROOT(), "src", "cmd")
	s := newNBDSet(t)
	must(t, s.run(t, "ddfs", "cp", "-r", fmtSrc, s.img("/")), 0)

	cmd := exec.Command(filepath.Join(binDir, "ddfs"), append(append([]string{}, s.devs...), "cp", "-r", netSrc, s.img("/"))...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "DDFS_BATCH_NODES=8", "DDFS_NBD_TIMEOUT=5s")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	base := allocated(t, s.back)
	for allocated(t, s.back) < base+1<<20 {
		select {
		case err := <-exited:
			t.Fatalf("the copy ended (%v) before it wrote 1 MiB to the export", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	s.file.Kill()
	start := time.Now()
	err := <-exited
	if err == nil || !strings.Contains(stderr.String(), s.file.URL) || time.Since(start) > 15*time.Second {
		t.Fatalf("copy with the server killed: %v after %v: %q", err, time.Since(start), stderr.String())
	}
	s.file.Restart(t)
	must(t, s.run(t, "fsck.ddfs", "--check-data", s.file.URL), 0)
	out := filepath.Join(s.dir, "out")
	must(t, s.run(t, "ddfs", "cp", "-r", s.img("/fmt"), out), 0)
	sameTree(t, fmtSrc, out)
	part := filepath.Join(s.dir, "part")
	if r := s.run(t, "ddfs", "cp", "-r", s.img("/cmd"), part); r.code != 0 {
		t.Logf("no part of /cmd was committed: %s", r.stderr)
		return
	}
	n := 0
	filepath.Walk(part, func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(part, p)
		got, _ := os.ReadFile(p)
		want, _ := os.ReadFile(filepath.Join(netSrc, rel))
		if !bytes.HasPrefix(want, got) {
			t.Errorf("%s: %d bytes that are not its source's", rel, len(got))
		}
		n++
		return nil
	})
	t.Logf("%d files of the interrupted copy are there", n)
}

// TestNBDServerErrors: the file export, the set's second member, fails
// every write with EIO from some point on. The copy exits 1 with one line
// naming the image path, the error and the failing server; nothing
// committed before is lost.
func TestNBDServerErrors(t *testing.T) {
	nbdkittest.Need(t)
	dir := t.TempDir()
	back := filepath.Join(dir, "export.img")
	os.WriteFile(back, nil, 0o644)
	os.Truncate(back, 256<<20)
	inject := filepath.Join(dir, "inject")
	srv := nbdkittest.Start(t, true, "--filter=error", "file", "file="+back,
		"error=EIO", "error-pwrite-rate=100%", "error-pwrite-file="+inject)
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "-d", "raid1", "local.img", srv.URL), 0)
	fmtSrc := filepath.Join(runtime.GOROOT(), "src", "fmt")
	dev := []string{"--device", srv.URL}
	must(t, run(t, dir, "ddfs", append(dev, "cp", "-r", fmtSrc, "local.img:/")...), 0)

	os.WriteFile(inject, nil, 0o644)
	r := run(t, dir, "ddfs", append(dev, "cp", "-r", filepath.Join(runtime.GOROOT(), "src", "strings"), "local.img:/")...)
	// Data writes say "IMG:/file: Input/output error (on URL)", metadata
	// writes the device, offset and errno.
	if r.code != 1 || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "ddfs: cp: local.img:/") ||
		!strings.Contains(r.stderr, srv.URL) || !strings.Contains(strings.ToLower(r.stderr), "input/output error") {
		t.Fatalf("copy with write errors: %d %q", r.code, r.stderr)
	}
	os.Remove(inject)
	must(t, run(t, dir, "fsck.ddfs", append(dev, "--check-data", "local.img")...), 0)
	out := filepath.Join(dir, "out")
	must(t, run(t, dir, "ddfs", append(dev, "cp", "-r", "local.img:/fmt", out)...), 0)
	sameTree(t, fmtSrc, out)
}
