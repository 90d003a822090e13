package fusefs

import (
	"bytes"
	"math/rand/v2"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"

	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// TestMountRandomReadWork: random 4 KiB O_DIRECT reads (fio's randread)
// of a file with 8 MiB extents on a read-only mount read about what they
// ask from the image (issue 37: 1 MiB of image for every request).
func TestMountRandomReadWork(t *testing.T) {
	needFUSE(t)
	const size, reads, bs = 64 << 20, 200, 4096
	want := make([]byte, size)
	r := rand.New(rand.NewPCG(37, 37))
	for i := range want {
		want[i] = byte(r.Uint32()) // incompressible: no compression frames
	}
	cd, g := readOnlyFile(t, want)
	dir := t.TempDir()
	s, err := Mount(dir, g, Options{ReadOnly: true, ReadAheadKB: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Unmount()
	fd, err := syscall.Open(filepath.Join(dir, "f"), syscall.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	buf := alignedBlock(bs)
	for round, name := range []string{"warm", "measured"} {
		before := cd.Stats().ReadBytes
		for range reads {
			off := int64(r.IntN(size/bs)) * bs
			if n, err := syscall.Pread(fd, buf, off); n != bs || err != nil || !bytes.Equal(buf, want[off:off+bs]) {
				t.Fatalf("pread at %d: %d, %v (or wrong bytes)", off, n, err)
			}
		}
		got := cd.Stats().ReadBytes - before
		t.Logf("%s: %d device bytes for %d asked", name, got, reads*bs)
		if round > 0 && got > 2*reads*bs {
			t.Errorf("%d random 4 KiB reads read %d device bytes, want at most %d", reads, got, 2*reads*bs)
		}
	}
}

// alignedBlock returns n bytes aligned for O_DIRECT.
func alignedBlock(n int) []byte {
	b := make([]byte, n+4096)
	o := (4096 - int(uintptr(unsafe.Pointer(&b[0]))%4096)) % 4096
	return b[o : o+n]
}

// readOnlyFile writes data as /f in one call (8 MiB extents, as ddfs cp
// does) and opens the image read-only on a counting device; the first
// round of reads takes the trees' nodes into the cache.
func readOnlyFile(t *testing.T, data []byte) (*device.Counting, *fsys.FS) {
	t.Helper()
	d := device.NewMemDevice("m0", 512<<20)
	f := memFSOn(t, d)
	in, err := f.Create("/f", fsys.Attr{Mode: 0o644})
	if err == nil {
		err = f.WriteAt(in, data, 0)
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		t.Fatal(err)
	}
	cd := device.NewCounting(d)
	g, err := fsys.OpenDevices([]device.Device{cd}, false, fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return cd, g
}
