package e2e

import (
	"archive/tar"
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ddfs/ddfs/format"
)

// TestTarOutPastBadSectors: `ddfs tar-out` of an image with a small file
// whose data fails its checksum on every copy and a big one with a bad
// sector in the middle goes on as cp -a does: exit 1, one stderr line
// per file (ddfs: tar-out: IMAGE:PATH: reason), the small file left out,
// the big one zeros from its bad block on, every following file in the
// archive with its bytes, and GNU tar reads the archive without a
// complaint; with --stats (one instance, no pipe) the same archive.
func TestTarOutPastBadSectors(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(3, 6))
	want := map[string][]byte{}
	for name, n := range map[string]int{"a/f": 900, "b/g": 84000, "c/big": 3 << 20, "d/h": 5000, "e/i": 300000} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		os.MkdirAll(filepath.Join(dir, "src", filepath.Dir(name)), 0o755)
		os.WriteFile(filepath.Join(dir, "src", name), b, 0o644)
		want[name] = b
	}
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "-r", "src", "bad.img"), 0)
	img := filepath.Join(dir, "bad.img")
	smashDataAt(t, img, "/b/g", 4096)
	smashDataAt(t, img, "/c/big", 1<<20+8192)
	delete(want, "b/g")
	clear(want["c/big"][1<<20+8192:])

	var archives [2][]byte
	for i, args := range [][]string{{"tar-out", "bad.img"}, {"tar-out", "--stats=json", "bad.img"}} {
		cmd := exec.Command(filepath.Join(binDir, "ddfs"), args...)
		cmd.Dir = dir
		res := runCmd(t, cmd)
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(res.stderr), "\n") {
			if strings.HasPrefix(l, "ddfs: tar-out: ") {
				lines = append(lines, l)
			}
		}
		if res.code != 1 || len(lines) != 2 || !strings.HasPrefix(lines[0], "ddfs: tar-out: bad.img:/b/g: ") ||
			!strings.HasPrefix(lines[1], "ddfs: tar-out: bad.img:/c/big: ") {
			t.Fatalf("%q: exit %d, stderr %q: want exit 1 and a line for /b/g and /c/big", args, res.code, res.stderr)
		}
		archives[i] = []byte(res.stdout)
		got := archiveFiles(t, archives[i])
		for name, b := range want {
			if !bytes.Equal(got[name], b) {
				t.Errorf("%q: %s: %d bytes in the archive, not the %d expected", args, name, len(got[name]), len(b))
			}
		}
		if _, ok := got["b/g"]; ok {
			t.Errorf("%q: the unreadable b/g is in the archive", args)
		}
	}
	if !bytes.Equal(archives[0], archives[1]) {
		t.Errorf("tar-out with and without --stats: not the same archive")
	}
	os.WriteFile(filepath.Join(dir, "out.tar"), archives[0], 0o644)
	os.Mkdir(filepath.Join(dir, "x"), 0o755)
	if out, err := exec.Command("tar", "-xf", filepath.Join(dir, "out.tar"), "-C", filepath.Join(dir, "x")).CombinedOutput(); err != nil {
		t.Errorf("GNU tar -xf: %v\n%s", err, out)
	}
}

// archiveFiles reads the regular files of a tar archive: name -> data.
func archiveFiles(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tarEach(t, b, func(h *tar.Header, r io.Reader) {
		if h.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(r)
			if err != nil {
				t.Fatalf("archive %s: %v", h.Name, err)
			}
			files[strings.TrimPrefix(h.Name, "./")] = data
		}
	})
	return files
}

// smashDataAt overwrites every copy of the data sector at byte off of
// file p.
func smashDataAt(t *testing.T, image, p string, off uint64) {
	t.Helper()
	st, ino := openAtIno(t, image, p)
	var x *format.FileExtentItem
	var err error
	err = st.Tree(format.FSTree).Scan(format.Key{ObjectID: ino, Type: format.FileExtentKey}, format.Key{ObjectID: ino, Type: format.FileExtentKey, Offset: off + 1},
		func(it format.Item) (bool, error) {
			x, err = format.UnmarshalFileExtentItem(it.Data)
			if err == nil {
				x.Offset += off - it.Key.Offset
			}
			return true, err
		})
	if err != nil || x == nil || x.Type != format.FileExtentRegular || x.DiskLogical == 0 || x.Compression != format.CompressNone {
		t.Fatalf("extent of %s at %d: %+v %v", p, off, x, err)
	}
	targets, err := st.Vol.Locate(x.DiskLogical + x.Offset)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	fh, err := os.OpenFile(image, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	for _, tg := range targets {
		if _, err := fh.WriteAt([]byte("garbage!"), int64(tg.Physical)); err != nil {
			t.Fatal(err)
		}
	}
}
