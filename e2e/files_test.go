package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func runEnv(t *testing.T, dir string, env []string, name string, args ...string) result {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, name), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	r := result{stdout: o.String(), stderr: e.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

func sampleTree(t *testing.T, dir string) {
	t.Helper()
	os.MkdirAll(filepath.Join(dir, "src/sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "src/a.txt"), []byte("alpha\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "src/sub/big.bin"), bytes.Repeat([]byte("0123456789abcdef"), 300000), 0o600)
	os.Symlink("a.txt", filepath.Join(dir, "src/link"))
	os.Link(filepath.Join(dir, "src/a.txt"), filepath.Join(dir, "src/sub/hard"))
}

// TestReproducibleImages: -U and SOURCE_DATE_EPOCH make two mkfs -r runs
// byte-identical.
func TestReproducibleImages(t *testing.T) {
	dir := t.TempDir()
	sampleTree(t, dir)
	env := []string{"SOURCE_DATE_EPOCH=1700000000"}
	// Same name in two folders: the name is recorded as a path hint.
	for _, sub := range []string{"one", "two"} {
		os.Mkdir(filepath.Join(dir, sub), 0o755)
		must(t, runEnv(t, filepath.Join(dir, sub), env, "mkfs.ddfs", "-q", "-b", "256M", "-U", "c0ffee00-1234-4321-8888-000000000001", "-r", "../src", "disk.img"), 0)
	}
	a, _ := os.ReadFile(filepath.Join(dir, "one/disk.img"))
	b, _ := os.ReadFile(filepath.Join(dir, "two/disk.img"))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatal("two runs produced different images")
	}
	must(t, run(t, dir, "fsck.ddfs", "one/disk.img"), 0)
}

// TestCLIRoundTrip drives the file commands end to end.
func TestCLIRoundTrip(t *testing.T) {
	dir := t.TempDir()
	sampleTree(t, dir)
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "disk.img"), 0)
	must(t, run(t, dir, "ddfs", "cp", "-a", "src", "disk.img:/"), 0)
	ls := must(t, run(t, dir, "ddfs", "ls", "disk.img:/src"), 0)
	if ls.stdout != "a.txt\nlink\nsub\n" {
		t.Fatalf("ls: %q", ls.stdout)
	}
	if r := must(t, run(t, dir, "ddfs", "cat", "disk.img:/src/link"), 0); r.stdout != "alpha\n" {
		t.Fatalf("cat through symlink: %q", r.stdout)
	}
	var st struct {
		Nlink  int    `json:"nlink"`
		Type   string `json:"type"`
		Target string `json:"target"`
	}
	json.Unmarshal([]byte(must(t, run(t, dir, "ddfs", "stat", "--json", "disk.img:/src/sub/hard"), 0).stdout), &st)
	if st.Nlink != 2 || st.Type != "regular file" {
		t.Fatalf("stat: %+v", st)
	}
	must(t, run(t, dir, "ddfs", "mkdir", "-p", "disk.img:/x/y/z"), 0)
	must(t, run(t, dir, "ddfs", "mv", "disk.img:/src/a.txt", "disk.img:/x/y/z"), 0)
	must(t, run(t, dir, "ddfs", "ln", "-s", "z/a.txt", "disk.img:/x/y/s"), 0)
	must(t, run(t, dir, "ddfs", "touch", "disk.img:/x/new"), 0)
	must(t, run(t, dir, "ddfs", "chmod", "600", "disk.img:/x/new"), 0)
	must(t, run(t, dir, "ddfs", "chown", "12:34", "disk.img:/x/new"), 0)
	must(t, run(t, dir, "ddfs", "xattr", "set", "disk.img:/x/new", "user.k", "v"), 0)
	if r := must(t, run(t, dir, "ddfs", "xattr", "get", "disk.img:/x/new", "user.k"), 0); r.stdout != "v\n" {
		t.Fatalf("xattr get %q", r.stdout)
	}
	if r := must(t, run(t, dir, "ddfs", "ls", "-l", "disk.img:/x/new"), 0); !strings.HasPrefix(r.stdout, "-rw------- 1 12 34 ") {
		t.Fatalf("ls -l %q", r.stdout)
	}
	must(t, run(t, dir, "ddfs", "cp", "disk.img:/x/y/z/a.txt", "disk.img:/x/copy"), 0)
	r := must(t, run(t, dir, "ddfs", "rm", "disk.img:/x"), 1)
	if !strings.Contains(r.stderr, "disk.img:/x: Is a directory") {
		t.Fatalf("rm dir: %q", r.stderr)
	}
	r = must(t, run(t, dir, "ddfs", "cat", "disk.img:/nope"), 1)
	if r.stderr != "ddfs: cat: disk.img:/nope: No such file or directory\n" {
		t.Fatalf("cat missing: %q", r.stderr)
	}
	must(t, run(t, dir, "fsck.ddfs", "disk.img"), 0)
	// Out again, and through tar.
	must(t, run(t, dir, "ddfs", "cp", "-a", "disk.img:/src", "out"), 0)
	big, _ := os.ReadFile(filepath.Join(dir, "out/sub/big.bin"))
	if !bytes.Equal(big, bytes.Repeat([]byte("0123456789abcdef"), 300000)) {
		t.Fatal("big.bin differs after the round trip")
	}
	tarOut := runEnv(t, dir, nil, "ddfs", "tar-out", "disk.img:/x")
	must(t, tarOut, 0)
	cmd := exec.Command(filepath.Join(binDir, "mkfs.ddfs"), "-q", "-b", "256M", "--tar", "-", "fromtar.img")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(tarOut.stdout)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mkfs --tar: %v %s", err, out)
	}
	if r := must(t, run(t, dir, "ddfs", "cat", "fromtar.img:/y/s"), 0); r.stdout != "alpha\n" {
		t.Fatalf("after tar: %q", r.stdout)
	}
	must(t, run(t, dir, "ddfs", "rm", "-r", "disk.img:/x", "disk.img:/src"), 0)
	if r := must(t, run(t, dir, "ddfs", "ls", "disk.img:/"), 0); r.stdout != "" {
		t.Fatalf("after rm -r: %q", r.stdout)
	}
	must(t, run(t, dir, "fsck.ddfs", "disk.img"), 0)
}

