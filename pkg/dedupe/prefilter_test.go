package dedupe

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// TestRunPrefilter: a run rules out, by the stored sector sums alone, a
// big file of unique blocks and its reflink copy (one copy of the data:
// their bytes are never read or rewritten), finds a block stored exactly
// twice and the repeats in a file written in unaligned pieces (whose
// sector sums do not line up with its blocks), and
// still ends exactly at one extent per distinct block, fsck clean; without
// the prefilter the same run reads that file too, and a second run with
// the prefilter reads nothing.
// With room for 8 prints (and one-block windows) a run takes many passes
// and ends the same.
func TestRunPrefilter(t *testing.T) {
	const uniq = 40 * testBlock
	defer func(n uint64) { maxPrints = n }(maxPrints)
	for i, pre := range []bool{true, false, true} {
		if i == 2 {
			maxPrints = 8
		}
		d := newImage(t, format.Settings{})
		f := openAt(t, d, 0, epoch)
		model := backupSet(t, f)
		rng := rand.New(rand.NewPCG(9, 9))
		data := make([]byte, uniq)
		for i := range data {
			data[i] = byte(rng.Uint32() | 1)
		}
		in, err := f.Create("/uniq", fsys.Attr{Mode: 0o644})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.WriteAt(in, data, 0); err != nil {
			t.Fatal(err)
		}
		model["/uniq"] = data
		clone, err := f.Create("/uniq-clone", fsys.Attr{Mode: 0o644})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.CloneData(in, clone); err != nil {
			t.Fatal(err)
		}
		model["/uniq-clone"] = data
		pair := make([]byte, testBlock)
		for i := range pair {
			pair[i] = byte(rng.Uint32() | 1)
		}
		// /f1's first two blocks again, written in 3 pieces of 10923 bytes.
		odd, err := f.Create("/odd2", fsys.Attr{Mode: 0o644})
		if err != nil {
			t.Fatal(err)
		}
		src := model["/f1"][:2*testBlock]
		for off := 0; off < len(src); off += 10923 {
			if err := f.WriteAt(odd, src[off:min(off+10923, len(src))], uint64(off)); err != nil {
				t.Fatal(err)
			}
		}
		model["/odd2"] = src
		for _, p := range []string{"/pair1", "/pair2"} {
			x, err := f.Create(p, fsys.Attr{Mode: 0o644})
			if err != nil {
				t.Fatal(err)
			}
			if err := f.WriteAt(x, pair, 0); err != nil {
				t.Fatal(err)
			}
			model[p] = pair
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		var total uint64
		for p, b := range model {
			if p != "/f0-link" && p != "/uniq-clone" {
				total += uint64(len(b))
			}
		}
		f = openImage(t, d, 0)
		o := RunOptions{Block: testBlock, Hash: format.CsumBLAKE3, NoPrefilter: !pre}
		if i == 2 {
			o.Window = testBlock
		}
		res, err := Run(f, o)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		verify(t, d, model)
		if after, _ := physicalBytes(t, d); after != wantPhysical(model) {
			t.Fatalf("prefilter %v: physical %d, want %d", pre, after, wantPhysical(model))
		}
		if pre && (res.PrefilteredBytes < 2*uniq || res.RewrittenBytes > total-uniq) {
			t.Fatalf("prefilter: %+v; want >= %d bytes ruled out, <= %d rewritten", res, 2*uniq, total-uniq)
		}
		if !pre && (res.PrefilteredBytes != 0 || res.RewrittenBytes < total-2*testBlock) {
			t.Fatalf("no prefilter: %+v; want all %d bytes but the hole rewritten", res, total)
		}
		f = openImage(t, d, 0)
		again, err := Run(f, RunOptions{Block: testBlock, Hash: format.CsumBLAKE3})
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if again.FreedBytes != 0 || again.RewrittenBytes != 0 {
			t.Fatalf("second run: %+v", again)
		}
	}
}

// TestRunPrefilterInsideExtents: the prefilter finds a repeated block in
// the middle of a multi-block extent (no repeat at the extent's start) and
// one that straddles two extents (a half-block write each), reads only
// the extents that hold them, and leaves exactly the unique file unread.
func TestRunPrefilterInsideExtents(t *testing.T) {
	d := newImage(t, format.Settings{})
	f := openAt(t, d, 0, epoch)
	rng := rand.New(rand.NewPCG(3, 3))
	blk := func() []byte {
		b := make([]byte, testBlock)
		for i := range b {
			b[i] = byte(rng.Uint32() | 1)
		}
		return b
	}
	dup, dup2, uniq := blk(), blk(), blk()
	model := map[string][]byte{}
	put := func(p string, pieces ...[]byte) {
		in, err := f.Create(p, fsys.Attr{Mode: 0o644})
		if err != nil {
			t.Fatal(err)
		}
		var all []byte
		for _, b := range pieces {
			if err := f.WriteAt(in, b, uint64(len(all))); err != nil {
				t.Fatal(err)
			}
			all = append(all, b...)
		}
		model[p] = all
	}
	put("/big", slices.Concat(blk(), dup, blk())) // one write: one extent
	put("/dup", dup)
	put("/halves", dup2[:testBlock/2], dup2[testBlock/2:])
	put("/dup2", dup2)
	put("/uniq", uniq)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	f = openImage(t, d, 0)
	res, err := Run(f, RunOptions{Block: testBlock, Hash: format.CsumBLAKE3})
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	verify(t, d, model)
	if after, _ := physicalBytes(t, d); after != wantPhysical(model) {
		t.Fatalf("physical %d, want %d", after, wantPhysical(model))
	}
	if res.PrefilteredBytes != testBlock || res.RewrittenBytes != 6*testBlock {
		t.Fatalf("%+v: want %d bytes ruled out (/uniq), %d rewritten", res, testBlock, 6*testBlock)
	}
}

// TestReadPlan: every block the prefilter plans for reading ahead is, at
// its file's place in the run's walk and its offset, the bytes at its
// planned logical (read from the device), in walk order; with strong sums
// fewer are planned (the repeats are shared unread).
func TestReadPlan(t *testing.T) {
	var lens []int
	for _, strong := range []bool{false, true} {
		d := newImage(t, format.Settings{})
		writeSet(t, d)
		f := openImage(t, d, 0)
		inos, err := listFiles(f, "/")
		if err != nil {
			t.Fatal(err)
		}
		w, err := prefilter(f, RunOptions{Block: testBlock}, &fileList{inos: inos}, testBlock, 0, 1, strong)
		if err != nil {
			t.Fatal(err)
		}
		var files []*fsys.Inode
		for _, ino := range inos {
			in, err := f.Inode(ino)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, in)
		}
		for i, p := range w.plan {
			if i > 0 && (p.seq < w.plan[i-1].seq || (p.seq == w.plan[i-1].seq && p.off <= w.plan[i-1].off)) {
				t.Fatalf("plan out of walk order at %d: %+v after %+v", i, p, w.plan[i-1])
			}
			want := make([]byte, p.n)
			if n, err := f.ReadAt(files[p.seq], want, p.off); n != len(want) && err != nil {
				t.Fatal(err)
			}
			got := make([]byte, (p.n+4095)/4096*4096)
			if err := f.Store().Vol.ReadCopy(p.disk, got, 0); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got[:p.n], want) {
				t.Fatalf("planned block %+v is not the file's bytes there", p)
			}
		}
		if cap(w.plan) != len(w.plan) { // a pass holds the plan for its whole run
			t.Fatalf("strong=%v: plan of %d blocks keeps the walk's array of %d", strong, len(w.plan), cap(w.plan))
		}
		lens = append(lens, len(w.plan))
		f.Close()
	}
	if lens[0] == 0 || lens[1] == 0 || lens[1] >= lens[0] {
		t.Fatalf("planned %d blocks, %d with strong sums", lens[0], lens[1])
	}
}

// TestReadPlanBound: the read-ahead plan holds at most maxPlan blocks,
// and a run past it (the rest read in turn) ends the same.
func TestReadPlanBound(t *testing.T) {
	defer func(n int) { maxPlan = n }(maxPlan)
	maxPlan = 5
	d := newImage(t, format.Settings{})
	model := writeSet(t, d)
	f := openImage(t, d, 0)
	inos, err := listFiles(f, "/")
	if err != nil {
		t.Fatal(err)
	}
	w, err := prefilter(f, RunOptions{Block: testBlock}, &fileList{inos: inos}, testBlock, 0, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if len(w.plan) == 0 || len(w.plan) > 5 {
		t.Fatalf("planned %d blocks, bound 5", len(w.plan))
	}
	runVerified(t, d, model)
	if after, _ := physicalBytes(t, d); after != wantPhysical(model) {
		t.Fatalf("physical %d, want %d", after, wantPhysical(model))
	}
}
