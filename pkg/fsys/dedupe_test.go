package fsys

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/store"
)

func newDedupeFS(t testing.TB, s format.Settings) (*FS, *device.MemDevice) {
	t.Helper()
	return newFSWith(t, store.CreateParams{FSID: [16]byte{6}, Csum: format.CsumCRC32C, Data: format.ProfileSingle, Settings: s})
}

// newFSWith makes a 1 GiB one-device FS with p's FSID, sums, data
// profile and settings (16 KiB nodes, 4 KiB sectors, dup metadata).
func newFSWith(t testing.TB, p store.CreateParams) (*FS, *device.MemDevice) {
	t.Helper()
	d := device.NewMemDevice("m", 1<<30)
	return newFSOn(t, d, p, Options{}), d
}

// newFSOn is newFSWith on device d, with opt (its Now set to epoch).
func newFSOn(t testing.TB, d device.Device, p store.CreateParams, opt Options) *FS {
	t.Helper()
	p.NodeSize, p.SectorSize, p.Metadata = 16384, 4096, format.ProfileDup
	p.Devices = []store.NewDevice{{Dev: d, Path: "m"}}
	st, tx, err := store.CreateTx(p)
	if err != nil {
		t.Fatal(err)
	}
	opt.Now = func() time.Time { return epoch }
	f, err := New(st, opt)
	if err != nil {
		t.Fatal(err)
	}
	f.Adopt(tx)
	if err := f.InitRoot(Attr{Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	return f
}

func rnd(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func write(t testing.TB, f *FS, p string, data []byte) *Inode {
	t.Helper()
	in, err := f.Create(p, Attr{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.WriteAt(in, data, 0); err != nil {
		t.Fatal(err)
	}
	return in
}

func physical(f *FS) uint64 {
	var n uint64
	for _, bg := range f.st.BlockGroups() {
		if bg.Chunk.Type == format.ChunkData {
			n += bg.Used
		}
	}
	return n
}

func TestDedupeSharesAndSurvives(t *testing.T) {
	f, _ := newDedupeFS(t, format.Settings{Dedupe: true})
	data := rnd(1, 1<<20) // 8 blocks of 128 KiB
	write(t, f, "/a", data)
	before := physical(f)
	write(t, f, "/b", data)
	if physical(f) != before {
		t.Fatalf("second copy took %d more bytes", physical(f)-before)
	}
	if f.dedupeHits != 8 {
		t.Fatalf("dedupe hits %d, want 8", f.dedupeHits)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if f.st.Super().Settings.DedupeHits != 8 {
		t.Fatalf("stored hits %d", f.st.Super().Settings.DedupeHits)
	}
	// Overwriting a shared block of b leaves a untouched.
	bin, _ := f.Resolve("/b", false)
	patch := bytes.Repeat([]byte{7}, 4096)
	if err := f.WriteAt(bin, patch, 300<<10); err != nil {
		t.Fatal(err)
	}
	want := bytes.Clone(data)
	copy(want[300<<10:], patch)
	if !bytes.Equal(readAll(t, f, "/a"), data) || !bytes.Equal(readAll(t, f, "/b"), want) {
		t.Fatal("copy-on-write of a shared block went wrong")
	}
	// Removing a leaves b whole.
	if err := f.Remove("/a"); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readAll(t, f, "/b"), want) {
		t.Fatal("b changed when a was removed")
	}
	// The index knows only live extents: a third copy of data dedupes
	// against b's remaining shared blocks only.
	write(t, f, "/c", data)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readAll(t, f, "/c"), data) {
		t.Fatal("c differs")
	}
}

func TestDedupeAcrossRuns(t *testing.T) {
	f, d := newDedupeFS(t, format.Settings{Dedupe: true, DedupeHash: format.CsumBLAKE3, DedupeBlockLog2: 16})
	data := rnd(2, 512<<10)
	write(t, f, "/a", data)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	g := reopenFS(t, []*device.MemDevice{d})
	before := physical(g)
	write(t, g, "/b", data)
	if physical(g) != before || g.dedupeHits != 8 {
		t.Fatalf("second run: %d more bytes, %d hits", physical(g)-before, g.dedupeHits)
	}
}

func TestCompressionRoundTrip(t *testing.T) {
	text := bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog. "), 50000) // ~2.2 MB
	for _, c := range []struct {
		comp   format.Compression
		level  uint8
		dedupe bool
	}{{format.CompressZstd, 3, false}, {format.CompressS2, 0, false}, {format.CompressZstd, 1, true}, {format.CompressS2, 0, true}} {
		t.Run(fmt.Sprintf("%v-%d-dedupe%v", c.comp, c.level, c.dedupe), func(t *testing.T) {
			f, d := newDedupeFS(t, format.Settings{Compression: c.comp, CompressionLevel: c.level, Dedupe: c.dedupe})
			write(t, f, "/t", text)
			in := write(t, f, "/r", rnd(3, 300000)) // incompressible
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
			g := reopenFS(t, []*device.MemDevice{d})
			if !bytes.Equal(readAll(t, g, "/t"), text) {
				t.Fatal("text differs")
			}
			if phys := physical(g); phys > uint64(len(text))/4+400<<10 {
				t.Fatalf("text took %d bytes on disk", phys)
			}
			r, _ := g.Resolve("/r", false)
			if r.Flags&format.InodeNoCompress == 0 {
				t.Fatal("incompressible file not marked")
			}
			_ = in
			// Partial reads at odd offsets inside compressed extents.
			tin, _ := g.Resolve("/t", false)
			buf := make([]byte, 1000)
			for _, off := range []uint64{0, 131071, 700000, uint64(len(text)) - 500} {
				n, err := g.ReadAt(tin, buf, off)
				if err != nil && err != io.EOF {
					t.Fatal(err)
				}
				if !bytes.Equal(buf[:n], text[off:off+uint64(n)]) {
					t.Fatalf("read at %d differs", off)
				}
			}
		})
	}
}

// TestIndexNeverDangles: after random create/overwrite/remove sequences,
// every dedupe entry points at a live extent with its hash.
func TestIndexNeverDangles(t *testing.T) {
	f, _ := newDedupeFS(t, format.Settings{Dedupe: true, DedupeBlockLog2: 12})
	r := rand.New(rand.NewPCG(8, 8))
	pool := [][]byte{rnd(10, 4096), rnd(11, 4096), rnd(12, 8192), rnd(13, 4096)}
	for i := 0; i < 400; i++ {
		p := fmt.Sprintf("/f%d", r.IntN(6))
		switch r.IntN(3) {
		case 0:
			f.Remove(p)
		default:
			in, err := f.Resolve(p, false)
			if err != nil {
				in, err = f.Create(p, Attr{Mode: 0o644})
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := f.WriteAt(in, pool[r.IntN(len(pool))], uint64(r.IntN(4))*4096); err != nil {
				t.Fatal(err)
			}
		}
		if i%50 == 0 {
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	n := 0
	err := f.st.Tree(format.DedupeTree).Scan(format.Key{}, format.MaxKey, func(it format.Item) (bool, error) {
		n++
		d, err := format.UnmarshalDedupeItem(it.Key.ObjectID, it.Data)
		if err != nil {
			return false, err
		}
		e := f.st.Tree(format.ExtentTree).Seek(format.Key{ObjectID: it.Key.Offset, Type: format.ExtentItemKey})
		if !e.Valid() || e.Key().ObjectID != it.Key.Offset {
			t.Fatalf("dedupe entry %v points at no extent", it.Key)
		}
		buf := make([]byte, d.Length)
		if err := f.st.Vol.ReadCopy(it.Key.Offset, buf, 0); err != nil {
			return false, err
		}
		if format.DedupeHash(format.Checksum(format.CsumSHA256, buf)) != d.Hash {
			t.Fatalf("dedupe entry %v: data no longer hashes to it", it.Key)
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("empty index: test too weak")
	}
}

// TestCDCFindsShiftedCopy: with content-defined chunking, a copy shifted
// by one byte shares almost all its blocks.
func TestCDCFindsShiftedCopy(t *testing.T) {
	f, _ := newDedupeFS(t, format.Settings{Dedupe: true, DedupeCDC: true, DedupeBlockLog2: 15})
	data := rnd(5, 4<<20)
	write(t, f, "/a", data)
	before := physical(f)
	write(t, f, "/b", append([]byte{1}, data...))
	grown := physical(f) - before
	if grown > uint64(len(data))/10 {
		t.Fatalf("shifted copy took %d bytes of %d", grown, len(data))
	}
	if !bytes.Equal(readAll(t, f, "/b")[1:], data) {
		t.Fatal("shifted copy reads back wrong")
	}
}

func TestDedupeVerify(t *testing.T) {
	f, _ := newDedupeFS(t, format.Settings{Dedupe: true, DedupeVerify: true, Compression: format.CompressS2})
	data := bytes.Repeat([]byte("verify me "), 60000)
	write(t, f, "/a", data)
	write(t, f, "/b", data)
	if f.dedupeHits == 0 {
		t.Fatal("verified blocks were not shared")
	}
	if !bytes.Equal(readAll(t, f, "/b"), data) {
		t.Fatal("b differs")
	}
}

func TestBigCompressedRead(t *testing.T) {
	f, _ := newDedupeFS(t, format.Settings{Compression: format.CompressZstd, CompressionLevel: 1})
	data := bytes.Repeat([]byte("0123456789 big compressed read "), 200000) // ~6 MB: many 128 KiB extents
	write(t, f, "/a", data)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readAll(t, f, "/a"), data) {
		t.Fatal("big read differs")
	}
}

// TestWriteWhileChunksGrow: background data writes run while new chunks
// are added (run with -race to check the chunk map's locking).
func TestWriteWhileChunksGrow(t *testing.T) {
	f, _ := newTestFS(t, 128<<20, 1)
	in, err := f.Create("/big", Attr{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	data := rnd(9, 60<<20)
	for off := 0; off < len(data); off += 1 << 20 {
		if err := f.WriteAt(in, data[off:off+1<<20], uint64(off)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readAll(t, f, "/big"), data) {
		t.Fatal("contents differ")
	}
}
