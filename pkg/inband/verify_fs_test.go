package inband_test

import (
	"bytes"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/inband"
	"github.com/ddfs/ddfs/pkg/store"
)

// TestDedupeXXH3Collision: with the xxh3 dedupe hash every match is
// byte-compared, so a block whose hash collides with another's is stored
// on its own and reads back as written, while the seven true matches of
// the same write (compared in parallel) are shared. The same collision
// under blake3 (trusted, not compared) is shared: the hook does collide.
func TestDedupeXXH3Collision(t *testing.T) {
	collideOn64(t)
	const bs = 128 << 10
	a := rnd(21, 8*bs)
	b := bytes.Clone(a)
	b[3*bs+100] ^= 0xff // block 3: starts as a's block 3, differs later
	for _, c := range []struct {
		hash     format.CsumType
		hits     uint64
		readsBAs []byte
	}{{format.CsumXXH3, 7, b}, {format.CsumBLAKE3, 8, nil}} {
		f, _ := newDedupeFS(t, format.Settings{Dedupe: true, DedupeHash: c.hash})
		write(t, f, "/a", a)
		write(t, f, "/b", b)
		if f.DedupeHits() != c.hits {
			t.Fatalf("%v: %d blocks shared, want %d", c.hash, f.DedupeHits(), c.hits)
		}
		got := readAll(t, f, "/b")
		if c.readsBAs != nil && !bytes.Equal(got, c.readsBAs) {
			t.Fatalf("%v: b reads back wrong", c.hash)
		}
		if c.readsBAs == nil && bytes.Equal(got, b) {
			t.Fatalf("%v: the collision was not shared: the hook no longer collides", c.hash)
		}
		if !bytes.Equal(readAll(t, f, "/a"), a) {
			t.Fatalf("%v: a changed", c.hash)
		}
	}
}

// TestDedupeVerifyDamagedCopy: the parallel compare reads the first copy
// only; when that copy is damaged the checked read takes the mirror, so
// the block is still shared (and reads back right), not stored again.
func TestDedupeVerifyDamagedCopy(t *testing.T) {
	const bs = 128 << 10
	f, d := newFSWith(t, store.CreateParams{FSID: [16]byte{7}, Csum: format.CsumCRC32C, Data: format.ProfileDup,
		Settings: format.Settings{Dedupe: true, DedupeHash: format.CsumXXH3}})
	a := rnd(22, 4*bs)
	in := write(t, f, "/a", a)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	xs, err := extents(f, in.Ino, 2*bs, 3*bs)
	if err != nil || len(xs) != 1 {
		t.Fatalf("extents %v %v", xs, err)
	}
	tg, err := f.Store().Vol.Locate(xs[0].DiskLogical)
	if err != nil || len(tg) != 2 {
		t.Fatalf("copies %v %v", tg, err)
	}
	if _, err := d.WriteAt(make([]byte, 4096), int64(tg[0].Physical)); err != nil {
		t.Fatal(err)
	}
	write(t, f, "/b", a)
	if f.DedupeHits() != 4 {
		t.Fatalf("%d blocks shared, want 4 (the damaged one through its mirror)", f.DedupeHits())
	}
	if !bytes.Equal(readAll(t, f, "/b"), a) {
		t.Fatal("b reads back wrong")
	}
}

// TestDedupeHashAlgoApart: entries of one hash never match blocks hashed
// with another (FORMAT.md §6.8), even when the hashes' bytes agree (the
// hook makes them agree): after a switch from blake3 to xxh3 the same data
// is stored again, then shared under xxh3.
func TestDedupeHashAlgoApart(t *testing.T) {
	old := inband.BlockHash
	inband.BlockHash = func(_ format.CsumType, p []byte) [format.CsumSize]byte {
		h := old(format.CsumBLAKE3, p)
		clear(h[16:]) // an xxh3 entry has 16 bytes
		return h
	}
	t.Cleanup(func() { inband.BlockHash = old })
	a := rnd(23, 4<<17)
	f, _ := newDedupeFS(t, format.Settings{Dedupe: true, DedupeHash: format.CsumBLAKE3})
	write(t, f, "/a", a)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Store().UpdateSettings(func(s *format.Settings) error { s.DedupeHash = format.CsumXXH3; return nil }); err != nil {
		t.Fatal(err)
	}
	write(t, f, "/b", a)
	if f.DedupeHits() != 0 {
		t.Fatalf("%d blake3 entries matched xxh3 blocks", f.DedupeHits())
	}
	write(t, f, "/c", a)
	if f.DedupeHits() != 4 || !bytes.Equal(readAll(t, f, "/c"), a) {
		t.Fatalf("%d xxh3 blocks shared, want 4", f.DedupeHits())
	}
}

// TestRededupeXXH3Collision: dedupe-tool run's path (Rededupe) compares
// xxh3 matches too: of a second file whose block 2 collides with the
// first file's, the three true repeats are shared and block 2 is kept.
func TestRededupeXXH3Collision(t *testing.T) {
	collideOn64(t)
	const bs = 128 << 10
	f, _ := newDedupeFS(t, format.Settings{}) // written without dedupe; the run picks xxh3 itself
	a := rnd(24, 4*bs)
	b := bytes.Clone(a)
	b[2*bs+100] ^= 0xff
	ins := []*fsys.Inode{write(t, f, "/a", a), write(t, f, "/b", b)}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	var st fsys.RededupeStats
	for _, in := range ins {
		rededupeAll(t, f, in, fsys.RededupeOptions{Block: bs, Hash: format.CsumXXH3}, &st)
	}
	if st.Shared != 3 {
		t.Fatalf("%d blocks shared, want 3 (%+v)", st.Shared, st)
	}
	if !bytes.Equal(readAll(t, f, "/a"), a) || !bytes.Equal(readAll(t, f, "/b"), b) {
		t.Fatal("a file reads back wrong")
	}
}

// TestSumSharesXXH3Collision: with strong sector sums a run shares a
// block on its stored sums unread; under xxh3 the extent the index gives
// for the learned hash may be a colliding block's, so its own sums must
// match too. /b collides with /a and is kept apart; /c repeats /b and
// must read back as /b, not /a.
func TestSumSharesXXH3Collision(t *testing.T) {
	collideOn64(t)
	const bs = 128 << 10
	f, _ := newFSWith(t, store.CreateParams{FSID: [16]byte{8}, Csum: format.CsumBLAKE3, Data: format.ProfileSingle})
	a := rnd(25, bs)
	b := bytes.Clone(a)
	b[1000] ^= 0xff
	ins := []*fsys.Inode{write(t, f, "/a", a), write(t, f, "/b", b), write(t, f, "/c", b)}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	var rs fsys.RededupeStats
	o := fsys.RededupeOptions{Block: bs, Hash: format.CsumXXH3, Sums: fsys.NewSumShares(1 << 20)}
	for _, in := range ins {
		rededupeAll(t, f, in, o, &rs)
		// As after a reopen: the tree's first entry of the hash, /a's
		// extent, is what a lookup finds.
		f.Index().DropCache()
	}
	for p, want := range map[string][]byte{"/a": a, "/b": b, "/c": b} {
		if !bytes.Equal(readAll(t, f, p), want) {
			t.Fatalf("%s reads back wrong (%+v)", p, rs)
		}
	}
	// The lookup gives /a's extent (the first entry of the hash): /c is
	// kept apart too, a share missed, never a wrong one.
	if rs.Shared != 0 || rs.SumShared != 0 {
		t.Fatalf("%d blocks shared: %+v", rs.Shared, rs)
	}
}
