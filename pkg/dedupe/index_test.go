package dedupe

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/zeebo/blake3"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
)

// dedupeImage is an image written by the inband path: 16 KiB blocks,
// zstd (text compresses, random data is stored raw and padded), tails
// shorter than a sector, one ending in zero bytes. counts[i] is how many
// times block i was written.
func dedupeImage(t *testing.T, hash format.CsumType) (*device.MemDevice, [][]byte, []int) {
	d := newImage(t, format.Settings{Dedupe: true, DedupeBlockLog2: 14, DedupeHash: hash, Compression: format.CompressZstd, CompressionLevel: 1})
	f := openAt(t, d, 0, epoch)
	rng := rand.New(rand.NewPCG(3, 3))
	var blocks [][]byte
	for i := range 10 {
		b := make([]byte, testBlock)
		if i%3 == 0 {
			copy(b, bytes.Repeat([]byte(fmt.Sprintf("text block %d ", i)), testBlock))
		} else {
			for j := range b {
				b[j] = byte(rng.Uint32() | 1)
			}
		}
		blocks = append(blocks, b)
	}
	counts := make([]int, len(blocks))
	for i := range 12 {
		var data []byte
		for k := range 1 + i%4 {
			n := (i*7 + k*3) % len(blocks)
			counts[n]++
			data = append(data, blocks[n]...)
		}
		tail := append(bytes.Clone(blocks[(i+1)%len(blocks)][:1000+i*10]), 0, 0, 0) // a tail ending in zeros
		in, err := f.Create(fmt.Sprintf("/f%d", i), fsys.Attr{Mode: 0o644})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.WriteAt(in, append(data, tail...), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return d, blocks, counts
}

func dedupeItems(t *testing.T, d *device.MemDevice) []format.Item {
	t.Helper()
	f := openImage(t, d.Snapshot(), 0)
	var items []format.Item
	err := f.Store().Tree(format.DedupeTree).Scan(format.Key{}, format.MaxKey, func(it format.Item) (bool, error) {
		items = append(items, format.Item{Key: it.Key, Data: bytes.Clone(it.Data)})
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return items
}

// damageIndex deletes every other entry, changes one and adds one for
// an extent that does not exist.
func damageIndex(t *testing.T, d *device.MemDevice, items []format.Item) {
	inTx(t, d, func(tx *store.Txn) { damageItems(t, tx.Tree(format.DedupeTree), items) })
}

func damageItems(t *testing.T, dt *btree.Tree, items []format.Item) {
	for i, it := range items {
		switch i % 4 {
		case 0, 2:
			if err := dt.Delete(it.Key); err != nil {
				t.Fatal(err)
			}
		case 1:
			bad := bytes.Clone(it.Data)
			bad[0] ^= 0xff
			if err := dt.Put(it.Key, bad); err != nil {
				t.Fatal(err)
			}
		}
	}
	bogus := format.DedupeItem{Length: 4096, HashAlgo: format.CsumSHA256}
	if err := dt.Put(format.Key{ObjectID: 42, Type: format.DedupeItemKey, Offset: 1 << 40}, format.MarshalDedupeItem(&bogus)); err != nil {
		t.Fatal(err)
	}
}

// inTx makes change to d's trees in one committed transaction.
func inTx(t *testing.T, d *device.MemDevice, change func(tx *store.Txn)) {
	t.Helper()
	st := openStore(t, d)
	tx, err := st.Begin()
	if err != nil {
		t.Fatal(err)
	}
	change(tx)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestIndexRebuildSameAsInband: the rebuilt index equals, item for item
// and byte for byte, the one the inband write path made, whatever was
// lost, changed or added, with either dedupe hash.
func TestIndexRebuildSameAsInband(t *testing.T) {
	for _, h := range []format.CsumType{format.CsumBLAKE3, format.CsumXXH3} {
		t.Run(h.String(), func(t *testing.T) { testIndexRebuild(t, h) })
	}
}

func testIndexRebuild(t *testing.T, hash format.CsumType) {
	d, blocks, _ := dedupeImage(t, hash)
	want := dedupeItems(t, d)
	if len(want) < 10 {
		t.Fatalf("only %d entries written", len(want))
	}
	damageIndex(t, d, want)
	f := openImage(t, d, 0)
	st, err := f.Index().Rebuild()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got := dedupeItems(t, d)
	if len(got) != len(want) || st.Entries != uint64(len(want)) || st.Unmarked != 0 || st.Dropped != 1 {
		t.Fatalf("%d entries (%+v), want %d", len(got), st, len(want))
	}
	// An xxh3 entry comes back with its strong tail: the BLAKE3 (of the
	// reference package) of the block, one of the full blocks or file
	// tails dedupeImage wrote.
	tails := map[uint64][]byte{}
	if hash == format.CsumXXH3 {
		cands := slices.Clone(blocks)
		for i := range 12 {
			cands = append(cands, append(bytes.Clone(blocks[(i+1)%len(blocks)][:1000+i*10]), 0, 0, 0))
		}
		for _, c := range cands {
			b3 := blake3.Sum256(c)
			tails[format.DedupeHashPrefix(format.DedupeHash(format.Checksum(format.CsumXXH3, c)))] = b3[:format.DedupeHashLen]
		}
	}
	for i := range want {
		g := got[i].Data
		if tl, ok := tails[got[i].Key.ObjectID]; ok {
			if len(g) != format.DedupeItemStrongSize || !bytes.Equal(g[format.DedupeItemSize:], tl) {
				t.Fatalf("entry %d: %x, want the tail %x", i, g, tl)
			}
			g = g[:format.DedupeItemSize]
		} else if hash == format.CsumXXH3 {
			t.Fatalf("entry %d: no block of the image has its hash", i)
		}
		if got[i].Key != want[i].Key || !bytes.Equal(g, want[i].Data) {
			t.Fatalf("entry %d: %v %x, want %v %x", i, got[i].Key, got[i].Data, want[i].Key, want[i].Data)
		}
	}
	verifyClean(t, d)
}

// TestIndexPrune keeps the entries of the most repeated blocks: they still
// dedupe new writes, a pruned block does not.
func TestIndexPrune(t *testing.T) {
	d, blocks, counts := dedupeImage(t, format.CsumXXH3)
	keep := 3
	f := openImage(t, d, 0)
	st, err := f.Index().Prune(uint64(keep))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if st.Entries != uint64(keep) {
		t.Fatalf("%+v, want %d entries", st, keep)
	}
	verifyClean(t, d)
	// The most and the least repeated blocks (by the writes above).
	most, least := 0, 0
	for i, c := range counts {
		if c > counts[most] {
			most = i
		}
		if c < counts[least] {
			least = i
		}
	}
	for _, c := range []struct {
		block int
		hits  bool
	}{{most, true}, {least, false}} {
		f := openImage(t, d, 0)
		in, err := f.Create(fmt.Sprintf("/new%d", c.block), fsys.Attr{Mode: 0o644})
		if err != nil {
			t.Fatal(err)
		}
		before, _ := physicalBytes(t, d)
		if err := f.WriteAt(in, blocks[c.block], 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		after, _ := physicalBytes(t, d)
		if (after == before) != c.hits {
			t.Fatalf("block %d written %d times: hit %v after prune, want %v", c.block, counts[c.block], after == before, c.hits)
		}
	}
}

func verifyClean(t *testing.T, d *device.MemDevice) {
	t.Helper()
	verify(t, d, nil)
}
