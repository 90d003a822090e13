package e2e

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// dupSet writes host files whose 128 KiB blocks repeat: x, x again, x+x.
func dupSet(t *testing.T, dir string) map[string][]byte {
	rng := rand.New(rand.NewPCG(14, 14))
	x := make([]byte, 6<<20)
	for i := range x {
		x[i] = byte(rng.Uint32())
	}
	files := map[string][]byte{"a": x, "b": x, "c": append(bytes.Clone(x), x...)}
	os.MkdirAll(filepath.Join(dir, "src"), 0o755)
	for n, d := range files {
		if err := os.WriteFile(filepath.Join(dir, "src", n), d, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

func physicalOf(t *testing.T, dir, img string) float64 {
	t.Helper()
	var st map[string]any
	if err := json.Unmarshal([]byte(must(t, run(t, dir, "dedupe-tool", "status", "--json", img), 0).stdout), &st); err != nil {
		t.Fatal(err)
	}
	return st["physical_bytes"].(float64)
}

// TestDedupeToolRunKill9: `dedupe-tool run` killed at several moments
// (small transactions) leaves an image that checks clean with every file
// whole; a rerun frees exactly what an uninterrupted run does.
func TestDedupeToolRunKill9(t *testing.T) {
	base := t.TempDir()
	files := dupSet(t, base)
	must(t, run(t, base, "mkfs.ddfs", "-q", "-b", "256M", "-r", "src", "ref.img"), 0)
	var res map[string]any
	if err := json.Unmarshal([]byte(must(t, run(t, base, "dedupe-tool", "run", "--json", "ref.img"), 0).stdout), &res); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"freed_bytes", "extents_shared", "seconds", "index_entries"} {
		if _, ok := res[k]; !ok {
			t.Fatalf("run --json lacks %q: %v", k, res)
		}
	}
	want := physicalOf(t, base, "ref.img")
	if want > 7<<20 { // one copy of x, sector-rounded blocks
		t.Fatalf("uninterrupted run leaves %v bytes", want)
	}
	// 0: as soon as it writes the image, so one kill comes mid-run
	// however loaded the machine (a 5 ms kill came before it started).
	for _, delay := range []time.Duration{0, 30 * time.Millisecond, 80 * time.Millisecond, 200 * time.Millisecond} {
		dir := t.TempDir()
		must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "-r", filepath.Join(base, "src"), "disk.img"), 0)
		cmd := exec.Command(filepath.Join(binDir, "dedupe-tool"), "run", "disk.img")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "DDFS_BATCH_NODES=8")
		written := modified(t, filepath.Join(dir, "disk.img"))
		p := startProc(t, cmd)
		if delay == 0 {
			if !p.until(t, "dedupe-tool writes the image", written) {
				t.Fatalf("dedupe-tool run ended without writing: %v", p.wait())
			}
		} else {
			select {
			case <-p.done:
			case <-time.After(delay):
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		p.wait()
		must(t, run(t, dir, "fsck.ddfs", "--check-data", "disk.img"), 0)
		for n, d := range files {
			if got := must(t, run(t, dir, "ddfs", "cat", "disk.img:/"+n), 0).stdout; got != string(d) {
				t.Fatalf("after a kill at %v: %s differs", delay, n)
			}
		}
		must(t, run(t, dir, "dedupe-tool", "run", "disk.img"), 0)
		must(t, run(t, dir, "fsck.ddfs", "--check-data", "disk.img"), 0)
		if got := physicalOf(t, dir, "disk.img"); got != want {
			t.Fatalf("after a kill at %v and a rerun: %v physical bytes, want %v", delay, got, want)
		}
	}
}

// TestCpReflinkCLI: ddfs cp --reflink inside an image adds no data, and
// --reflink=always across images fails.
func TestCpReflinkCLI(t *testing.T) {
	dir := t.TempDir()
	dupSet(t, dir)
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "-r", "src", "disk.img"), 0)
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "other.img"), 0)
	before := physicalOf(t, dir, "disk.img")
	must(t, run(t, dir, "ddfs", "cp", "-r", "disk.img:/", "disk.img:/copy"), 1) // into itself: refused
	must(t, run(t, dir, "ddfs", "mkdir", "disk.img:/copy"), 0)
	for _, n := range []string{"a", "b", "c"} {
		must(t, run(t, dir, "ddfs", "cp", "disk.img:/"+n, "disk.img:/copy/"), 0)
	}
	if got := physicalOf(t, dir, "disk.img"); got != before {
		t.Fatalf("reflink copy: %v -> %v physical bytes", before, got)
	}
	must(t, run(t, dir, "ddfs", "cp", "--reflink=always", "disk.img:/a", "other.img:/a"), 1)
	must(t, run(t, dir, "ddfs", "cp", "disk.img:/c", "other.img:/c"), 0)
	must(t, run(t, dir, "fsck.ddfs", "disk.img"), 0)
	must(t, run(t, dir, "fsck.ddfs", "other.img"), 0)
}

// TestDegradedDedupeTool: every dedupe-tool command that opens a set
// takes --degraded: with a raid1 member gone, run, estimate and index
// refuse naming the flag, and work with it; the files read back intact.
func TestDegradedDedupeTool(t *testing.T) {
	dir := t.TempDir()
	files := dupSet(t, dir)
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "-m", "raid1", "-d", "raid1", "-r", "src", "a.img", "b.img"), 0)
	if err := os.Rename(filepath.Join(dir, "b.img"), filepath.Join(t.TempDir(), "b.img")); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"estimate", "a.img"}, {"run", "a.img"}, {"index", "rebuild", "a.img"}} {
		if r := must(t, run(t, dir, "dedupe-tool", cmd...), 1); !strings.Contains(r.stderr, "--degraded") {
			t.Fatalf("%v: %q", cmd, r.stderr)
		}
		must(t, run(t, dir, "dedupe-tool", append(cmd, "--degraded")...), 0)
	}
	for name, want := range files {
		if got := must(t, run(t, dir, "ddfs", "cat", "--degraded", "a.img:/"+name), 0).stdout; got != string(want) {
			t.Fatalf("%s: %d bytes read back, want %d", name, len(got), len(want))
		}
	}
}
