package transfer

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ddfs/ddfs/pkg/fsys"
)

// sparseFile makes image file p of size bytes holding data at the given
// offsets (nothing else written).
func sparseFile(t *testing.T, f *fsys.FS, p string, size uint64, data map[uint64]string) *fsys.Inode {
	t.Helper()
	in, err := f.Create(p, fsys.Attr{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	for off, s := range data {
		if err := f.WriteAt(in, []byte(s), off); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(in, size); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	return in
}

// hostExtents lists the data ranges of a host file (SEEK_DATA/SEEK_HOLE).
func hostExtents(t *testing.T, p string) [][2]int64 {
	t.Helper()
	fh, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	st, _ := fh.Stat()
	var out [][2]int64
	for off := int64(0); off < st.Size(); {
		data, err := unix.Seek(int(fh.Fd()), off, unix.SEEK_DATA)
		if errors.Is(err, syscall.ENXIO) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		hole, err := unix.Seek(int(fh.Fd()), data, unix.SEEK_HOLE)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, [2]int64{data, hole})
		off = hole
	}
	return out
}

// checkImageFile requires image file p to have size and the data.
func checkImageFile(t *testing.T, f *fsys.FS, p string, size uint64, data map[uint64]string) {
	t.Helper()
	in, err := f.Resolve(p, false)
	if err != nil {
		t.Fatal(err)
	}
	if in.Size != size || in.NBytes > 64<<10 {
		t.Fatalf("%s: size %d nbytes %d, want size %d, sparse", p, in.Size, in.NBytes, size)
	}
	for off, s := range data {
		want, from := "\x00"+s, off-1 // the byte before is a hole's zero
		if off == 0 {
			want, from = s, 0
		}
		b := make([]byte, len(want)+1)
		n, err := f.ReadAt(in, b, from)
		if err != nil && err != io.EOF {
			t.Fatal(err)
		}
		if string(b[:min(n, len(want))]) != want {
			t.Fatalf("%s at %d: %q, want %q", p, off, b[:n], want)
		}
	}
}

// TestSparseHuge: a file of size 2^62 holding 6 bytes copies out, tars
// out and tars back in in time proportional to its extents (before:
// cp -a and tar-out spun through 2^62 bytes of zeros).
func TestSparseHuge(t *testing.T) {
	const size = 1 << 62
	data := map[uint64]string{1: "abc", 1 << 40: "xyz"}
	f := newFS(t, 1<<30)
	sparseFile(t, f, "/huge", size, data)

	start := time.Now()
	out := t.TempDir()
	err := CopyOut(f, "/huge", out, Options{Archive: true})
	// ext4 tops out at 16 TiB: EFBIG setting the size is a quick, honest end.
	if err != nil && !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("copy out: %v", err)
	}
	if err == nil {
		if st, _ := os.Stat(filepath.Join(out, "huge")); st.Size() != size {
			t.Fatalf("copied out size %d", st.Size())
		}
	}
	var archive bytes.Buffer
	if err := TarOut(f, &archive, "/"); err != nil {
		t.Fatal(err)
	}
	if archive.Len() > 16<<10 {
		t.Fatalf("archive of %d bytes for 6 bytes of data", archive.Len())
	}
	g := newFS(t, 1<<30)
	if err := TarIn(g, bytes.NewReader(archive.Bytes()), "/", Options{}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("cp -a, tar-out and tar-in of a 2^62-byte sparse file took %v", d)
	} else {
		t.Logf("cp -a, tar-out and tar-in of a 2^62-byte sparse file: %v", d)
	}
	checkImageFile(t, g, "/huge", size, data)
	tr := tar.NewReader(bytes.NewReader(archive.Bytes()))
	if h, err := tr.Next(); err != nil || h.Name != "./" {
		t.Fatalf("archive/tar reads %+v, %v; want ./ first", h, err)
	}
	h, err := tr.Next()
	if err != nil || h.Name != "huge" || h.Size != size {
		t.Fatalf("archive/tar reads %+v, %v", h, err)
	}
}

// TestSparse100G: a legitimate 100 GiB file with 3 bytes copies out as a
// sparse host file with the same data ranges, quickly (before: 8.4 s); its
// tar-out restores sparse and identical with GNU tar -xS.
func TestSparse100G(t *testing.T) {
	const size = 100 << 30
	const at = 50 << 30
	data := map[uint64]string{at: "abc"}
	f := newFS(t, 1<<30)
	sparseFile(t, f, "/big", size, data)
	start := time.Now()
	out := t.TempDir()
	if err := CopyOut(f, "/big", out, Options{Archive: true}); err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	if err := TarOut(f, &archive, "/"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("copy out and tar-out of a 100 GiB sparse file took %v", d)
	} else {
		t.Logf("copy out and tar-out of a 100 GiB sparse file: %v", d)
	}
	checkHost := func(p string) {
		t.Helper()
		st, err := os.Stat(p)
		if err != nil || st.Size() != size {
			t.Fatalf("%s: %v %v", p, st, err)
		}
		xs := hostExtents(t, p)
		if len(xs) != 1 || xs[0][0] > at || xs[0][1] < at+3 || xs[0][1]-xs[0][0] > 1<<20 {
			t.Fatalf("%s: data ranges %v, want one small range around %d", p, xs, at)
		}
		fh, _ := os.Open(p)
		defer fh.Close()
		b := make([]byte, 5)
		fh.ReadAt(b, at-1)
		if string(b) != "\x00abc\x00" {
			t.Fatalf("%s: %q at %d", p, b, at-1)
		}
	}
	checkHost(filepath.Join(out, "big"))
	if _, err := exec.LookPath("tar"); err != nil {
		t.Skip("no GNU tar")
	}
	x := t.TempDir()
	cmd := exec.Command("tar", "-xSf", "-", "-C", x)
	cmd.Stdin = bytes.NewReader(archive.Bytes())
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("GNU tar -xSf: %v: %s", err, b)
	}
	checkHost(filepath.Join(x, "big"))
}

