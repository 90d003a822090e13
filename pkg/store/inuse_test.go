package store

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
)

// TestVerifyFreeReadsPastBadFirstCopy: the walk behind a writer's check
// of free space reads interior nodes as readers do: where the first copy
// is damaged, the other, so the nodes below it still count as in use. A
// free map that holds one of them is refused with ErrSpaceInUse.
func TestVerifyFreeReadsPastBadFirstCopy(t *testing.T) {
	devs := memDevs(2, 1<<30)
	fs := create(t, devs, format.ProfileRaid1, format.ProfileRaid1)
	fillTree(t, fs, rand.New(rand.NewPCG(5, 6)), 3000, map[format.Key][]byte{})
	root := fs.sb.Roots.Root(format.FSTree)
	rn, err := fs.readNode(format.FSTree, root.Logical, root.Generation, int(root.Level), nil)
	if err != nil || rn.IsLeaf() {
		t.Fatalf("fs tree root level %d (%v): need an interior root", root.Level, err)
	}
	leaf := rn.Ptrs[len(rn.Ptrs)/2].Logical
	ts, err := fs.Vol.Locate(root.Logical)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := devs[ts[0].DevID-1].WriteAt(bytes.Repeat([]byte{0xAB}, 512), int64(ts[0].Physical)+100); err != nil {
		t.Fatal(err)
	}
	fs.Close()
	if whole, lazy := verifyFreeLying(t, devs, leaf); !errors.Is(whole, ErrSpaceInUse) || !errors.Is(lazy, ErrSpaceInUse) {
		t.Fatalf("free map holding live leaf %d under a root with a bad first copy: %v, block alone %v; want ErrSpaceInUse", leaf, whole, lazy)
	}
}

// TestVerifyFreeFollowsTheCopyReadersChoose: an interior node whose copy
// 0 has the right header but not the parent's key (a stale or foreign
// node at the right place) is read as readers read it, from the copy
// that fits the key: the leaf only that copy names is in use. (A walk of
// copy 0 alone missed it, and a walk without the key refused the node.)
func TestVerifyFreeFollowsTheCopyReadersChoose(t *testing.T) {
	devs := memDevs(2, 1<<30)
	fs := create(t, devs, format.ProfileRaid1, format.ProfileRaid1)
	fillTree(t, fs, rand.New(rand.NewPCG(9, 10)), 20000, map[format.Key][]byte{})
	root := fs.sb.Roots.Root(format.FSTree)
	if root.Level < 2 {
		t.Fatalf("fs tree root level %d: need an interior node below the root", root.Level)
	}
	rn, err := fs.readNode(format.FSTree, root.Logical, root.Generation, int(root.Level), nil)
	if err != nil {
		t.Fatal(err)
	}
	cp := rn.Ptrs[1]
	c, err := fs.readNode(format.FSTree, cp.Logical, cp.Generation, int(root.Level)-1, &cp.Key)
	if err != nil {
		t.Fatal(err)
	}
	leaf := c.Ptrs[0].Logical
	other := *c
	other.Ptrs = append([]format.KeyPtr(nil), c.Ptrs[1:]...) // fits the header, not the key
	if err := fs.Vol.WriteCopy(c.Logical, format.MarshalNode(&other, fs.sb.NodeSize, fs.sb.CsumType), 0); err != nil {
		t.Fatal(err)
	}
	fs.Close()
	if whole, lazy := verifyFreeLying(t, devs, leaf); !errors.Is(whole, ErrSpaceInUse) || !errors.Is(lazy, ErrSpaceInUse) {
		t.Fatalf("free map holding leaf %d that only copy 1 of its parent names: %v, block alone %v; want ErrSpaceInUse", leaf, whole, lazy)
	}
}

