package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCopyOutRefusesOneEntry: `cp -a IMG:/ out` with a symlink already in
// out that leads outside, and with a file whose data fails its checksum
// on every copy: each of those entries is refused with one line naming
// IMAGE:PATH and the host path, nothing is written outside, no partial
// file is left, every other file is copied, and the exit status is 1.
func TestCopyOutRefusesOneEntry(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"src/a", "src/b", "src/c"} {
		os.MkdirAll(filepath.Join(dir, p), 0o755)
	}
	os.WriteFile(filepath.Join(dir, "src/a/f"), []byte("file a/f\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "src/b/g"), []byte(strings.Repeat("file b/g, not inline\n", 4000)), 0o644)
	os.WriteFile(filepath.Join(dir, "src/c/h"), []byte("file c/h\n"), 0o644)
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "disk.img"), 0)
	must(t, run(t, dir, "ddfs", "cp", "-a", "src/a", "src/b", "src/c", "disk.img:/"), 0)

	t.Run("escaping symlink in the destination", func(t *testing.T) {
		os.MkdirAll(filepath.Join(dir, "outside"), 0o755)
		os.MkdirAll(filepath.Join(dir, "out1"), 0o755)
		os.Symlink("../outside", filepath.Join(dir, "out1/b"))
		r := run(t, dir, "ddfs", "cp", "-a", "disk.img:/", "out1")
		oneLine(t, r, "cp", "disk.img:/b")
		if !strings.Contains(r.stderr, filepath.Join("out1", "b")) {
			t.Errorf("stderr %q does not name the host path out1/b", r.stderr)
		}
		if ents, _ := os.ReadDir(filepath.Join(dir, "outside")); len(ents) != 0 {
			t.Errorf("written outside the destination: %v", ents)
		}
		for _, p := range []string{"out1/a/f", "out1/c/h"} {
			if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
				t.Errorf("%s not copied: %v", p, err)
			}
		}
	})

	t.Run("unreadable file", func(t *testing.T) {
		img := filepath.Join(dir, "bad.img")
		b, _ := os.ReadFile(filepath.Join(dir, "disk.img"))
		os.WriteFile(img, b, 0o644)
		smashData(t, img, "/b/g")
		r := run(t, dir, "ddfs", "cp", "-a", "bad.img:/", "out2")
		oneLine(t, r, "cp", "bad.img:/b/g")
		if !strings.Contains(r.stderr, filepath.Join("out2", "b", "g")) {
			t.Errorf("stderr %q does not name the host path out2/b/g", r.stderr)
		}
		if _, err := os.Lstat(filepath.Join(dir, "out2/b/g")); err == nil {
			t.Errorf("partial file out2/b/g left behind")
		}
		for _, p := range []string{"out2/a/f", "out2/c/h"} {
			if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
				t.Errorf("%s not copied: %v", p, err)
			}
		}
	})
}

// smashData overwrites every copy of the first data sector of file p.
func smashData(t *testing.T, image, p string) { smashDataAt(t, image, p, 0) }
