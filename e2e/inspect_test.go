package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestInspectCopies: ddfs inspect inode and map name the same copies, and
// fsck.ddfs numbers the copy of a damaged data sector as they do.
func TestInspectCopies(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "-d", "raid1", "-m", "raid1", "a.img", "b.img"), 0)
	data := make([]byte, 40000)
	for i := range data {
		data[i] = byte(i*13 + i/4096)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, run(t, dir, "ddfs", "cp", "./f", "a.img:/f"), 0)
	type loc struct {
		Copy   int    `json:"copy"`
		DevID  uint64 `json:"devid"`
		Path   string `json:"path"`
		Offset uint64 `json:"offset"`
	}
	var in struct {
		Ino     uint64 `json:"ino"`
		Extents []struct {
			Item struct {
				DiskLogical uint64 `json:"disk_logical"`
			} `json:"item"`
			Copies []loc `json:"copies"`
		} `json:"extents"`
	}
	r := must(t, run(t, dir, "ddfs", "inspect", "inode", "--json", "a.img:/f"), 0)
	if err := json.Unmarshal([]byte(r.stdout), &in); err != nil || len(in.Extents) != 1 || len(in.Extents[0].Copies) != 2 {
		t.Fatalf("inspect inode: %v %s", err, r.stdout)
	}
	l := in.Extents[0].Item.DiskLogical
	var m struct{ Copies []loc }
	r = must(t, run(t, dir, "ddfs", "inspect", "map", "--json", "a.img", strconv.FormatUint(l, 10)), 0)
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil || len(m.Copies) != 2 {
		t.Fatalf("inspect map: %v %s", err, r.stdout)
	}
	for i, c := range m.Copies {
		if c != in.Extents[0].Copies[i] || c.Copy != i {
			t.Fatalf("map copy %d %+v, inode says %+v", i, c, in.Extents[0].Copies[i])
		}
	}
	// Damage copy 1 of the first sector: fsck names copy 1 at that place.
	c1 := m.Copies[1]
	flipAt(t, filepath.Join(dir, filepath.Base(c1.Path)), int64(c1.Offset)+5)
	rep := fsckJSON(t, dir, 4, "--check-data", "a.img")
	if len(rep.Problems) != 1 || !rep.Problems[0].is("DATA_COPY_BAD", l, 1) || rep.Problems[0].DevID != c1.DevID ||
		rep.Problems[0].Offset != c1.Offset || rep.Problems[0].Path != "/f" {
		t.Fatalf("fsck: %+v, inspect says copy 1 is %+v", rep.Problems, c1)
	}
	rep = fsckJSON(t, dir, 1, "-p", "--check-data", "a.img")
	if len(rep.Problems) != 1 || !rep.Problems[0].Fixed {
		t.Fatalf("-p: %+v", rep.Problems)
	}
	must(t, run(t, dir, "fsck.ddfs", "--check-data", "a.img"), 0)
	if got := must(t, run(t, dir, "ddfs", "cat", "a.img:/f"), 0).stdout; got != string(data) {
		t.Fatal("the file changed")
	}
	// The other commands answer too.
	must(t, run(t, dir, "ddfs", "inspect", "dump-super", "a.img"), 0)
	must(t, run(t, dir, "ddfs", "inspect", "dump-tree", "--tree", "extent", "--json", "a.img"), 0)
	must(t, run(t, dir, "ddfs", "inspect", "inode", "a.img", strconv.FormatUint(in.Ino, 10)), 0)
	must(t, run(t, dir, "ddfs", "inspect", "nope", "a.img"), 2)
}