// verifyFreeLying holds a free map of node leaf's group that holds leaf,
// as an extent tree that lies would have it, against the trees both ways
// a writer does: whole (verifyFree), and the block alone as a lazily
// loaded map does (checkTaken, lazyfree.go).
func verifyFreeLying(t *testing.T, devs []*device.MemDevice, leaf uint64) (whole, lazy error) {
	t.Helper()
	for _, alone := range []bool{false, true} {
		fs := reopen(t, devs, false)
		bg := fs.blockGroup(leaf)
		free, err := fs.rawFree(bg)
		if err != nil {
			t.Fatal(err)
		}
		if free.Contains(leaf, uint64(fs.sb.NodeSize)) {
			t.Fatalf("leaf %d is free per the extent tree before the test lies", leaf)
		}
		if err := free.Add(leaf, uint64(fs.sb.NodeSize)); err != nil {
			t.Fatal(err)
		}
		if alone {
			bg.free, bg.lazy = free, true
			lazy = fs.checkTaken(bg, leaf, uint64(fs.sb.NodeSize))
		} else {
			whole = fs.verifyFree(bg, free)
		}
		fs.Close()
	}
	return whole, lazy
}

// TestTakeFromSkipsNearlyFullGroups: a writer takes space in logical
// order from the groups loaded and the ones with a good part of them
// free, loading those on the way, but not a nearly full one: loading a
// map scans the group's extent items, and a commit at 1M files loaded six
// nearly full groups for a node each. With only nearly full groups left,
// the emptiest goes first.
func TestTakeFromSkipsNearlyFullGroups(t *testing.T) {
	devs := memDevs(1, 1<<30)
	fs := create(t, devs, format.ProfileSingle, format.ProfileSingle)
	fillTree(t, fs, rand.New(rand.NewPCG(7, 8)), 2000, map[format.Key][]byte{})
	tx, err := fs.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := tx.newChunk(format.ChunkMetadata); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	fs.Close()
	ns := uint64(fs.sb.NodeSize)
	for _, tc := range []struct {
		name   string
		free   []uint64 // each metadata group's free bytes, as its usage says
		loaded int      // a group loaded before (-1: none)
		want   int      // the group the node comes from, the only other one loaded
	}{
		{"first roomy", []uint64{3 * ns, 1 << 30, 0}, -1, 1},
		{"first of the roomy", []uint64{3 * ns, 1 << 30, 1 << 30}, -1, 1},
		{"roomy before the emptiest", []uint64{1 << 30, 2 * ns, 1 << 30}, -1, 0},
		{"roomy before a loaded one", []uint64{1 << 30, 2 * ns, 1 << 30}, 2, 0},
		{"loaded before a roomy one", []uint64{2 * ns, 1 << 30, 1 << 30}, 0, 0},
		{"none roomy: the emptiest", []uint64{2 * ns, 3 * ns, ns}, -1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := reopen(t, devs, false)
			defer fs.Close()
			var meta []*BlockGroup
			for _, bg := range fs.bgs {
				if bg.Chunk.Type == format.ChunkMetadata {
					meta = append(meta, bg)
				}
			}
			if len(meta) != 3 || meta[0].Chunk.Length/roomyPart <= 3*ns {
				t.Fatalf("%d metadata groups", len(meta))
			}
			for i, bg := range meta {
				bg.Used = bg.Chunk.Length - min(tc.free[i], bg.Chunk.Length-bg.Used)
			}
			if tc.loaded >= 0 {
				if err := fs.loadFree(meta[tc.loaded]); err != nil {
					t.Fatal(err)
				}
			}
			tx, err := fs.Begin()
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Abort()
			at, err := tx.allocExtent(format.ChunkMetadata, ns, ns)
			if err != nil {
				t.Fatal(err)
			}
			if got := fs.blockGroup(at); got != meta[tc.want] {
				t.Fatalf("node at %d, in group %d; want group %d", at, got.Chunk.Logical, meta[tc.want].Chunk.Logical)
			}
			for i, bg := range meta {
				if (bg.free != nil) != (i == tc.want || i == tc.loaded) {
					t.Fatalf("group %d loaded: %v, want only groups %d and %d", i, bg.free != nil, tc.want, tc.loaded)
				}
			}
		})
	}
}
