package inband_test

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zeebo/blake3"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
)

// slowDisk is a device whose flush takes a while (a slow disk taking a
// commit's data, the time tails are made in) and that counts the reads
// big enough to be a block's (a verify read of a 128 KiB block).
type slowDisk struct {
	*device.MemDevice
	flush    time.Duration
	bigReads atomic.Int64
}

func (d *slowDisk) Flush() error {
	time.Sleep(d.flush)
	return d.MemDevice.Flush()
}

func (d *slowDisk) ReadAt(p []byte, off int64) (int, error) {
	if len(p) >= 64<<10 {
		d.bigReads.Add(1)
	}
	return d.MemDevice.ReadAt(p, off)
}

func newTailFS(t *testing.T, tails bool, flush time.Duration) (*fsys.FS, *slowDisk) {
	t.Helper()
	d := &slowDisk{MemDevice: device.NewMemDevice("m", 1<<30), flush: flush}
	f := newFSOn(t, d, store.CreateParams{FSID: [16]byte{9}, Csum: format.CsumCRC32C, Data: format.ProfileSingle,
		Settings: format.Settings{Dedupe: true, DedupeHash: format.CsumXXH3}}, fsys.Options{StrongTails: tails})
	return f, d
}

// tails maps each dedupe entry's extent to its strong tail (nil: none).
func tails(t *testing.T, f *fsys.FS) map[uint64]*[format.DedupeHashLen]byte {
	t.Helper()
	m := map[uint64]*[format.DedupeHashLen]byte{}
	err := f.Store().Tree(format.DedupeTree).Scan(format.Key{}, format.MaxKey, func(it format.Item) (bool, error) {
		d, err := format.UnmarshalDedupeItem(it.Key.ObjectID, it.Data)
		if err != nil {
			return false, err
		}
		m[it.Key.Offset] = d.Strong
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestStrongTails: entries written under xxh3 get, while their commit's
// flush runs, the first 20 bytes of their block's BLAKE3 (computed here
// with the reference package, not the code under test); a later copy of
// the blocks is then shared without reading one of them back, and a block
// whose xxh3 collides (a hook) but whose BLAKE3 differs is stored on its
// own, also unread.
func TestStrongTails(t *testing.T) {
	const bs = 128 << 10
	collideOn64(t)
	f, d := newTailFS(t, true, 100*time.Millisecond)
	a := rnd(31, 8*bs)
	in := write(t, f, "/a", a)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	got := tails(t, f)
	if len(got) != 8 {
		t.Fatalf("%d entries, want 8", len(got))
	}
	xs, err := extents(f, in.Ino, 0, 8*bs)
	if err != nil || len(xs) != 8 {
		t.Fatalf("extents %d %v", len(xs), err)
	}
	for i, x := range xs {
		want := blake3.Sum256(a[i*bs : (i+1)*bs])
		if tl := got[x.DiskLogical]; tl == nil || !bytes.Equal(tl[:], want[:format.DedupeHashLen]) {
			t.Fatalf("block %d: tail %x, want %x", i, tl, want[:format.DedupeHashLen])
		}
	}
	c := bytes.Clone(a)
	c[3*bs+100] ^= 0xff // block 3 collides on the hook's xxh3, not on BLAKE3
	d.bigReads.Store(0)
	h0 := f.DedupeHits()
	write(t, f, "/b", a)
	write(t, f, "/c", c)
	if f.DedupeHits()-h0 != 15 {
		t.Fatalf("%d blocks shared, want 8 + 7", f.DedupeHits()-h0)
	}
	if n := d.bigReads.Load(); n != 0 {
		t.Fatalf("%d block reads: tailed matches should be proven unread", n)
	}
	if !bytes.Equal(readAll(t, f, "/b"), a) || !bytes.Equal(readAll(t, f, "/c"), c) {
		t.Fatal("copies read back wrong")
	}
}

// TestStrongTailsOff: without the option (reproducible builds) no entry
// gets a tail, and matches are read back (the path tails replace).
func TestStrongTailsOff(t *testing.T) {
	const bs = 128 << 10
	f, d := newTailFS(t, false, 100*time.Millisecond)
	a := rnd(32, 4*bs)
	write(t, f, "/a", a)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	for l, tl := range tails(t, f) {
		if tl != nil {
			t.Fatalf("entry at %d has a tail", l)
		}
	}
	d.bigReads.Store(0)
	write(t, f, "/b", a)
	if n := d.bigReads.Load(); n < 4 {
		t.Fatalf("%d block reads, want 4 (each match byte-compared)", n)
	}
}

// TestStrongTailsCompressed: blocks stored compressed get their tail too
// (the BLAKE3 of the block, not of its frame), as does a file's last
// block that ends inside a sector.
func TestStrongTailsCompressed(t *testing.T) {
	const bs = 128 << 10
	d := &slowDisk{MemDevice: device.NewMemDevice("m", 1<<30), flush: 100 * time.Millisecond}
	f := newFSOn(t, d, store.CreateParams{FSID: [16]byte{10}, Csum: format.CsumCRC32C, Data: format.ProfileSingle,
		Settings: format.Settings{Dedupe: true, DedupeHash: format.CsumXXH3, Compression: format.CompressZstd, CompressionLevel: 3}}, fsys.Options{StrongTails: true})
	a := append(bytes.Repeat([]byte("compressible "), 2*bs/13), rnd(34, bs+1000)...)
	in := write(t, f, "/a", a)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	got := tails(t, f)
	xs, err := extents(f, in.Ino, 0, uint64(len(a)))
	if err != nil || len(xs) != len(got) || len(got) < 3 {
		t.Fatalf("%d extents, %d entries %v", len(xs), len(got), err)
	}
	compressed := 0
	for _, x := range xs {
		if x.Compression != format.CompressNone {
			compressed++
		}
		want := blake3.Sum256(a[x.off : x.off+x.NumBytes])
		if tl := got[x.DiskLogical]; tl == nil || !bytes.Equal(tl[:], want[:format.DedupeHashLen]) {
			t.Fatalf("block at %d (compression %v): tail %x, want %x", x.off, x.Compression, tl, want[:format.DedupeHashLen])
		}
	}
	if compressed == 0 {
		t.Fatal("no compressed block: test too weak")
	}
}

// TestLyingTailNotTrusted: an entry whose tail is the BLAKE3 of other
// bytes than its extent's (a crafted image: here block X's entry claims
// block Y, which also collides with X on the hook's xxh3) must not give a
// write of Y the extent of X: not on an image without compression (the
// extent's stored sums are X's, not Y's), not with compression turned on
// (the write has no sums of its own: they are made for the check), not
// on a compressed extent (its sums are of its frame: always compared).
// Each time the match is byte-compared, found different, and Y stored
// on its own; honest tails stay unread (TestStrongTails).
func TestLyingTailNotTrusted(t *testing.T) {
	const bs = 128 << 10
	collideOn64(t)
	for _, c := range []struct {
		name         string
		compress     format.Compression
		compressible bool
	}{{"plain", format.CompressNone, false}, {"zstd-raw-extent", format.CompressZstd, false}, {"zstd-compressed-extent", format.CompressZstd, true}} {
		t.Run(c.name, func(t *testing.T) {
			d := &slowDisk{MemDevice: device.NewMemDevice("m", 1<<30), flush: 100 * time.Millisecond}
			f := newFSOn(t, d, store.CreateParams{FSID: [16]byte{12}, Csum: format.CsumCRC32C, Data: format.ProfileSingle,
				Settings: format.Settings{Dedupe: true, DedupeHash: format.CsumXXH3, Compression: c.compress, CompressionLevel: 3}}, fsys.Options{StrongTails: true})
			x := rnd(41, bs)
			if c.compressible {
				x = append(rnd(41, 64), bytes.Repeat([]byte("compressible "), bs/13)...)[:bs]
			}
			in := write(t, f, "/x", x)
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
			if xs, err := extents(f, in.Ino, 0, bs); err != nil || len(xs) != 1 || (xs[0].Compression != format.CompressNone) != c.compressible {
				t.Fatalf("extent of /x: %+v %v", xs, err)
			}
			y := bytes.Clone(x)
			y[100] ^= 0xff // same first 64 bytes: the same xxh3 under the hook
			lieAbout(t, f, y)
			h0 := f.DedupeHits()
			write(t, f, "/y", y)
			if got := readAll(t, f, "/y"); !bytes.Equal(got, y) {
				t.Fatalf("/y reads back other bytes (first difference at %d): the lying tail was trusted", firstDiff(got, y))
			}
			if f.DedupeHits()-h0 != 0 {
				t.Fatalf("%d blocks shared, want 0", f.DedupeHits()-h0)
			}
		})
	}
}

// lieAbout gives the image's one dedupe entry, which must have a tail,
// the tail of block y instead, and commits it.
func lieAbout(t *testing.T, f *fsys.FS, y []byte) {
	t.Helper()
	lie := blake3.Sum256(y)
	var items []format.Item
	err := f.Store().Tree(format.DedupeTree).Scan(format.Key{}, format.MaxKey, func(it format.Item) (bool, error) {
		items = append(items, format.Item{Key: it.Key, Data: bytes.Clone(it.Data)})
		return true, nil
	})
	if err != nil || len(items) != 1 || len(items[0].Data) != format.DedupeItemStrongSize {
		t.Fatalf("want one tailed entry: %d, %v", len(items), err)
	}
	d, err := format.UnmarshalDedupeItem(items[0].Key.ObjectID, items[0].Data)
	if err != nil {
		t.Fatal(err)
	}
	d.Strong = (*[format.DedupeHashLen]byte)(lie[:format.DedupeHashLen])
	tx, err := f.Store().Begin()
	if err != nil {
		t.Fatal(err)
	}
	f.Adopt(tx)
	if err := tx.Tree(format.DedupeTree).Put(items[0].Key, format.MarshalDedupeItem(d)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestTailPartSectorUnread: a block that ends in a part sector has no
// sums from the write; they are made, with the sector's zero padding, to
// check its tail's extent, so an honest match is still shared unread.
func TestTailPartSectorUnread(t *testing.T) {
	const bs = 128 << 10
	f, d := newTailFS(t, true, 100*time.Millisecond)
	a := rnd(43, 2*bs+100<<10+100) // the last block: 100 KiB and 100 bytes
	write(t, f, "/a", a)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	got := tails(t, f)
	if len(got) != 3 {
		t.Fatalf("%d entries, want 3", len(got))
	}
	for at, tl := range got {
		if tl == nil {
			t.Fatalf("entry at %d has no tail", at)
		}
	}
	d.bigReads.Store(0)
	h0 := f.DedupeHits()
	write(t, f, "/b", a)
	if f.DedupeHits()-h0 != 3 || d.bigReads.Load() != 0 {
		t.Fatalf("%d blocks shared with %d block reads, want 3 unread", f.DedupeHits()-h0, d.bigReads.Load())
	}
	if !bytes.Equal(readAll(t, f, "/b"), a) {
		t.Fatal("copy reads back wrong")
	}
}