// TestImageFull: a full image fails with ENOSPC naming the file; the
// files copied before it stay intact and fsck is clean.
func TestImageFull(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "in"), 0o755)
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		os.WriteFile(filepath.Join(dir, "in", n), bytes.Repeat([]byte(n), 12<<20), 0o644)
	}
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "64M", "small.img"), 0)
	r := must(t, run(t, dir, "ddfs", "cp", "-r", "in", "small.img:/"), 1)
	if !strings.Contains(r.stderr, "No space left on device") || !strings.Contains(r.stderr, "small.img:/in/") {
		t.Fatalf("stderr %q", r.stderr)
	}
	must(t, run(t, dir, "fsck.ddfs", "small.img"), 0)
}

// TestShrink: --shrink truncates the image to what it holds.
func TestShrink(t *testing.T) {
	dir := t.TempDir()
	sampleTree(t, dir)
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "4G", "--shrink", "-r", "src", "s.img"), 0)
	st, _ := os.Stat(filepath.Join(dir, "s.img"))
	if st.Size() > 96<<20 {
		t.Fatalf("shrunk image is %d bytes", st.Size())
	}
	must(t, run(t, dir, "fsck.ddfs", "s.img"), 0)
	r := must(t, run(t, dir, "ddfs", "cat", "s.img:/sub/big.bin"), 0)
	if r.stdout != strings.Repeat("0123456789abcdef", 300000) {
		t.Fatal("content changed by --shrink")
	}
	// A shrunk image is full: more data fits or fails cleanly.
	r = run(t, dir, "ddfs", "cp", "src/sub/big.bin", "s.img:/again")
	if r.code != 0 && !strings.Contains(r.stderr, "No space left on device") {
		t.Fatalf("cp into a shrunk image: %d %q", r.code, r.stderr)
	}
	must(t, run(t, dir, "fsck.ddfs", "s.img"), 0)
}
