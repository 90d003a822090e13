package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// TestKill9DuringCopy kills `ddfs cp -r` at several moments (after its
// 1st, 2nd, 4th, 8th commit): the image must check clean, and every file
// it shows must be whole.
func TestKill9DuringCopy(t *testing.T) {
	src := filepath.Join(runtime.GOROOT(), "src", "net")
	if _, err := os.Stat(src); err != nil {
		t.Skip("no Go source tree")
	}
	total := 0
	for _, commits := range []uint64{1, 2, 4, 8} {
		dir := t.TempDir()
		must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "512M", "disk.img"), 0)
		gen0 := generation(t, filepath.Join(dir, "disk.img"))
		cmd := exec.Command(filepath.Join(binDir, "ddfs"), "cp", "-r", src, "disk.img:/")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "DDFS_BATCH_NODES=8")
		cp := startProc(t, cmd)
		killed := cp.until(t, fmt.Sprintf("cp -r commits %d times", commits), reaches(t, filepath.Join(dir, "disk.img"), gen0+commits))
		cmd.Process.Signal(syscall.SIGKILL)
		if err := cp.wait(); !killed && err != nil {
			t.Fatalf("cp -r failed before its commit %d: %v", commits, err)
		}
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
				t.Fatalf("after a kill at commit %d: %s is not whole (%d of %d bytes)", commits, p, len(got), len(want))
			}
			if checked++; checked >= 25 {
				break
			}
		}
		total += checked
		if !killed {
			break // the copy ended before this commit: later ones do not come
		}
	}
	if total == 0 {
		t.Fatal("no kill landed after a commit: the test checked nothing")
	}
}
