package transfer

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// TestCopyOutWriterOrder: a tree whose small files go through the
// writer in many batches, with big files copied beside them, hard links
// across folders (to small and big files) and folder times set in the
// image: cp -a gives every file its bytes, every link its first copy,
// and every folder the image's mtime, set after everything in it was
// made (a folder's time set before its last file would move on).
func TestCopyOutWriterOrder(t *testing.T) {
	f := newFS(t, 256<<20)
	want := map[string][]byte{}
	for d := range 4 {
		dir := fmt.Sprintf("/d%d", d)
		if _, err := f.Mkdir(dir, fsys.Attr{Mode: 0o755}); err != nil {
			t.Fatal(err)
		}
		for i := range 300 {
			p := fmt.Sprintf("%s/f%03d", dir, i)
			data := bytes.Repeat([]byte{byte(d), byte(i)}, 1+i*7)
			if i%100 == 99 {
				data = bytes.Repeat([]byte{byte(i), 7}, outJobMax/2+1) // over outJobMax: copied by the walk
			}
			in, err := f.Create(p, fsys.Attr{Mode: 0o644})
			if err != nil {
				t.Fatal(err)
			}
			if err := f.WriteAt(in, data, 0); err != nil {
				t.Fatal(err)
			}
			want[p] = data
		}
	}
	for _, l := range [][2]string{{"/d0/f001", "/d3/l1"}, {"/d1/f099", "/d2/l99"}, {"/d3/f250", "/d0/l250"}} {
		if err := f.Link(l[0], l[1]); err != nil {
			t.Fatal(err)
		}
		want[l[1]] = want[l[0]]
	}
	mtimes := map[string]int64{}
	for d := range 4 {
		dir := fmt.Sprintf("/d%d", d)
		ts := format.Timespec{Sec: 1_600_000_000 + int64(d)*1000, Nsec: 123}
		if err := f.Setattr(dir, fsys.SetAttr{Mtime: &ts, Atime: &ts}); err != nil {
			t.Fatal(err)
		}
		mtimes[dir] = ts.Sec*1e9 + int64(ts.Nsec)
	}
	out := filepath.Join(t.TempDir(), "out")
	if err := CopyOut(f, "/", out, Options{Recursive: true, Archive: true}); err != nil {
		t.Fatal(err)
	}
	for p, data := range want {
		got, err := os.ReadFile(filepath.Join(out, p))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: %d bytes, %v; want %d", p, len(got), err, len(data))
		}
	}
	for _, l := range [][2]string{{"/d0/f001", "/d3/l1"}, {"/d1/f099", "/d2/l99"}, {"/d3/f250", "/d0/l250"}} {
		var a, b syscall.Stat_t
		syscall.Stat(filepath.Join(out, l[0]), &a)
		syscall.Stat(filepath.Join(out, l[1]), &b)
		if a.Ino != b.Ino || a.Nlink != 2 {
			t.Errorf("%s and %s: inodes %d and %d, nlink %d", l[0], l[1], a.Ino, b.Ino, a.Nlink)
		}
	}
	for dir, mt := range mtimes {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(out, dir), &st); err != nil || st.Mtim.Nano() != mt {
			t.Errorf("%s: mtime %d, want %d (%v)", dir, st.Mtim.Nano(), mt, err)
		}
	}
}
