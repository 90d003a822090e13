package e2e

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

func init() { extraBinaries["fsckdamage"] = "../bench/fsckdamage" }

// interruptDamage is the number of inodes whose nlink the test bumps.
const interruptDamage = 1500

// interruptImage makes base.img from top/src (many small files and one
// 256 KiB file, data and metadata dup), then damages it: the nlink of
// interruptDamage files, and one copy of the big file's data.
func interruptImage(t *testing.T, dir string) {
	t.Helper()
	r := rand.New(rand.NewPCG(13, 13))
	for d := 0; d < 20; d++ {
		sub := filepath.Join(dir, "top", "src", fmt.Sprintf("d%d", d))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		for f := 0; f < 100; f++ {
			b := make([]byte, r.IntN(9000))
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%d", f)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	big := make([]byte, 256<<10)
	for i := range big {
		big[i] = byte(r.Uint32())
	}
	if err := os.WriteFile(filepath.Join(dir, "top", "src", "big"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "-d", "dup", "-m", "dup", "-r", "top", "base.img"), 0)
	must(t, run(t, dir, "fsckdamage", "base.img", fmt.Sprint(interruptDamage)), 0)
	img, err := os.ReadFile(filepath.Join(dir, "base.img"))
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(img, big[:4096])
	if at < 0 || bytes.Index(img[at+1:], big[:4096]) < 0 {
		t.Fatal("did not find two copies of the big file's data")
	}
	smash(t, filepath.Join(dir, "base.img"), int64(at))
	codes := map[string]int{}
	for _, p := range fsckProblems(t, run(t, dir, "fsck.ddfs", "--json", "--check-data", "base.img")) {
		codes[p.Code]++
	}
	if len(codes) != 2 || codes["NLINK"] != interruptDamage || codes["DATA_COPY_BAD"] == 0 {
		t.Fatalf("damaged image: %v", codes)
	}
}

// sameSrc copies base.img's /src out to dir/out and compares it with
// dir/top/src, the tree written.
func sameSrc(t *testing.T, dir string) {
	t.Helper()
	out := filepath.Join(dir, "out")
	os.RemoveAll(out)
	defer os.RemoveAll(out)
	must(t, run(t, dir, "ddfs", "cp", "-r", "base.img:/src", "out"), 0)
	if n := sameTree(t, filepath.Join(dir, "top", "src"), out); n != 20*100+1 {
		t.Fatalf("compared %d files", n)
	}
}

// TestFsckInterrupted: SIGINT to fsck.ddfs -y while it repairs an image
// with many damaged inodes (DDFS_BATCH_NODES=1: a commit per fix) exits
// 32 and leaves only problems the damaged image had, fewer of them; a
// second -y completes, a third run is clean, and every file (the one with
// a bad data copy too) reads as written.
func TestFsckInterrupted(t *testing.T) {
	dir := t.TempDir()
	interruptImage(t, dir)
	damaged, err := os.ReadFile(filepath.Join(dir, "base.img"))
	if err != nil {
		t.Fatal(err)
	}
	gen0 := generation(t, filepath.Join(dir, "base.img"))
	mid := 0
	for _, commits := range []uint64{2, 20, 200} {
		if mid > 0 {
			break // one interrupt between commits is what the test needs
		}
		if err := os.WriteFile(filepath.Join(dir, "base.img"), damaged, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(filepath.Join(binDir, "fsck.ddfs"), "-y", "--check-data", "base.img")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "DDFS_BATCH_NODES=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		fsck := startProc(t, cmd)
		// SIGINT once the repair committed some fixes, not at a time: a
		// loaded machine may not have started repairing by then.
		fsck.until(t, fmt.Sprintf("fsck -y commits %d times", commits), reaches(t, filepath.Join(dir, "base.img"), gen0+commits))
		cmd.Process.Signal(syscall.SIGINT)
		err := fsck.wait()
		when := fmt.Sprintf("commit %d", commits)
		code := cmd.ProcessState.ExitCode()
		if code == 1 {
			t.Logf("SIGINT after %s: the repair was done", when)
			continue
		}
		if code != 32 {
			t.Fatalf("SIGINT after %s: exit %d (%v), want 32: %s", when, code, err, stderr.String())
		}
		// Nothing half-done: only the damage, some of it maybe fixed.
		left := fsckProblems(t, run(t, dir, "fsck.ddfs", "--json", "--check-data", "base.img"))
		nlink := 0
		for _, p := range left {
			switch p.Code {
			case "NLINK":
				nlink++
			case "DATA_COPY_BAD":
			default:
				t.Fatalf("SIGINT after %s: %s %+v, a problem the damaged image did not have", when, p.Code, p)
			}
		}
		if nlink > 0 && nlink < interruptDamage {
			mid++
		}
		t.Logf("SIGINT after %s: %d of %d NLINK left, %d problems", when, nlink, interruptDamage, len(left))
		want := 1
		if len(left) == 0 {
			want = 0
		}
		must(t, run(t, dir, "fsck.ddfs", "-y", "--check-data", "base.img"), want)
		must(t, run(t, dir, "fsck.ddfs", "--check-data", "base.img"), 0)
		sameSrc(t, dir)
	}
	if mid == 0 {
		t.Fatal("no SIGINT landed between two repair commits: the test checked nothing in the middle")
	}
}
