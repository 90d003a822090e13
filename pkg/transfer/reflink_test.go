package transfer

import (
	"bytes"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/check"
	"github.com/ddfs/ddfs/pkg/dedupe"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
)

func pattern(seed byte, n int) []byte {
	b := make([]byte, n)
	x := uint32(seed) + 1
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x>>24) | 1
	}
	return b
}

func physical(t *testing.T, f *fsys.FS) uint64 {
	t.Helper()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	st, err := dedupe.GetStatus(f.Store())
	if err != nil {
		t.Fatal(err)
	}
	return st.PhysicalBytes
}

func readFile(t *testing.T, f *fsys.FS, p string) []byte {
	t.Helper()
	in, err := f.Resolve(p, false)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, in.Size)
	if n, err := f.ReadAt(in, b, 0); n != len(b) && err != nil {
		t.Fatal(err)
	}
	return b
}

// twoWrites makes /d/big (three extents and a hole) and /d/small (inline).
func twoWrites(t *testing.T, f *fsys.FS) map[string][]byte {
	if _, err := f.Mkdir("/d", fsys.Attr{Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	big := append(append(pattern(1, 3<<20), make([]byte, 1<<20)...), pattern(2, 9<<20)...)
	in, err := f.Create("/d/big", fsys.Attr{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.WriteAt(in, big, 0); err != nil {
		t.Fatal(err)
	}
	sm, err := f.Create("/d/small", fsys.Attr{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.WriteAt(sm, []byte("inline"), 0); err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{"big": big, "small": []byte("inline")}
}

// TestReflinkSharesAndDiverges: a reflink copy adds no data, the copy
// and the source read the same, and a write to either changes only it.
func TestReflinkSharesAndDiverges(t *testing.T) {
	f := newFS(t, 256<<20)
	want := twoWrites(t, f)
	before := physical(t, f)
	if err := CopyWithin(f, "/d", "/c", Options{Recursive: true}); err != nil {
		t.Fatal(err)
	}
	if got := physical(t, f); got != before {
		t.Fatalf("reflink copy: physical %d -> %d, want no new data", before, got)
	}
	fsckClean(t, f)
	for name, data := range want {
		if !bytes.Equal(readFile(t, f, "/c/"+name), data) {
			t.Fatalf("copy of %s differs", name)
		}
	}
	c, _ := f.Resolve("/c/big", false)
	if err := f.WriteAt(c, []byte("changed"), 5<<20); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readFile(t, f, "/d/big"), want["big"]) {
		t.Fatal("a write to the copy changed the source")
	}
	if got := readFile(t, f, "/c/big"); !bytes.Equal(got[5<<20:5<<20+7], []byte("changed")) || !bytes.Equal(got[:5<<20], want["big"][:5<<20]) {
		t.Fatal("the copy does not hold its write")
	}
	// Removing the source keeps the copy's data; removing both frees it all.
	if err := f.Remove("/d/big"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, f, "/c/big"); !bytes.Equal(got[:5<<20], want["big"][:5<<20]) {
		t.Fatal("the copy lost data with its source")
	}
	if err := f.Remove("/c/big"); err != nil {
		t.Fatal(err)
	}
	if got := physical(t, f); got != 0 {
		t.Fatalf("%d bytes left after removing both copies", got)
	}
	fsckClean(t, f)
}

func TestReflinkNeverCopies(t *testing.T) {
	f := newFS(t, 256<<20)
	twoWrites(t, f)
	before := physical(t, f)
	if err := CopyWithin(f, "/d", "/c", Options{Recursive: true, Reflink: ReflinkNever}); err != nil {
		t.Fatal(err)
	}
	if got := physical(t, f); got != 2*before {
		t.Fatalf("--reflink=never: physical %d -> %d, want twice", before, got)
	}
}

// TestCopyBetweenImages: image to image copies the bytes through the
// target's write path (dedupe on: the repeated half is stored once), and
// --reflink=always is refused with EXDEV.
func TestCopyBetweenImages(t *testing.T) {
	src := newFS(t, 256<<20)
	want := twoWrites(t, src)
	d := device.NewMemDevice("t", 256<<20)
	st, tx, err := store.CreateTx(store.CreateParams{FSID: [16]byte{8}, Csum: format.CsumCRC32C, NodeSize: 16384, SectorSize: 4096,
		Data: format.ProfileSingle, Metadata: format.ProfileDup, Devices: []store.NewDevice{{Dev: d, Path: "t"}},
		Settings: format.Settings{Dedupe: true}})
	if err != nil {
		t.Fatal(err)
	}
	dst, err := fsys.New(st, fsys.Options{Now: func() time.Time { return time.Unix(1700000000, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	dst.Adopt(tx)
	if err := dst.InitRoot(fsys.Attr{Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	if err := CopyBetween(src, dst, "/d", "/", Options{Recursive: true, Reflink: ReflinkAlways}); !errors.Is(err, syscall.EXDEV) {
		t.Fatalf("reflink across images: %v, want EXDEV", err)
	}
	if err := CopyBetween(src, dst, "/d", "/", Options{Recursive: true}); err != nil {
		t.Fatal(err)
	}
	if err := CopyBetween(src, dst, "/d", "/again", Options{Recursive: true}); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"/d/", "/again/"} {
		if !bytes.Equal(readFile(t, dst, dir+"big"), want["big"]) {
			t.Fatalf("%sbig differs", dir)
		}
	}
	if got, one := physical(t, dst), physical(t, src); got != one {
		t.Fatalf("two copies into a dedupe image take %d bytes, want %d (one copy)", got, one)
	}
}

func fsckClean(t *testing.T, f *fsys.FS) {
	t.Helper()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	rep, err := check.CheckVolume(f.Store().Vol, check.Options{CheckData: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 0 {
		t.Fatalf("fsck: %+v", rep.Problems)
	}
}
