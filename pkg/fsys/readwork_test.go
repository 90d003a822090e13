package fsys

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/device/nbdkittest"
)

// Random 4 KiB reads of a file with 8 MiB extents (as ddfs cp and
// mkfs.ddfs -r write one) read about what they ask from the device, by
// fsys.ReadAt and through the io/fs view (issue 37: a mount read 1 MiB
// of image for every 4 KiB request). A first round reads the trees'
// nodes into the cache (once per image, 1.3 MiB here: leaves read in
// windows, every copy); the rounds measured after count every read.
func TestRandomReadWork(t *testing.T) {
	want := rnd(37, 64<<20) // incompressible: no compression frames
	d := imageWith(t, want)
	t.Run("mem", func(t *testing.T) { randomReadWork(t, device.NewCounting(d), want) })
	t.Run("nbd", func(t *testing.T) { randomReadWork(t, device.NewCounting(nbdCopy(t, d)), want) })
}

// randomReadWork makes the reads of TestRandomReadWork on cd.
func randomReadWork(t *testing.T, cd *device.Counting, want []byte) {
	const reads, bs = 200, 4096
	g := openCounting(t, cd)
	in, err := g.Resolve("/f", true)
	if err != nil {
		t.Fatal(err)
	}
	fl, err := g.IOFS().Open("f")
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	paths := map[string]func(p []byte, off int64) (int, error){
		"ReadAt": func(p []byte, off int64) (int, error) { return g.ReadAt(in, p, uint64(off)) },
		"warm":   func(p []byte, off int64) (int, error) { return g.ReadAt(in, p, uint64(off)) },
		"IOFS":   fl.(io.ReaderAt).ReadAt,
	}
	for _, name := range []string{"warm", "ReadAt", "IOFS"} {
		rng := rand.New(rand.NewPCG(37, uint64(len(name))))
		buf := make([]byte, bs)
		before := cd.Stats().ReadBytes
		for range reads {
			off := int64(rng.IntN(len(want)/bs)) * bs
			if n, err := paths[name](buf, off); n != bs || err != nil || !bytes.Equal(buf, want[off:off+bs]) {
				t.Fatalf("%s at %d: %d, %v (or wrong bytes)", name, off, n, err)
			}
		}
		got := cd.Stats().ReadBytes - before
		if got > 2*reads*bs && name != "warm" {
			t.Errorf("%s: %d random 4 KiB reads read %d device bytes, want at most %d", name, reads, got, 2*reads*bs)
		}
		t.Logf("%s: %d device bytes for %d asked", name, got, reads*bs)
	}
}

// imageWith writes data as /f in one call (8 MiB extents, as ddfs cp
// does) on a new memory device.
func imageWith(t *testing.T, data []byte) *device.MemDevice {
	t.Helper()
	f, devs := newTestFS(t, int64(len(data))+64<<20, 1)
	write(t, f, "/f", data)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	return devs[0]
}

// nbdCopy serves a copy of d by nbdkit and opens it read-only.
func nbdCopy(t *testing.T, d *device.MemDevice) device.Device {
	nbdkittest.Need(t)
	img := make([]byte, d.Size())
	if _, err := d.ReadAt(img, 0); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(t.TempDir(), "img")
	if err := os.WriteFile(name, img, 0o644); err != nil {
		t.Fatal(err)
	}
	srv := nbdkittest.Start(t, true, "file", "file="+name)
	nd, err := device.Open(srv.URL, device.OpenOptions{Mode: device.ReadOnly})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nd.Close() })
	return nd
}

// readOnlyWith opens imageWith(data) read-only on a counting device.
func readOnlyWith(t *testing.T, data []byte) (*device.Counting, *FS) {
	cd := device.NewCounting(imageWith(t, data))
	return cd, openCounting(t, cd)
}

// openCounting opens the set on cd read-only.
func openCounting(t *testing.T, cd *device.Counting) *FS {
	t.Helper()
	g, err := OpenDevices([]device.Device{cd}, false, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// Sequential readers keep their read-ahead: two files' worth of 128 KiB
// requests (a mount's), interleaved with each other and with random 4 KiB
// reads, read their data in windows of up to 1 MiB, not request by
// request; the random reads take one device read each.
func TestSequentialReadsAhead(t *testing.T) {
	const size, req = 64 << 20, 128 << 10
	want := rnd(38, size)
	cd, g := readOnlyWith(t, want)
	in, err := g.Resolve("/f", true)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(38, 1))
	a, b, small := make([]byte, req), make([]byte, req), make([]byte, 4096)
	read := func(p []byte, off int) {
		if n, err := g.ReadAt(in, p, uint64(off)); n != len(p) || err != nil || !bytes.Equal(p, want[off:off+n]) {
			t.Fatalf("read at %d: %d, %v (or wrong bytes)", off, n, err)
		}
	}
	read(small, 0) // the trees' nodes into the cache
	before := cd.Stats().Reads
	const half = size / 2
	for off := 0; off < half; off += req {
		read(a, off)
		read(b, half+off)
		read(small, rng.IntN(size/4096)*4096)
	}
	requests := uint64(half / req)
	got := cd.Stats().Reads - before - requests
	t.Logf("%d device reads for %d sequential requests", got, 2*requests)
	if got*4 > 2*requests {
		t.Errorf("%d device reads for %d sequential requests of 128 KiB: no read-ahead", got, 2*requests)
	}
}

// An open file's window doubles while reads continue each other, up to
// ioWindow, and a seek collapses it to the aligned blocks asked for.
func TestIOAheadWindow(t *testing.T) {
	var a ioAhead
	const size = 1 << 30
	for i, want := range []int64{16 << 10, 32 << 10, 64 << 10, 128 << 10, 128 << 10} {
		if s, e := a.window(int64(i)<<20, 100, true, size); s != int64(i)<<20 || e-s != want {
			t.Fatalf("sequential read %d: window [%d, %d), want %d bytes", i, s, e, want)
		}
	}
	if s, e := a.window(5<<20+4000, 200, false, size); s != 5<<20 || e != 5<<20+8192 {
		t.Fatalf("a seek's window [%d, %d), want the two blocks the read meets", s, e)
	}
	if s, e := a.window(6<<20, 100, true, size); e-s != 16<<10 {
		t.Fatalf("after a seek: window [%d, %d), want 16 KiB again", s, e)
	}
	if _, e := a.window(size-100, 50, true, size); e != size {
		t.Fatalf("window ends at %d, past the file's size", e)
	}
}
