package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestTarParents: archives GNU tar made without entries for the parents
// of their files (tar -cf x.tar src/sub/a.txt) extract with ddfs tar-in
// and build with mkfs.ddfs --tar, as GNU tar extracts them: the parents
// are made (0755, the user's, mkfs's time rule: SOURCE_DATE_EPOCH), and
// an entry for one later in the archive sets its metadata.
func TestTarParents(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "src/sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "src/sub/a.txt"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sh(t, dir, `tar -cf x.tar src/sub/a.txt
chmod 700 src/sub && touch -d @1000 src/sub
tar -cf late.tar --no-recursion src/sub/a.txt src/sub`)
	me := fmt.Sprintf("%d %d", os.Getuid(), os.Getgid())

	env := []string{"SOURCE_DATE_EPOCH=1700000000"}
	must(t, runEnv(t, dir, env, "mkfs.ddfs", "-q", "-b", "256M", "--tar", "x.tar", "m.img"), 0)
	for _, p := range []string{"m.img:/src", "m.img:/src/sub"} {
		if got, want := statOf(t, dir, p), "1700000000 755 "+me; got != want {
			t.Errorf("mkfs --tar: %s: %s, want %s", p, got, want)
		}
	}
	if r := must(t, run(t, dir, "ddfs", "cat", "m.img:/src/sub/a.txt"), 0); r.stdout != "hi\n" {
		t.Errorf("mkfs --tar: a.txt holds %q", r.stdout)
	}
	must(t, run(t, dir, "fsck.ddfs", "m.img"), 0)

	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "d.img"), 0)
	must(t, runFileIn(t, dir, "x.tar", "ddfs", "tar-in", "d.img:/opt"), 0)
	if r := must(t, run(t, dir, "ddfs", "cat", "d.img:/opt/src/sub/a.txt"), 0); r.stdout != "hi\n" {
		t.Errorf("tar-in: a.txt holds %q", r.stdout)
	}
	must(t, runFileIn(t, dir, "late.tar", "ddfs", "tar-in", "d.img:/late"), 0)
	if got, want := statOf(t, dir, "d.img:/late/src/sub"), "1000 700 "+me; got != want {
		t.Errorf("tar-in: /late/src/sub after its own entry: %s, want %s", got, want)
	}
	for _, p := range []string{"d.img:/opt/src", "d.img:/late/src"} {
		if got := statOf(t, dir, p); got[len(got)-len(me)-4:] != "755 "+me {
			t.Errorf("tar-in: %s: %s, want mode 755 owner %s", p, got, me)
		}
	}
	must(t, run(t, dir, "fsck.ddfs", "d.img"), 0)
}
