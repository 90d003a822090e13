package transfer

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// twinFS opens a second, read-only instance of f's committed image.
func twinFS(t testing.TB, f *fsys.FS) *fsys.FS {
	t.Helper()
	var ds []device.Device
	for _, d := range f.Store().Vol.Devices() {
		ds = append(ds, d.Dev)
	}
	vol, err := volume.FromDevices(ds, false)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenVolume(vol)
	if err != nil {
		t.Fatal(err)
	}
	g, err := fsys.New(st, fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// tarBoth runs TarOut and TarOutWith (data from a twin instance) on dir:
// the two streams must be the same bytes and end with the same error.
// It returns TarOut's.
func tarBoth(t *testing.T, f *fsys.FS, dir string) ([]byte, error) {
	t.Helper()
	var seq, par bytes.Buffer
	serr := TarOut(f, &seq, dir)
	perr := TarOutWith(f, twinFS(t, f), &par, dir)
	if fmt.Sprint(serr) != fmt.Sprint(perr) {
		t.Errorf("tar-out of %s: %v; with a pipe: %v", dir, serr, perr)
	}
	if !bytes.Equal(seq.Bytes(), par.Bytes()) {
		t.Errorf("tar-out of %s: %d bytes; with a pipe %d bytes, not the same", dir, seq.Len(), par.Len())
	}
	return seq.Bytes(), serr
}

// TestTarOutPipe: the piped stream is TarOut's, byte for byte, for files
// around the block and chunk sizes (header chunks fill, blocks fill
// mid-file, a file longer than all blocks in flight).
func TestTarOutPipe(t *testing.T) {
	f := newFS(t, 256<<20)
	sizes := []int{0, 1, 511, 512, 4096, pipeChunk - 1, pipeChunk + 1, pipeBlock - 700, pipeBlock, pipeBlock + 1, pipeBlocks*pipeBlock + 12345}
	for i, n := range sizes {
		in, err := f.Create(fmt.Sprintf("/f%02d", i), fsys.Attr{Mode: 0o644})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.WriteAt(in, rndBytes(uint64(i), n), 0); err != nil {
			t.Fatal(err)
		}
	}
	// Sparse entries: all holes (nothing to read), and data around a hole.
	mixed := append(append(rndBytes(99, 10000), make([]byte, 200<<10)...), rndBytes(98, 5000)...)
	for name, b := range map[string][]byte{"/zeros": make([]byte, 65535), "/bigzeros": make([]byte, 3<<20), "/mixed": mixed} {
		in, err := f.Create(name, fsys.Attr{Mode: 0o644})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.WriteAt(in, b, 0); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 300 { // many headers: several header chunks
		if _, err := f.Mkdir(fmt.Sprintf("/d%03d", i), fsys.Attr{Mode: 0o755}); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	b, err := tarBoth(t, f, "/")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("GNUSparseFile.0/zeros")) || !bytes.Contains(b, []byte("GNUSparseFile.0/mixed")) {
		t.Fatal("the zero and mixed files must go out as sparse entries")
	}
}

// TestTarOutPipeReadError: data sectors whose every copy fails its
// checksum do not end the stream, piped or not (the same bytes): a small
// file (and a hard link to it, the second name archived as the file) is
// left out whole, a big one holds zeros from the bad block on, a sparse
// one too, every other file is in the archive intact, each skip is
// reported and TarOut returns the first.
func TestTarOutPipeReadError(t *testing.T) {
	f := newFS(t, 256<<20)
	sizes := map[string]int{"/f0": 3000, "/f1": 200000, "/f2": 5000, "/big": 3 << 20, "/f4": 7000, "/h1": 9000}
	want := map[string][]byte{}
	for name, n := range sizes {
		in, err := f.Create(name, fsys.Attr{Mode: 0o644})
		if err != nil {
			t.Fatal(err)
		}
		want[name] = rndBytes(uint64(n), n)
		if err := f.WriteAt(in, want[name], 0); err != nil {
			t.Fatal(err)
		}
	}
	sp, err := f.Create("/sparse", fsys.Attr{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	want["/sparse"] = append(make([]byte, 1<<20), rndBytes(5, 2<<20)...)
	if err := f.WriteAt(sp, want["/sparse"][1<<20:], 1<<20); err != nil {
		t.Fatal(err)
	}
	if err := f.Link("/h1", "/h2"); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	badSector(t, f, "/f1", 4096)
	badSector(t, f, "/h1", 0)
	badSector(t, f, "/big", 1<<20+8192)
	badSector(t, f, "/sparse", 1<<20+4096)
	g := twinFS(t, f) // a fresh instance: nothing cached
	out, err := tarBoth(t, g, "/")
	if !errors.Is(err, fsys.ErrDataChecksum) {
		t.Fatalf("tar-out over bad sectors: %v, want ErrDataChecksum", err)
	}
	got := tarFiles(t, out)
	for _, name := range []string{"/f1", "/h1", "/h2"} {
		if _, ok := got[name]; ok {
			t.Errorf("%s, unreadable, is in the archive", name)
		}
		delete(want, name)
	}
	copy(want["/big"][1<<20+8192:], make([]byte, 2<<20))
	copy(want["/sparse"][1<<20+4096:], make([]byte, 2<<20))
	for name, b := range want {
		if !bytes.Equal(got[name], b) {
			t.Errorf("%s: %d bytes in the archive, not the %d expected", name, len(got[name]), len(b))
		}
	}
	var skipped []string
	err = TarOutReport(g, twinFS(t, g), io.Discard, "/", func(err error) {
		var pe *fs.PathError
		if errors.As(err, &pe) && errors.Is(err, fsys.ErrDataChecksum) {
			skipped = append(skipped, pe.Path)
		}
	})
	slices.Sort(skipped)
	if !errors.Is(err, ErrEntriesSkipped) || !slices.Equal(skipped, []string{"/big", "/f1", "/h1", "/h2", "/sparse"}) {
		t.Fatalf("TarOutReport: %v, skipped %q", err, skipped)
	}
}

// badSector overwrites the data sector of file p at byte off (single
// profile: one copy).
func badSector(t *testing.T, f *fsys.FS, p string, off uint64) {
	t.Helper()
	in, err := f.Resolve(p, false)
	if err != nil {
		t.Fatal(err)
	}
	var x *format.FileExtentItem
	err = f.Store().Tree(format.FSTree).Scan(format.Key{ObjectID: in.Ino, Type: format.FileExtentKey}, format.Key{ObjectID: in.Ino, Type: format.FileExtentKey, Offset: off + 1},
		func(it format.Item) (bool, error) {
			x, err = format.UnmarshalFileExtentItem(it.Data)
			x.Offset += off - it.Key.Offset
			return true, err
		})
	if err != nil || x == nil || x.DiskLogical == 0 {
		t.Fatalf("extent of %s at %d: %+v %v", p, off, x, err)
	}
	ts, err := f.Store().Vol.Locate(x.DiskLogical + x.Offset)
	if err != nil || len(ts) != 1 {
		t.Fatalf("locate: %v %v", ts, err)
	}
	dev, _ := f.Store().Vol.Device(ts[0].DevID)
	if _, err := dev.Dev.WriteAt(bytes.Repeat([]byte{0x5A}, 4096), int64(ts[0].Physical)); err != nil {
		t.Fatal(err)
	}
}

// tarFiles reads an archive's regular files: "/"+name -> data.
func tarFiles(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tarEach(t, bytes.NewReader(b), func(h *tar.Header, r io.Reader) {
		if h.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(r)
			must(t, err)
			files["/"+strings.TrimPrefix(h.Name, "./")] = data
		}
	})
	return files
}

// rndBytes is n bytes of a simple seeded sequence (not compressible to
// nothing, not zero: no holes).
func rndBytes(seed uint64, n int) []byte {
	b := make([]byte, n)
	x := seed*0x9E3779B97F4A7C15 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

// failAfter accepts n bytes, then fails every write (the first failure
// after a pause: the pipe's queues fill up meanwhile).
type failAfter struct {
	n      int
	err    error
	pause  time.Duration
	paused bool
}

func (w *failAfter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		if !w.paused {
			time.Sleep(w.pause)
			w.paused = true
		}
		k := w.n
		w.n = 0
		return k, w.err
	}
	w.n -= len(p)
	return len(p), nil
}

// TestTarOutPipeWriteFails: a stream whose writes fail (a reader that went
// away) ends TarOutWith with that error, before the walk is done, and
// leaves no goroutine behind, wherever the failure comes.
func TestTarOutPipeWriteFails(t *testing.T) {
	f := newFS(t, 256<<20)
	for i := range 200 {
		in, err := f.Create(fmt.Sprintf("/f%03d", i), fsys.Attr{Mode: 0o644})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.WriteAt(in, rndBytes(uint64(i), 40000+i*1000), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	g := twinFS(t, f)
	before := runtime.NumGoroutine()
	for _, n := range []int{0, 1, pipeBlock - 1, pipeBlock, 3*pipeBlock + 17} {
		w := &failAfter{n: n, err: errors.New("broken pipe"), pause: 30 * time.Millisecond}
		if err := TarOutWith(f, g, w, "/"); !errors.Is(err, w.err) {
			t.Fatalf("writes failing after %d bytes: %v, want the write's error", n, err)
		}
	}
	for range 100 {
		if runtime.NumGoroutine() <= before {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%d goroutines left (were %d)", runtime.NumGoroutine(), before)
}

// TestTarPipeBatchBytes: header bytes count toward a batch's size, so a
// batch of files with big xattrs goes out after about a block's worth,
// not after pipeBatch of them (a crafted image: 1 MiB of xattrs each).
func TestTarPipeBatchBytes(t *testing.T) {
	p := &tarPipe{items: make(chan []pipeItem, 16)}
	hdr := make([]byte, 300<<10)
	for range 4 {
		p.send(pipeItem{hdr: hdr})
	}
	if len(p.items) != 1 || len(p.batch) != 0 {
		t.Fatalf("after 1.2 MiB of headers: %d batches sent, %d items held", len(p.items), len(p.batch))
	}
	for range pipeBatch - 1 {
		p.send(pipeItem{hdr: hdr[:10]})
	}
	if len(p.items) != 1 {
		t.Fatalf("%d small items sent a batch early", pipeBatch-1)
	}
	p.send(pipeItem{hdr: hdr[:10]})
	if len(p.items) != 2 {
		t.Fatalf("%d items: no batch sent", pipeBatch)
	}
}
