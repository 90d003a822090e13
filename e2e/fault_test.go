package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommandFaults: with a device failing, every writing command fails
// with one clear line and exit 1, and the image is the old state (fsck
// clean, old files intact) once the fault is gone.
func TestCommandFaults(t *testing.T) {
	dir := t.TempDir()
	sampleTree(t, dir)
	os.WriteFile(filepath.Join(dir, "big"), bytes.Repeat([]byte("z"), 3<<20), 0o644)
	commands := [][]string{
		{"cp", "-r", "src", "disk.img:/new"},
		{"cp", "big", "disk.img:/big2"},
		{"rm", "-r", "disk.img:/keep"},
		{"mv", "disk.img:/keep", "disk.img:/moved"},
		{"mkdir", "-p", "disk.img:/m/n"},
		{"xattr", "set", "disk.img:/keep/a.txt", "user.x", "1"},
		{"ln", "-s", "t", "disk.img:/s"},
	}
	for _, fault := range []string{"write-eio:0", "write-eio:5", "write-enospc:3", "short-write:2", "flush:0", "flush:1", "read-eio:0"} {
		for _, c := range commands {
			name := fmt.Sprintf("%s/%s", fault, strings.Join(c[:1], ""))
			img := filepath.Join(dir, "disk.img")
			os.Remove(img)
			must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "disk.img"), 0)
			must(t, run(t, dir, "ddfs", "cp", "-a", "src", "disk.img:/keep"), 0)
			r := runEnv(t, dir, []string{"DDFS_FAULT=" + fault}, "ddfs", c...)
			if r.code == 0 {
				// The fault may miss a command that reads or writes little.
				if !strings.HasPrefix(fault, "read") && !strings.HasPrefix(fault, "flush") && !strings.HasSuffix(fault, ":5") {
					t.Errorf("%s: succeeded despite the fault", name)
				}
			} else {
				if r.code != 1 || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "ddfs: "+c[0]+": ") {
					t.Errorf("%s: exit %d, stderr %q: want one 'ddfs: %s: ...' line and exit 1", name, r.code, r.stderr, c[0])
				}
			}
			must(t, run(t, dir, "fsck.ddfs", "disk.img"), 0)
			if r.code != 0 {
				// Old or new state: /keep intact, unless the failed command
				// (rm, mv) had become durable before the error (a failed
				// final flush), in which case its whole effect is there.
				keep := run(t, dir, "ddfs", "cat", "disk.img:/keep/sub/big.bin")
				moved := run(t, dir, "ddfs", "cat", "disk.img:/moved/sub/big.bin")
				want := strings.Repeat("0123456789abcdef", 300000)
				switch {
				case keep.code == 0 && keep.stdout == want:
				case c[0] == "rm" && keep.code != 0 && strings.Contains(run(t, dir, "ddfs", "ls", "disk.img:/").stdout, "keep") == false:
				case c[0] == "mv" && moved.code == 0 && moved.stdout == want:
				default:
					t.Errorf("%s: after the failed command neither the old nor the new state: %q %q", name, keep.stderr, moved.stderr)
				}
			}
		}
	}
}
