package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestSeveralSourcesNeedDir: cp, mv and ln with several sources refuse a
// target that is not a directory, or does not exist, as GNU cp does: one
// line naming it, exit 1, and nothing changed (GNU cp on the host is the
// model for the exit status).
func TestSeveralSourcesNeedDir(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a", "b", "file"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(n+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gnu := exec.Command("cp", "a", "b", "file")
	gnu.Dir = dir
	if r := runCmd(t, gnu); r.code != 1 {
		t.Fatalf("GNU cp a b file: exit %d, the model is 1", r.code)
	}
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "d.img"), 0)
	must(t, run(t, dir, "ddfs", "cp", "a", "b", "file", "d.img:/"), 0)
	for _, c := range [][]string{
		{"cp", "a", "b", "d.img:/file"},
		{"cp", "a", "b", "d.img:/missing"},
		{"cp", "d.img:/a", "d.img:/b", "d.img:/file"},
		{"cp", "d.img:/a", "b", "d.img:/missing"},
		{"mv", "d.img:/a", "d.img:/b", "d.img:/file"},
		{"mv", "d.img:/a", "d.img:/b", "d.img:/missing"},
		{"ln", "d.img:/a", "d.img:/b", "d.img:/file"},
		{"ln", "-s", "a", "b", "d.img:/missing"},
	} {
		target := c[len(c)-1]
		r := must(t, run(t, dir, "ddfs", c...), 1)
		if want := "ddfs: " + c[0] + ": target '" + target + "' is not a directory\n"; r.stderr != want {
			t.Errorf("%v: %q, want %q", c, r.stderr, want)
		}
		if r := must(t, run(t, dir, "ddfs", "ls", "d.img:/"), 0); r.stdout != "a\nb\nfile\n" {
			t.Errorf("%v changed the image: ls / is %q", c, r.stdout)
		}
		if r := must(t, run(t, dir, "ddfs", "cat", "d.img:/file"), 0); r.stdout != "file\n" {
			t.Errorf("%v changed /file: %q", c, r.stdout)
		}
	}
	// Into a directory they all work.
	must(t, run(t, dir, "ddfs", "mkdir", "d.img:/cp", "d.img:/ln", "d.img:/mv"), 0)
	must(t, run(t, dir, "ddfs", "cp", "a", "d.img:/b", "d.img:/cp"), 0)
	must(t, run(t, dir, "ddfs", "ln", "d.img:/a", "d.img:/b", "d.img:/ln"), 0)
	must(t, run(t, dir, "ddfs", "mv", "d.img:/a", "d.img:/b", "d.img:/mv"), 0)
	for _, d := range []string{"cp", "ln", "mv"} {
		if r := must(t, run(t, dir, "ddfs", "ls", "d.img:/"+d), 0); r.stdout != "a\nb\n" {
			t.Errorf("%s into a directory: %q", d, r.stdout)
		}
	}
	must(t, run(t, dir, "fsck.ddfs", "d.img"), 0)
}

