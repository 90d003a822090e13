package e2e

import (
	"os"
	"path/filepath"
	"testing"
)

// copyOn returns the physical offset of logical's copy on device devid.
func copyOn(t *testing.T, in info, logical, devid uint64) int64 {
	t.Helper()
	devs, offs := physical(in, logical)
	for i, d := range devs {
		if d == devid {
			return int64(offs[i])
		}
	}
	t.Fatalf("logical %d has no copy on device %d", logical, devid)
	return 0
}

func rootOf(t *testing.T, in info, tree string) uint64 {
	t.Helper()
	for _, r := range in.Roots {
		if r.Tree == tree {
			return r.Logical
		}
	}
	t.Fatalf("no %s root", tree)
	return 0
}

// TestFsckSpreadSet: a set spread over folders, its second member found
// only by its path hint. fsck checks the chunk-tree copy on that member
// and -y repairs it; fsck of the set copied to other folders refuses (the
// copy's hints name the original set, which must stay untouched).
func TestFsckSpreadSet(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"x", "y", "c/x", "c/y"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "-m", "raid1", "-d", "raid1", "x/a.img", "y/b.img"), 0)
	must(t, run(t, dir, "ddfs", "mkdir", "x/a.img:/d"), 0)
	chunkRoot := rootOf(t, getInfo(t, dir, "x/a.img"), "chunk")
	flipAt(t, filepath.Join(dir, "y/b.img"), copyOn(t, getInfo(t, dir, "x/a.img"), chunkRoot, 2)+100)

	rep := fsckJSON(t, dir, 4, "x/a.img")
	if len(rep.Problems) != 1 || !rep.Problems[0].is("NODE_COPY_BAD", chunkRoot, 1) || rep.Problems[0].DevID != 2 {
		t.Fatalf("problems %+v", rep.Problems)
	}
	// The copies go elsewhere before the repair: they keep the damage.
	copyFile(t, filepath.Join(dir, "x/a.img"), filepath.Join(dir, "c/x/a.img"))
	copyFile(t, filepath.Join(dir, "y/b.img"), filepath.Join(dir, "c/y/b.img"))
	rep = fsckJSON(t, dir, 1, "-y", "x/a.img")
	if len(rep.Problems) != 1 || !rep.Problems[0].Fixed {
		t.Fatalf("-y: problems %+v", rep.Problems)
	}
	must(t, run(t, dir, "fsck.ddfs", "x/a.img"), 0)

	sumA, sumB := digest(t, filepath.Join(dir, "x/a.img")), digest(t, filepath.Join(dir, "y/b.img"))
	for _, args := range [][]string{{"c/x/a.img"}, {"-y", "c/x/a.img"}} {
		if r := must(t, run(t, dir, "fsck.ddfs", args...), 8); !names(r, "c/x/a.img", filepath.Join(dir, "x/a.img")) {
			t.Fatalf("fsck %v: %q", args, r.stderr)
		}
	}
	if digest(t, filepath.Join(dir, "x/a.img")) != sumA || digest(t, filepath.Join(dir, "y/b.img")) != sumB {
		t.Fatal("the original set was written")
	}
}

// spreadSet makes a two-device raid1 set spread over folders (the second
// member below the first one's folder, with a relative hint) and a copy
// of both files in copy/ with the same layout, and returns a check that
// the original is untouched.
func spreadSet(t *testing.T, dir string) (untouched func(string)) {
	t.Helper()
	for _, d := range []string{"orig/elsewhere", "copy/elsewhere"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "-m", "raid1", "-d", "raid1", "orig/a.img", "orig/elsewhere/b.img"), 0)
	must(t, run(t, dir, "ddfs", "mkdir", "orig/a.img:/orig"), 0)
	files := []string{"a.img", "elsewhere/b.img"}
	sums := map[string][32]byte{}
	for _, f := range files {
		copyFile(t, filepath.Join(dir, "orig", f), filepath.Join(dir, "copy", f))
		sums[f] = digest(t, filepath.Join(dir, "orig", f))
	}
	return func(when string) {
		t.Helper()
		for _, f := range files {
			if digest(t, filepath.Join(dir, "orig", f)) != sums[f] {
				t.Fatalf("%s: the original %s was written", when, f)
			}
		}
	}
}

// TestCopiedSetAllNamed: a copy of a set spread over folders opens with
// every member named (the copy's own hints name the original and are not
// used), writes and checks clean; naming one member is still refused.
func TestCopiedSetAllNamed(t *testing.T) {
	dir := t.TempDir()
	untouched := spreadSet(t, dir)
	r := must(t, run(t, dir, "ddfs", "mkdir", "copy/a.img:/x"), 1)
	if !names(r, "copy/a.img", filepath.Join(dir, "orig/a.img"), "--device") {
		t.Fatalf("one named: %q", r.stderr)
	}
	untouched("one named")
	both := []string{"--device", "copy/elsewhere/b.img", "copy/a.img"}
	must(t, run(t, dir, "ddfs", "mkdir", "--device", "copy/elsewhere/b.img", "copy/a.img:/x"), 0)
	must(t, run(t, dir, "fsck.ddfs", both...), 0)
	if got := must(t, run(t, dir, "ddfs", "ls", "--device", "copy/elsewhere/b.img", "copy/a.img:/"), 0).stdout; got != "orig\nx\n" {
		t.Fatalf("copy lists %q", got)
	}
	untouched("both named")
	if got := must(t, run(t, dir, "ddfs", "ls", "orig/a.img:/"), 0).stdout; got != "orig\n" {
		t.Fatalf("original lists %q", got)
	}
}

// TestCopiedSetSecondMember: the copy opened from its second member (in
// a subfolder, relative hint) follows the first member's absolute hint
// to the original a.img; next to it the original b.img is found, so the
// copy is refused instead of being written together with the original.
func TestCopiedSetSecondMember(t *testing.T) {
	dir := t.TempDir()
	untouched := spreadSet(t, dir)
	orig := filepath.Join(dir, "orig/elsewhere/b.img")
	if r := must(t, run(t, dir, "ddfs", "mkdir", "copy/elsewhere/b.img:/y"), 1); !names(r, "copy/elsewhere/b.img", orig) {
		t.Fatalf("mkdir: %q", r.stderr)
	}
	if r := must(t, run(t, dir, "fsck.ddfs", "-y", "copy/elsewhere/b.img"), 8); !names(r, "copy/elsewhere/b.img", orig) {
		t.Fatalf("fsck: %q", r.stderr)
	}
	untouched("opened from the second member")
	// The original opens from its second member, and so does the copy with both named.
	must(t, run(t, dir, "ddfs", "mkdir", "orig/elsewhere/b.img:/y"), 0)
	must(t, run(t, dir, "fsck.ddfs", "orig/elsewhere/b.img"), 0)
	must(t, run(t, dir, "ddfs", "mkdir", "--device", "copy/a.img", "copy/elsewhere/b.img:/y"), 0)
}