// TestTarInGNUSparse: an archive GNU tar writes with -S (PAX, sparse 1.0)
// extracts sparse and identical.
func TestTarInGNUSparse(t *testing.T) {
	if _, err := exec.LookPath("tar"); err != nil {
		t.Skip("no GNU tar")
	}
	src := t.TempDir()
	fh, err := os.Create(filepath.Join(src, "sp"))
	if err != nil {
		t.Fatal(err)
	}
	data := map[uint64]string{0: "head", 3 << 30: "middle", 7<<30 + 5: "tail"}
	for off, s := range data {
		fh.WriteAt([]byte(s), int64(off))
	}
	fh.Truncate(8 << 30)
	fh.Close()
	os.WriteFile(filepath.Join(src, "after"), []byte("next entry"), 0o644)
	for _, form := range [][]string{{"--format=pax", "--sparse-version=1.0"}, {"--format=gnu"}} {
		cmd := exec.Command("tar", append(form, "-S", "-cf", "-", "-C", src, "sp", "after")...)
		archive, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		f := newFS(t, 1<<30)
		start := time.Now()
		if err := TarIn(f, bytes.NewReader(archive), "/", Options{}); err != nil {
			t.Fatalf("%v: %v", form, err)
		}
		t.Logf("%v: tar-in of an 8 GiB sparse file: %v", form, time.Since(start))
		checkImageFile(t, f, "/sp", 8<<30, data)
		checkImageFile(t, f, "/after", 10, map[uint64]string{0: "next entry"})
	}
}

// TestPAXTime pins the PAX time format against archive/tar's reading.
func TestPAXTime(t *testing.T) {
	for _, tm := range []time.Time{time.Unix(1700000000, 0), time.Unix(1700000000, 500), time.Unix(-5, 250000000), time.Unix(-1, 500000000), time.Unix(-7, 0), time.Unix(1<<40, 999999999)} {
		rec := paxRecord("mtime", paxTime(tm))
		var archive bytes.Buffer
		archive.Write(ustarHeader("PaxHeaders/x", tar.TypeXHeader, 0o644, 0, 0, int64(len(rec)), 0))
		archive.Write(pad([]byte(rec)))
		archive.Write(ustarHeader("x", tar.TypeReg, 0o644, 0, 0, 0, 0))
		archive.Write(make([]byte, 1024))
		h, err := tar.NewReader(&archive).Next()
		if err != nil || !h.ModTime.Equal(tm) {
			t.Errorf("%v: read back %v, %v", tm, h.ModTime, err)
		}
	}
}

// TestTarInSparseMapMustFitEntry: a sparse map that claims more data than
// its entry holds is refused (reading on would swallow the next header).
func TestTarInSparseMapMustFitEntry(t *testing.T) {
	f := newFS(t, 256<<20)
	sparseFile(t, f, "/sp", 1<<20, map[uint64]string{0: "abc"})
	var archive bytes.Buffer
	if err := TarOut(f, &archive, "/"); err != nil {
		t.Fatal(err)
	}
	b := archive.Bytes()
	i := bytes.Index(b, []byte("2\n0\n3\n1048576\n0\n"))
	if i < 0 || i%blockSize != 0 {
		t.Fatalf("sparse map not found at a block start: %d", i)
	}
	b[i+4] = '4' // the first fragment now claims 4 bytes, the entry holds 3
	g := newFS(t, 256<<20)
	if err := TarIn(g, bytes.NewReader(b), "/", Options{}); !errors.Is(err, tar.ErrHeader) {
		t.Fatalf("TarIn: %v, want tar.ErrHeader", err)
	}
}
