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
