package dedupe

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// TestRunCutsInPlace: new blocks at the head of extents only one file
// uses are indexed where they lie (their addresses kept, even after a
// repeat inside the same extent), repeats are freed; an extent two files
// share (a reflink), a tail whose last sector holds bytes past the
// file's end and a block followed by sectors past the end go through the
// write path instead, and so does a block with a zero sector inside
// (stored around a hole). Then fsck is clean, the
// files unchanged, the index exactly what a rebuild makes, and a second
// run frees nothing. With one-block windows (as the CLI) and whole extents.
func TestRunCutsInPlace(t *testing.T) {
	for _, window := range []uint64{testBlock, 0} {
		d := newImage(t, format.Settings{})
		f := openAt(t, d, 0, epoch)
		rng := rand.New(rand.NewPCG(5, 5))
		blk := func(n int) []byte {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(rng.Uint32() | 1)
			}
			return b
		}
		model := map[string][]byte{}
		put := func(p string, data []byte) *fsys.Inode {
			in, err := f.Create(p, fsys.Attr{Mode: 0o644})
			if err != nil {
				t.Fatal(err)
			}
			if err := f.WriteAt(in, data, 0); err != nil {
				t.Fatal(err)
			}
			model[p] = data
			return in
		}
		u0, dup, u1, dup2 := blk(testBlock), blk(testBlock), blk(testBlock), blk(testBlock)
		put("/big", slices.Concat(u0, dup, dup, u1)) // one extent
		put("/dup", dup)
		orig := put("/orig", slices.Concat(dup2, blk(testBlock)))
		clone, err := f.Create("/orig-clone", fsys.Attr{Mode: 0o644})
		if err == nil {
			err = f.CloneData(orig, clone)
		}
		if err != nil {
			t.Fatal(err)
		}
		model["/orig-clone"] = model["/orig"]
		put("/dup2", dup2)
		long := blk(8000)
		tr := put("/trunc", long)
		if err := f.Truncate(tr, 5000); err != nil {
			t.Fatal(err)
		}
		model["/trunc"] = long[:5000]
		three := blk(3 * testBlock)
		if err := f.Truncate(put("/trunc-block", three), testBlock); err != nil {
			t.Fatal(err)
		}
		model["/trunc-block"] = three[:testBlock]
		// A block with a zero sector inside is stored as two extents around
		// a hole: not one extent to keep, and its copies still match.
		zmid := blk(testBlock)
		clear(zmid[4096:8192])
		put("/zmid", zmid)
		z2 := put("/zmid2", zmid)
		zc, err := f.Create("/zmid2-clone", fsys.Attr{Mode: 0o644})
		if err == nil {
			err = f.CloneData(z2, zc)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		plain := map[string][]byte{}
		for p, b := range model {
			if !strings.HasPrefix(p, "/zmid") {
				plain[p] = b
			}
		}
		model["/zmid2-clone"] = zmid
		before := blockDisks(t, openImage(t, d.Snapshot(), 0), "/big")
		f = openImage(t, d, 0)
		// Every block read: the prefilter would rule out the unique ones
		// (/trunc, whose last sector holds bytes past its end).
		res, err := Run(f, RunOptions{Block: testBlock, Hash: format.CsumBLAKE3, Window: window, NoPrefilter: true})
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		verify(t, d, model)
		if after, _ := physicalBytes(t, d); after != wantPhysical(plain)+testBlock-4096 {
			t.Fatalf("window %d: physical %d, want %d: %+v", window, after, wantPhysical(plain)+testBlock-4096, res)
		}
		after := blockDisks(t, openImage(t, d.Snapshot(), 0), "/big")
		if after[0] != before[0] || after[3] != before[3] || res.AdoptedBytes < 3*testBlock {
			t.Fatalf("window %d: /big's new blocks moved (%x -> %x) or not indexed in place: %+v", window, before, after, res)
		}
		want := dedupeItems(t, d)
		f = openImage(t, d, 0)
		st, err := f.Index().Rebuild()
		if err == nil {
			err = f.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
		got := dedupeItems(t, d)
		if st.Unmarked != 0 || len(got) != len(want) {
			t.Fatalf("window %d: rebuild %+v: %d entries, run made %d", window, st, len(got), len(want))
		}
		for i := range want {
			if got[i].Key != want[i].Key || !bytes.Equal(got[i].Data, want[i].Data) {
				t.Fatalf("window %d: entry %d: rebuild %v %x, run made %v %x", window, i, got[i].Key, got[i].Data, want[i].Key, want[i].Data)
			}
		}
		f = openImage(t, d, 0)
		again, err := Run(f, RunOptions{Block: testBlock, Hash: format.CsumBLAKE3, Window: window})
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if again.FreedBytes != 0 || again.RewrittenBytes != 0 {
			t.Fatalf("window %d: second run: %+v", window, again)
		}
	}
}

// blockDisks is where each block of the file at p starts on disk.
func blockDisks(t *testing.T, f *fsys.FS, p string) []uint64 {
	t.Helper()
	in, err := f.Resolve(p, false)
	if err != nil {
		t.Fatal(err)
	}
	var out []uint64
	err = f.BlockPrints(in, testBlock, func(bp *fsys.BlockPrint) error {
		out = append(out, bp.Disk)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
