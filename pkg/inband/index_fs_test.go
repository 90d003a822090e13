package inband_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/fsys"
)

func TestDedupeSharesAndSurvives(t *testing.T) {
	f, _ := newDedupeFS(t, format.Settings{Dedupe: true})
	data := rnd(1, 1<<20) // 8 blocks of 128 KiB
	write(t, f, "/a", data)
	before := physical(f)
	write(t, f, "/b", data)
	if physical(f) != before {
		t.Fatalf("second copy took %d more bytes", physical(f)-before)
	}
	if f.DedupeHits() != 8 {
		t.Fatalf("dedupe hits %d, want 8", f.DedupeHits())
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if f.Store().Super().Settings.DedupeHits != 8 {
		t.Fatalf("stored hits %d", f.Store().Super().Settings.DedupeHits)
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
	g := reopen(t, d)
	before := physical(g)
	write(t, g, "/b", data)
	if physical(g) != before || g.DedupeHits() != 8 {
		t.Fatalf("second run: %d more bytes, %d hits", physical(g)-before, g.DedupeHits())
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
				in, err = f.Create(p, fsys.Attr{Mode: 0o644})
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
	err := f.Store().Tree(format.DedupeTree).Scan(format.Key{}, format.MaxKey, func(it format.Item) (bool, error) {
		n++
		d, err := format.UnmarshalDedupeItem(it.Key.ObjectID, it.Data)
		if err != nil {
			return false, err
		}
		e := f.Store().Tree(format.ExtentTree).Seek(format.Key{ObjectID: it.Key.Offset, Type: format.ExtentItemKey})
		if !e.Valid() || e.Key().ObjectID != it.Key.Offset {
			t.Fatalf("dedupe entry %v points at no extent", it.Key)
		}
		buf := make([]byte, d.Length)
		if err := f.Store().Vol.ReadCopy(it.Key.Offset, buf, 0); err != nil {
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
	if f.DedupeHits() == 0 {
		t.Fatal("verified blocks were not shared")
	}
	if !bytes.Equal(readAll(t, f, "/b"), data) {
		t.Fatal("b differs")
	}
}
