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