// TestCreateOperandsLiteral: an operand naming something to create
// (touch, mkdir, ln, the targets of cp, mv and tar-in) is never a
// pattern, even where it would match: touch 'IMG:/a[1]' makes a[1] beside
// a1. Operands naming what exists still expand (mv sources, cat), and a
// name that is no valid pattern ("x[\") reads as itself.
func TestCreateOperandsLiteral(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "h"), []byte("host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sh(t, dir, "mkdir t && echo in > t/f && tar -cf x.tar -C t .")
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "d.img"), 0)
	must(t, run(t, dir, "ddfs", "touch", "d.img:/a1", "d.img:/s1", "d.img:/s2"), 0)
	must(t, run(t, dir, "ddfs", "mkdir", "d.img:/c1", "d.img:/d1", "d.img:/m1", "d.img:/t1"), 0)
	must(t, run(t, dir, "ddfs", "touch", "d.img:/a[1]", `d.img:/x[\`, "d.img:/*"), 0)
	// Setting times, a[1] is still the name, not a pattern matching a1.
	must(t, run(t, dir, "ddfs", "touch", "-d", "@1000", "d.img:/a[1]"), 0)
	if a, b := statOf(t, dir, "d.img:/a1"), statOf(t, dir, `d.img:/a\[1\]`); a[:5] == "1000 " || b[:5] != "1000 " {
		t.Errorf("touch -d @1000 a[1]: a1 %q, a[1] %q", a, b)
	}
	must(t, run(t, dir, "ddfs", "mkdir", "d.img:/d[1]"), 0)
	must(t, run(t, dir, "ddfs", "ln", "d.img:/a1", "d.img:/l[1]"), 0)
	must(t, run(t, dir, "ddfs", "cp", "h", "d.img:/c[1]"), 0)
	must(t, runFileIn(t, dir, "x.tar", "ddfs", "tar-in", "d.img:/t[1]"), 0)
	must(t, run(t, dir, "ddfs", "mv", "d.img:/s?", "d.img:/m1"), 0)
	must(t, run(t, dir, "ddfs", "mv", "d.img:/m1/s1", "d.img:/m[1]"), 0)
	want := "*\na1\na[1]\nc1\nc[1]\nd1\nd[1]\nl[1]\nm1\nm[1]\nt1\nt[1]\nx[\\\n"
	if r := must(t, run(t, dir, "ddfs", "ls", "d.img:/"), 0); r.stdout != want {
		t.Errorf("ls /: %q, want %q", r.stdout, want)
	}
	for p, want := range map[string]string{"/m1": "s2\n", "/c1": "", "/t1": "", "/d1": "", `/t\[1\]`: "f\n"} {
		if r := must(t, run(t, dir, "ddfs", "ls", "d.img:"+p), 0); r.stdout != want {
			t.Errorf("ls %s: %q, want %q", p, r.stdout, want)
		}
	}
	// Read, c[1] is a pattern (it matches the directory c1): escaped, the file.
	if r := must(t, run(t, dir, "ddfs", "cat", `d.img:/c\[1\]`), 0); r.stdout != "host\n" {
		t.Errorf(`cat c\[1\]: %q`, r.stdout)
	}
	must(t, run(t, dir, "ddfs", "cat", `d.img:/x[\`), 0)
	must(t, run(t, dir, "fsck.ddfs", "d.img"), 0)
}

// TestColonImageName: an image whose file name holds a colon is named
// IMAGE:PATH when no file is named by the text before its first colon:
// the image is the first colon-ended prefix that names a file. Every form
// that worked before still does (d.img:/x, d.img:x, d.img, ./x:y a host
// path), and a missing image is named whole in the error.
func TestColonImageName(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x:y"), []byte("host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "co:lon.img"), 0)
	must(t, run(t, dir, "ddfs", "cp", "./x:y", "co:lon.img:/"), 0)
	must(t, run(t, dir, "ddfs", "cp", "./x:y", "co:lon.img:/a:b"), 0)
	must(t, run(t, dir, "ddfs", "mkdir", "co:lon.img:d"), 0)
	for _, a := range []string{"co:lon.img:/", "co:lon.img:", "co:lon.img"} {
		if r := must(t, run(t, dir, "ddfs", "ls", a), 0); r.stdout != "a:b\nd\nx:y\n" {
			t.Errorf("ls %s: %q", a, r.stdout)
		}
	}
	if r := must(t, run(t, dir, "ddfs", "cat", "co:lon.img:/a:b"), 0); r.stdout != "host\n" {
		t.Errorf("cat: %q", r.stdout)
	}
	if r := must(t, run(t, dir, "ddfs", "find", "co:lon.img:/", "-name", "*:*"), 0); r.stdout != "/a:b\n/x:y\n" {
		t.Errorf("find: %q", r.stdout)
	}
	must(t, run(t, dir, "ddfs", "cp", "co:lon.img:/a:b", "out"), 0)
	if b, err := os.ReadFile(filepath.Join(dir, "out")); err != nil || string(b) != "host\n" {
		t.Errorf("cp out: %q %v", b, err)
	}
	must(t, run(t, dir, "ddfs", "info", "co:lon.img"), 0)
	// Errors name the image once, a colon in the path or not, the image
	// given by an absolute path (the source of a copy between images) too.
	if r := must(t, run(t, dir, "ddfs", "cat", "co:lon.img:/a:c"), 1); r.stderr != "ddfs: cat: co:lon.img:/a:c: No such file or directory\n" {
		t.Errorf("cat a missing a:c: %q", r.stderr)
	}
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "d.img"), 0)
	abs := filepath.Join(dir, "co:lon.img")
	if r := must(t, run(t, dir, "ddfs", "cp", abs+":/nope", "d.img:/"), 1); r.stderr != "ddfs: cp: "+abs+":/nope: No such file or directory\n" {
		t.Errorf("cp from %s:/nope: %q", abs, r.stderr)
	}
	must(t, run(t, dir, "fsck.ddfs", "co:lon.img"), 0)
	// A file named by the text before the first colon is the image, as
	// before: "co" then holds the rest as a path.
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "co"), 0)
	r := must(t, run(t, dir, "ddfs", "ls", "co:lon.img:/"), 1)
	if r.stderr != "ddfs: ls: co:/lon.img:/: No such file or directory\n" {
		t.Errorf("with a file co: %q", r.stderr)
	}
	r = must(t, run(t, dir, "ddfs", "ls", "no:such.img:/"), 1)
	if r.stderr != "ddfs: ls: no:such.img: No such file or directory\n" {
		t.Errorf("a missing image: %q", r.stderr)
	}
}
