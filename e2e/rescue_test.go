package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rescueReport is ddfs rescue --json.
type rescueReport struct {
	RootsFrom string `json:"roots_from"`
	Files     int    `json:"files"`
	Bytes     uint64 `json:"bytes"`
	NodesLost int    `json:"nodes_lost"`
	NotRead   []struct {
		Path  string `json:"path"`
		Error string `json:"error"`
	} `json:"not_read"`
}

// TestRescue: ddfs rescue on a healthy image copies the tree (exit 0);
// with the fs tree's root node lost on every copy and one file's data
// bad on every copy it still copies every other file byte for byte,
// names the bad file on stderr (ddfs: rescue: IMAGE:PATH: reason) and in
// --json's not_read, exits 1, and leaves the image file unchanged.
func TestRescue(t *testing.T) {
	dir := t.TempDir()
	src := rescueSource(t, filepath.Join(dir, "pkg"))
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "d.img"), 0)
	must(t, run(t, dir, "ddfs", "cp", "-a", src, "d.img:/"), 0)
	want := hostFiles(t, src)

	var rep rescueReport
	r := must(t, run(t, dir, "ddfs", "rescue", "--json", "d.img", "good"), 0)
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Files != len(want) || len(rep.NotRead) != 0 || rep.RootsFrom != "superblock" {
		t.Fatalf("healthy rescue: %v %+v", err, rep)
	}
	rescuedAsWas(t, want, filepath.Join(dir, "good/pkg"), "")

	bad := "/pkg/d2/f200" // 13,500 bytes: a data extent, not inline
	flipFileData(t, dir, "d.img", bad)
	loseFSRoot(t, dir, "d.img")
	before := digest(t, filepath.Join(dir, "d.img"))
	r = run(t, dir, "ddfs", "rescue", "d.img", "out")
	if r.code != 1 || !strings.Contains(r.stderr, "ddfs: rescue: d.img:"+bad+": ") || !strings.Contains(r.stderr, "checksum") ||
		!strings.HasPrefix(r.stdout, "rescue d.img: ") {
		t.Fatalf("rescue of the damaged image: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	if digest(t, filepath.Join(dir, "d.img")) != before {
		t.Fatal("rescue changed the image")
	}
	rescuedAsWas(t, want, filepath.Join(dir, "out/pkg"), strings.TrimPrefix(bad, "/pkg/"))
	if _, err := os.Lstat(filepath.Join(dir, "out", bad)); err == nil {
		t.Errorf("%s with bad data was written", bad)
	}

	r = run(t, dir, "ddfs", "rescue", "--json", "d.img", "again")
	json.Unmarshal([]byte(r.stdout), &rep)
	if r.code != 1 || rep.NodesLost == 0 || rep.Files != len(want)-1 || !notRead(rep, bad) {
		t.Fatalf("rescue --json: exit %d %+v", r.code, rep)
	}
}

// rescueSource writes 300 files in 6 folders, enough names for a
// two-level fs tree, their bytes from their names.
func rescueSource(t *testing.T, root string) string {
	t.Helper()
	for i := 0; i < 300; i++ {
		p := filepath.Join(root, fmt.Sprintf("d%d/f%03d", i%6, i))
		b := make([]byte, 100+i*67)
		for j := range b {
			b[j] = byte(i*7 + j*13 + j/4096)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func notRead(rep rescueReport, p string) bool {
	for _, n := range rep.NotRead {
		if n.Path == p && strings.Contains(n.Error, "checksum") {
			return true
		}
	}
	return false
}

// loseFSRoot flips a byte in every copy of the fs tree's root node.
func loseFSRoot(t *testing.T, dir, img string) {
	t.Helper()
	in := getInfo(t, dir, img)
	for _, r := range in.Roots {
		if r.Tree == "fs" {
			_, offs := physical(in, r.Logical)
			for _, o := range offs {
				flipAt(t, filepath.Join(dir, img), int64(o)+200)
			}
			return
		}
	}
	t.Fatal("no fs root")
}

// flipFileData flips a byte of the first extent of p on every copy.
func flipFileData(t *testing.T, dir, img, p string) {
	t.Helper()
	var in struct {
		Extents []struct {
			Copies []struct {
				Path   string `json:"path"`
				Offset uint64 `json:"offset"`
			} `json:"copies"`
		} `json:"extents"`
	}
	r := must(t, run(t, dir, "ddfs", "inspect", "inode", "--json", img+":"+p), 0)
	if err := json.Unmarshal([]byte(r.stdout), &in); err != nil || len(in.Extents) == 0 {
		t.Fatalf("inspect inode %s: %v %s", p, err, r.stdout)
	}
	for _, c := range in.Extents[0].Copies {
		flipAt(t, filepath.Join(dir, filepath.Base(c.Path)), int64(c.Offset)+5)
	}
}

// hostFiles maps each regular file under root (relative) to its bytes.
func hostFiles(t *testing.T, root string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		out[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// rescuedAsWas checks every file of want under dir, but skip, byte for byte.
func rescuedAsWas(t *testing.T, want map[string][]byte, dir, skip string) {
	t.Helper()
	for rel, b := range want {
		if rel == skip {
			continue
		}
		if got, err := os.ReadFile(filepath.Join(dir, rel)); err != nil || !bytes.Equal(got, b) {
			t.Errorf("%s: not rescued as it was (%v)", rel, err)
		}
	}
}
