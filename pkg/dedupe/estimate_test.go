package dedupe

import (
	"bytes"
	"crypto/sha256"
	"math/rand/v2"
	"testing"
	"testing/fstest"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/cdc"
)

// knownTree is a tree whose duplicate blocks are known by construction:
// 16 distinct random 128 KiB blocks arranged into files, a zero run and a
// short tail. want gives the unique bytes per fixed block size, counted
// by hand from the layout (not by the code under test).
func knownTree() (fstest.MapFS, uint64, map[uint64]uint64) {
	rng := rand.New(rand.NewPCG(1, 2))
	blk := make([][]byte, 16)
	for i := range blk {
		blk[i] = make([]byte, 128<<10)
		for j := range blk[i] {
			blk[i][j] = byte(rng.Uint32())
		}
	}
	cat := func(idx ...int) []byte {
		var b []byte
		for _, i := range idx {
			if i < 0 {
				b = append(b, make([]byte, 128<<10)...)
			} else {
				b = append(b, blk[i]...)
			}
		}
		return b
	}
	tail := blk[15][:1000]
	m := fstest.MapFS{
		"a/f1":   {Data: cat(0, 1, 2, 3, 4, 5, 6, 7)},
		"a/f2":   {Data: cat(0, 1, 2, 3, 4, 5, 6, 7)},
		"b/f3":   {Data: cat(8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3)},
		"b/f4":   {Data: cat(-1, -1, 15)},
		"b/tail": {Data: bytes.Clone(tail)},
	}
	logical := uint64(8+8+12+3)<<17 + 1000
	small := uint64(16<<17) + 1000 // every block of 4K..128K is distinct within R0..R15
	want := map[uint64]uint64{
		4 << 10: small, 64 << 10: small, 128 << 10: small,
		// 1M: f1=f2 (1M), f3's two blocks (1M, 512K), f4 (384K, non-zero), tail.
		1 << 20: 1<<20 + 1<<20 + 512<<10 + 384<<10 + 1000,
	}
	return m, logical, want
}

func TestEstimateKnownTree(t *testing.T) {
	for _, mem := range []int{0, 64 * EntryBytes * 5} { // in memory, and spilling runs
		m, logical, want := knownTree()
		e, err := NewEstimator(EstimateOptions{Blocks: []uint64{4 << 10, 64 << 10, 128 << 10, 1 << 20}, CDC: 64 << 10, Memory: mem, TempDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.AddFS(m, "."); err != nil {
			t.Fatal(err)
		}
		res, err := e.Result()
		if err != nil {
			t.Fatal(err)
		}
		if res.LogicalBytes != logical || res.Files != 5 {
			t.Fatalf("memory %d: logical %d files %d, want %d 5", mem, res.LogicalBytes, res.Files, logical)
		}
		for _, r := range res.Sizes {
			if r.Chunking == "cdc" {
				// Content-defined chunks never exceed the data; duplicated files share chunks.
				if r.UniqueBytes >= logical || r.UniqueBytes < 16<<17 || r.BlockSize != 0 {
					t.Errorf("cdc row %+v", r)
				}
				continue
			}
			if r.UniqueBytes != want[r.BlockSize] {
				t.Errorf("memory %d block %d: unique %d, want %d", mem, r.BlockSize, r.UniqueBytes, want[r.BlockSize])
			}
			if r.StoredBytes != nil {
				t.Errorf("stored_bytes without --compress")
			}
		}
	}
}

// TestEstimateCompressed: stored bytes with compression are below the
// unique bytes for compressible data and are reported only then.
func TestEstimateCompressed(t *testing.T) {
	text := bytes.Repeat([]byte("ddfs dedupe estimate "), 50000)
	e, err := NewEstimator(EstimateOptions{Blocks: []uint64{128 << 10}, Compress: format.CompressZstd, Level: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Add(bytes.NewReader(text)); err != nil {
		t.Fatal(err)
	}
	res, err := e.Result()
	if err != nil {
		t.Fatal(err)
	}
	r := res.Sizes[0]
	if r.StoredBytes == nil || *r.StoredBytes == 0 || *r.StoredBytes >= r.UniqueBytes/4 {
		t.Fatalf("row %+v stored %v", r, r.StoredBytes)
	}
}

// TestEstimateBigFiles: files of several chunks (read ahead by a
// goroutine) and of exactly one chunk count like small ones: a file that
// is X twice and a file that is X add no unique bytes beyond X.
func TestEstimateBigFiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	x := make([]byte, chunkSize)
	for i := range x {
		x[i] = byte(rng.Uint32())
	}
	e, err := NewEstimator(EstimateOptions{Blocks: []uint64{4 << 10, 1 << 20}, CDC: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, data := range [][]byte{append(bytes.Clone(x), x...), x} {
		if err := e.Add(bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
	}
	res, err := e.Result()
	if err != nil {
		t.Fatal(err)
	}
	if res.LogicalBytes != 3*chunkSize {
		t.Fatalf("logical %d", res.LogicalBytes)
	}
	// The cdc model cuts each whole file with package cdc (the cutting
	// rule), not through the estimator's chunk carry.
	seen := map[[32]byte]bool{}
	var cdcUnique uint64
	for _, data := range [][]byte{append(bytes.Clone(x), x...), x} {
		for len(data) > 0 {
			n := cdc.Cut(data, cdc.ForAverage(64<<10))
			if h := sha256.Sum256(data[:n]); !seen[h] {
				seen[h], cdcUnique = true, cdcUnique+uint64(n)
			}
			data = data[n:]
		}
	}
	for _, r := range res.Sizes {
		want := uint64(chunkSize)
		if r.Chunking == "cdc" {
			want = cdcUnique
		}
		if r.UniqueBytes != want {
			t.Errorf("%s %d: unique %d, want %d", r.Chunking, r.BlockSize, r.UniqueBytes, want)
		}
	}
}
