package inband_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/zeebo/blake3"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/fsys"
)

const rbBlock = 16 << 10

// indexImage writes n distinct 16 KiB blocks, block i into i+1 files
// (block 0 is compressible text), and commits. It returns the blocks and
// the extent each is stored in.
func indexImage(t *testing.T, hash format.CsumType, n int) (*fsys.FS, [][]byte, []uint64) {
	t.Helper()
	f, _ := newDedupeFS(t, format.Settings{Dedupe: true, DedupeBlockLog2: 14, DedupeHash: hash, Compression: format.CompressZstd, CompressionLevel: 1})
	blocks := make([][]byte, n)
	at := make([]uint64, n)
	for i := range blocks {
		blocks[i] = rnd(uint64(100+i), rbBlock)
		if i == 0 {
			blocks[i] = bytes.Repeat([]byte("compressible block "), rbBlock/19+1)[:rbBlock]
		}
		for c := 0; c <= i; c++ {
			write(t, f, fmt.Sprintf("/b%d.%d", i, c), blocks[i])
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	for i := range blocks {
		in, err := f.Resolve(fmt.Sprintf("/b%d.0", i), false)
		if err != nil {
			t.Fatal(err)
		}
		xs, err := extents(f, in.Ino, 0, rbBlock)
		if err != nil || len(xs) != 1 {
			t.Fatalf("block %d: extents %+v %v", i, xs, err)
		}
		at[i] = xs[0].DiskLogical
	}
	return f, blocks, at
}

// indexItems is the dedupe tree, item for item.
func indexItems(t *testing.T, f *fsys.FS) []format.Item {
	t.Helper()
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

// change runs fn on a transaction of f's store and commits it.
func change(t *testing.T, f *fsys.FS, fn func(put func(format.TreeID, format.Key, []byte), del func(format.TreeID, format.Key))) {
	t.Helper()
	tx, err := f.Store().Begin()
	if err != nil {
		t.Fatal(err)
	}
	f.Adopt(tx)
	fn(func(tr format.TreeID, k format.Key, v []byte) {
		if err := tx.Tree(tr).Put(k, v); err != nil {
			t.Fatal(err)
		}
	}, func(tr format.TreeID, k format.Key) {
		if err := tx.Tree(tr).Delete(k); err != nil {
			t.Fatal(err)
		}
	})
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// hits reports whether writing p as a new file shares a block.
func hits(t *testing.T, f *fsys.FS, name string, p []byte) bool {
	t.Helper()
	h0 := f.DedupeHits()
	write(t, f, name, p)
	return f.DedupeHits() != h0
}

// TestRebuildRestoresIndex: after entries are lost, a stale one added
// and one extent's mark made to lie, Rebuild gives back exactly the
// entries the write path made (an xxh3 one with the BLAKE3 tail of its
// block, by the reference package), unmarks the lying extent, drops the
// stale entries, and the index shares blocks again.
func TestRebuildRestoresIndex(t *testing.T) {
	for _, hash := range []format.CsumType{format.CsumBLAKE3, format.CsumXXH3} {
		t.Run(hash.String(), func(t *testing.T) {
			f, blocks, at := indexImage(t, hash, 6)
			want := indexItems(t, f)
			if len(want) != len(blocks) {
				t.Fatalf("%d entries, want %d", len(want), len(blocks))
			}
			of := func(b int) format.Item { return entryAt(t, want, at[b]) }
			liar := of(2)
			change(t, f, func(put func(format.TreeID, format.Key, []byte), del func(format.TreeID, format.Key)) {
				del(format.DedupeTree, of(0).Key)
				del(format.DedupeTree, of(4).Key)
				put(format.DedupeTree, format.Key{ObjectID: 12345, Type: format.DedupeItemKey, Offset: at[3]}, of(3).Data)
				k, e := extentItem(t, f, at[2])
				e.HashPrefix ^= 1
				put(format.ExtentTree, k, format.MarshalExtentItem(e))
			})
			f.Index().DropCache()
			st, err := f.Index().Rebuild()
			if err != nil {
				t.Fatal(err)
			}
			if st.Entries != uint64(len(want)-1) || st.Rebuilt != uint64(len(want)-1) || st.Unmarked != 1 || st.Dropped != 2 {
				t.Fatalf("%+v, want %d entries rebuilt, 1 unmarked, 2 dropped", st, len(want)-1)
			}
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
			got := indexItems(t, f)
			var exp []format.Item
			for _, it := range want {
				if it.Key != liar.Key {
					exp = append(exp, it)
				}
			}
			if len(got) != len(exp) {
				t.Fatalf("%d entries after rebuild, want %d", len(got), len(exp))
			}
			for i, g := range got {
				data := g.Data
				if hash == format.CsumXXH3 {
					data = checkTail(t, g, blocks)
				}
				if g.Key != exp[i].Key || !bytes.Equal(data, exp[i].Data) {
					t.Fatalf("entry %d: %v %x, want %v %x", i, g.Key, data, exp[i].Key, exp[i].Data)
				}
			}
			atClean(t, f)
			for i, b := range blocks {
				if got, want := hits(t, f, fmt.Sprintf("/again%d", i), b), i != 2; got != want {
					t.Fatalf("block %d written again: shared %v, want %v", i, got, want)
				}
			}
		})
	}
}

// entryAt is the entry of items for the extent at logical.
func entryAt(t *testing.T, items []format.Item, logical uint64) format.Item {
	t.Helper()
	for _, it := range items {
		if it.Key.Offset == logical {
			return it
		}
	}
	t.Fatalf("no entry for the extent at %d", logical)
	return format.Item{}
}

// extentItem is the extent item at logical.
func extentItem(t *testing.T, f *fsys.FS, logical uint64) (format.Key, *format.ExtentItem) {
	t.Helper()
	var k format.Key
	var e *format.ExtentItem
	err := f.Store().Tree(format.ExtentTree).Scan(format.Key{ObjectID: logical}, format.Key{ObjectID: logical + 1}, func(it format.Item) (bool, error) {
		var err error
		k = it.Key
		e, err = format.UnmarshalExtentItem(it.Data)
		return false, err
	})
	if err != nil || e == nil || k.Type != format.ExtentItemKey {
		t.Fatalf("extent item at %d: %v %v", logical, k, err)
	}
	return k, e
}

// checkTail requires a rebuilt xxh3 entry to carry the BLAKE3 tail of one
// of blocks, and returns the entry without it.
func checkTail(t *testing.T, it format.Item, blocks [][]byte) []byte {
	t.Helper()
	if len(it.Data) != format.DedupeItemStrongSize {
		t.Fatalf("entry %v: %d bytes, no strong tail", it.Key, len(it.Data))
	}
	for _, b := range blocks {
		sum := blake3.Sum256(b)
		if bytes.Equal(it.Data[format.DedupeItemSize:], sum[:format.DedupeHashLen]) {
			return it.Data[:format.DedupeItemSize]
		}
	}
	t.Fatalf("entry %v: its tail is no block's BLAKE3", it.Key)
	return nil
}

// TestPruneKeepsMostShared: Prune(n) keeps the entries of the n most
// shared extents and unmarks the rest: the kept blocks still share a new
// copy, the others are stored again; Prune(0) empties the index.
func TestPruneKeepsMostShared(t *testing.T) {
	f, blocks, at := indexImage(t, format.CsumXXH3, 6)
	change(t, f, func(put func(format.TreeID, format.Key, []byte), _ func(format.TreeID, format.Key)) {
		put(format.DedupeTree, format.Key{ObjectID: 777, Type: format.DedupeItemKey, Offset: 1 << 40}, indexItems(t, f)[0].Data)
	})
	st, err := f.Index().Prune(2)
	if err != nil {
		t.Fatal(err)
	}
	if st.Entries != 2 || st.Dropped != 5 {
		t.Fatalf("%+v, want 2 entries kept, 5 dropped (4 pruned, 1 stale)", st)
	}
	atClean(t, f)
	for i := range blocks {
		_, e := extentItem(t, f, at[i])
		if marked := e.Flags&format.ExtentFlagDeduped != 0; marked != (i >= 4) {
			t.Fatalf("block %d (in %d files): marked %v after prune", i, i+1, marked)
		}
	}
	for i, b := range blocks {
		if got := hits(t, f, fmt.Sprintf("/again%d", i), b); got != (i >= 4) {
			t.Fatalf("block %d (in %d files) after prune: shared %v", i, i+1, got)
		}
	}
	if st, err := f.Index().Prune(0); err != nil || st.Entries != 0 {
		t.Fatalf("prune to 0: %+v %v", st, err)
	}
	atClean(t, f)
}
