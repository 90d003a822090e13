package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKill9DuringCopy kills `ddfs cp -r` at several moments: the image
// must check clean, and every file it shows must be whole.
func TestKill9DuringCopy(t *testing.T) {
	src := filepath.Join(runtime.GOROOT(), "src", "net")
	if _, err := os.Stat(src); err != nil {
		t.Skip("no Go source tree")
	}
	total := 0
	// Longer delays only matter on a slow machine, where the short ones may
	// all land before the first commit; stop once enough was checked.
	for _, delay := range []time.Duration{20 * time.Millisecond, 60 * time.Millisecond, 150 * time.Millisecond, 400 * time.Millisecond, 1500 * time.Millisecond} {
		if total >= 25 && delay > 150*time.Millisecond {
			break
		}
		dir := t.TempDir()
		must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "512M", "disk.img"), 0)
		cmd := exec.Command(filepath.Join(binDir, "ddfs"), "cp", "-r", src, "disk.img:/")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "DDFS_BATCH_NODES=8")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		must(t, run(t, dir, "fsck.ddfs", "disk.img"), 0)
		// Every file present equals its source.
		out := must(t, run(t, dir, "ddfs", "ls", "-R", "disk.img:/"), 0).stdout
		checked := 0
		var cur string
		for _, line := range strings.Split(out, "\n") {
			if strings.HasSuffix(line, ":") {
				cur = strings.TrimSuffix(strings.TrimPrefix(line, "disk.img:"), ":")
				continue
			}
			if !strings.HasSuffix(line, ".go") {
				continue
			}
			p := cur + "/" + line
			host := filepath.Join(filepath.Dir(src), strings.TrimPrefix(p, "/"))
			want, err := os.ReadFile(host)
			if err != nil {
				t.Fatal(err)
			}
			got := must(t, run(t, dir, "ddfs", "cat", "disk.img:"+p), 0).stdout
			if !bytes.Equal([]byte(got), want) {
				t.Fatalf("after kill at %v: %s is not whole (%d of %d bytes)", delay, p, len(got), len(want))
			}
			if checked++; checked >= 25 {
				break
			}
		}
		total += checked
	}
	if total == 0 {
		t.Fatal("no kill landed after a commit: the test checked nothing")
	}
}
