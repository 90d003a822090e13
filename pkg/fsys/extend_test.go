package fsys

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

// fileExtentsOf lists /f's extents as (file offset, disk bytes).
func fileExtentsOf(t *testing.T, f *FS, in *Inode) [][2]uint64 {
	t.Helper()
	xs, err := f.extents(in.Ino, 0, in.Size)
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]uint64
	for _, x := range xs {
		out = append(out, [2]uint64{x.off, x.DiskLen})
	}
	return out
}

// appendBlocks writes n random 4 KiB blocks at the end of the file, one
// write each (as a mount's requests come), in the file and the model.
func appendBlocks(t *testing.T, f *FS, in *Inode, model []byte, rng *rand.Rand, n int) []byte {
	t.Helper()
	for i := 0; i < n; i++ {
		p := make([]byte, 4096)
		for j := range p {
			p[j] = byte(rng.Uint32())
		}
		if err := f.WriteAt(in, p, uint64(len(model))); err != nil {
			t.Fatal(err)
		}
		model = append(model, p...)
	}
	return model
}

// TestAppendsGrowOneExtent: sequential 4 KiB writes in one transaction
// make one extent (up to the extent bound), not one per write; an extent
// a commit or an fsync log block already holds is never grown, and the
// result reads back and checks clean.
func TestAppendsGrowOneExtent(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 9))
	f, devs := newTestFS(t, 256<<20, 1)
	in, err := f.Create("/f", Attr{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	model := appendBlocks(t, f, in, nil, rng, 2*maxExtent/4096+1)
	want := [][2]uint64{{0, maxExtent}, {maxExtent, maxExtent}, {2 * maxExtent, 4096}}
	if got := fileExtentsOf(t, f, in); !slices.Equal(got, want) {
		t.Fatalf("after %d appends: extents %v, want %v", len(model)/4096, got, want)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	// Committed: the next append starts an extent of its own.
	model = appendBlocks(t, f, in, model, rng, 2)
	want = append(want[:2], [2]uint64{2 * maxExtent, 4096}, [2]uint64{2*maxExtent + 4096, 8192})
	if got := fileExtentsOf(t, f, in); !slices.Equal(got, want) {
		t.Fatalf("appends after a commit: extents %v, want %v", got, want)
	}
	// Logged by an fsync: a replay claims exactly what the log names.
	if err := f.Fsync(in); err != nil {
		t.Fatal(err)
	}
	model = appendBlocks(t, f, in, model, rng, 1)
	want = append(want, [2]uint64{2*maxExtent + 3*4096, 4096})
	if got := fileExtentsOf(t, f, in); !slices.Equal(got, want) {
		t.Fatalf("appends after an fsync: extents %v, want %v", got, want)
	}
	// A short tail grows the last extent, but its sector's slack is not
	// the file's, so the next write does not continue it.
	tail := []byte("tail")
	if err := f.WriteAt(in, tail, uint64(len(model))); err != nil {
		t.Fatal(err)
	}
	model = append(model, tail...)
	model = appendBlocks(t, f, in, model, rng, 1)
	want[len(want)-1][1] = 8192
	want = append(want, [2]uint64{uint64(len(model)) - 4096, 4096})
	if got := fileExtentsOf(t, f, in); !slices.Equal(got, want) {
		t.Fatalf("append after a short tail: extents %v", got)
	}
	if got := readAll(t, f, "/f"); !bytes.Equal(got, model) {
		t.Fatal("grown extents read back wrong")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	checkClean(t, devs[0])
	g := reopenFS(t, devs)
	if got := readAll(t, g, "/f"); !bytes.Equal(got, model) {
		t.Fatal("grown extents read back wrong after reopening")
	}
	// Overwrite the middle of a grown extent: clipped like any other.
	p := bytes.Repeat([]byte{7}, 4096)
	in, err = g.Resolve("/f", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.WriteAt(in, p, 4096*3); err != nil {
		t.Fatal(err)
	}
	copy(model[4096*3:], p)
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	checkClean(t, devs[0])
	h := reopenFS(t, devs)
	if got := readAll(t, h, "/f"); !bytes.Equal(got, model) {
		t.Fatal("overwritten grown extent reads back wrong")
	}
}
