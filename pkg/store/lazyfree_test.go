package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
)

// TestLazyFreeChecksEachBlock: a metadata group's map loaded for
// allocation is not verified whole; each block taken is held against the
// trees on its own. A live leaf the extent tree calls free is refused
// (ErrSpaceInUse), by the block check and, past its bounds, by the whole
// map's; a block never written, and a node copy-on-write left behind,
// are taken; any other use of the map (FreeRanges) verifies it whole.
func TestLazyFreeChecksEachBlock(t *testing.T) {
	devs := memDevs(2, 1<<30)
	fs := create(t, devs, format.ProfileRaid1, format.ProfileRaid1)
	fillTree(t, fs, rand.New(rand.NewPCG(11, 12)), 3000, map[format.Key][]byte{})
	old := fs.sb.Roots.Root(format.FSTree).Logical // replaced by the next commit: a node left behind
	fillTree(t, fs, rand.New(rand.NewPCG(13, 14)), 10, map[format.Key][]byte{})
	root := fs.sb.Roots.Root(format.FSTree)
	rn, err := fs.readNode(format.FSTree, root.Logical, root.Generation, int(root.Level), nil)
	if err != nil || rn.IsLeaf() || root.Logical == old {
		t.Fatalf("fs tree root %d level %d (%v): need a new interior root", root.Logical, root.Level, err)
	}
	leaf := rn.Ptrs[len(rn.Ptrs)/2].Logical
	fs.Close()
	ns := uint64(fs.sb.NodeSize)
	lazy := func(t *testing.T) (*FS, *BlockGroup) {
		fs := reopen(t, devs, false)
		bg := fs.blockGroup(leaf)
		if !fs.lazyEligible(bg) {
			t.Fatal("the leaf's group is not loaded lazily")
		}
		if err := fs.loadFreeLazy(bg); err != nil {
			t.Fatal(err)
		}
		return fs, bg
	}
	t.Run("live leaf", func(t *testing.T) {
		fs, bg := lazy(t)
		defer fs.Close()
		if bg.free.Contains(leaf, ns) {
			t.Fatalf("live leaf %d free per the extent tree", leaf)
		}
		if err := fs.checkTaken(bg, leaf, ns); !errors.Is(err, ErrSpaceInUse) {
			t.Fatalf("live leaf %d taken: %v, want ErrSpaceInUse", leaf, err)
		}
	})
	t.Run("live leaf past the bounds", func(t *testing.T) {
		fs, bg := lazy(t)
		defer fs.Close()
		bg.lazyChecked = lazyBlocks
		if err := bg.free.Add(leaf, ns); err != nil { // the extent tree's lie
			t.Fatal(err)
		}
		if err := fs.checkTaken(bg, leaf, ns); !errors.Is(err, ErrSpaceInUse) {
			t.Fatalf("live leaf %d taken past the bounds: %v, want ErrSpaceInUse", leaf, err)
		}
	})
	t.Run("free blocks", func(t *testing.T) {
		fs, bg := lazy(t)
		defer fs.Close()
		if !bg.free.Contains(old, ns) {
			t.Fatalf("the old root %d is not free", old)
		}
		rs := bg.free.Ranges()
		never := rs[len(rs)-1].End() - ns // the group's unwritten tail
		for _, x := range []uint64{old, never} {
			if err := fs.checkTaken(bg, x, ns); err != nil {
				t.Fatalf("free block %d: %v", x, err)
			}
		}
		if !bg.lazy || bg.lazyChecked != 2 {
			t.Fatalf("lazy %v after %d checks", bg.lazy, bg.lazyChecked)
		}
	})
	t.Run("other uses verify", func(t *testing.T) {
		fs, bg := lazy(t)
		defer fs.Close()
		if err := bg.free.Add(leaf, ns); err != nil {
			t.Fatal(err)
		}
		if _, err := fs.FreeRanges(bg); !errors.Is(err, ErrSpaceInUse) {
			t.Fatalf("FreeRanges of a lazy map holding live leaf %d: %v, want ErrSpaceInUse", leaf, err)
		}
	})
}

// TestLazyFreeHoldsSnapshotNodes: a node only a snapshot keeps (the live
// tree replaced it) is found by the block check through the snapshot's
// root, and one walk over its bounds falls back to the whole map's
// check, which finds it too.
func TestLazyFreeHoldsSnapshotNodes(t *testing.T) {
	devs := memDevs(1, 256<<20)
	fs := create(t, devs, format.ProfileSingle, format.ProfileDup)
	putItems(t, fs, 1)
	kept := snapshotNow(t, fs)
	putItems(t, fs, 2) // every leaf copied: the old ones are the snapshot's alone
	rn, err := fs.readNode(format.FSTree, kept.Logical, kept.Generation, int(kept.Level), nil)
	if err != nil || rn.IsLeaf() {
		t.Fatalf("snapshot root level %d (%v): need an interior root", kept.Level, err)
	}
	leaf := rn.Ptrs[len(rn.Ptrs)/2].Logical
	fs.Close()
	for _, budget := range []int{lazyNodes, 0} {
		t.Run(fmt.Sprintf("walk-bound-%d", budget), func(t *testing.T) {
			defer func(n int) { lazyNodes = n }(lazyNodes)
			lazyNodes = budget
			whole, lazy := verifyFreeLying(t, devs, leaf)
			if !errors.Is(whole, ErrSpaceInUse) || !errors.Is(lazy, ErrSpaceInUse) {
				t.Fatalf("free map holding snapshot leaf %d: %v, block alone %v; want ErrSpaceInUse", leaf, whole, lazy)
			}
		})
	}
}

// TestLazyFreeFallsBackWhole: a block whose walk goes over its bound is
// not guessed free: the group's whole map is verified (and the map is no
// longer lazy), then the block is taken.
func TestLazyFreeFallsBackWhole(t *testing.T) {
	devs := memDevs(1, 256<<20)
	fs := create(t, devs, format.ProfileSingle, format.ProfileDup)
	fillTree(t, fs, rand.New(rand.NewPCG(21, 22)), 3000, map[format.Key][]byte{})
	old := fs.sb.Roots.Root(format.FSTree).Logical
	fillTree(t, fs, rand.New(rand.NewPCG(23, 24)), 10, map[format.Key][]byte{})
	fs.Close()
	defer func(n int) { lazyNodes = n }(lazyNodes)
	lazyNodes = 0
	fs = reopen(t, devs, false)
	defer fs.Close()
	bg := fs.blockGroup(old)
	if err := fs.loadFreeLazy(bg); err != nil {
		t.Fatal(err)
	}
	if !bg.free.Contains(old, uint64(fs.sb.NodeSize)) {
		t.Fatalf("the old root %d is not free", old)
	}
	if err := fs.checkTaken(bg, old, uint64(fs.sb.NodeSize)); err != nil {
		t.Fatalf("old root %d: %v", old, err)
	}
	if bg.lazy {
		t.Fatal("a walk over its bound left the map lazy: the whole map was not verified")
	}
}

// TestLazyFreeUnreadableIsNotFree: a block whose copies cannot be read is
// not taken as free by the block check ("could not read" is not "no
// node"): the whole map is verified, and a live leaf is still refused.
func TestLazyFreeUnreadableIsNotFree(t *testing.T) {
	mem := device.NewMemDevice("mem0", 256<<20)
	faulty := device.NewFaulty(mem, nil)
	fs, err := Create(CreateParams{FSID: [16]byte{9}, Label: "t", Csum: format.CsumCRC32C, NodeSize: 4096, SectorSize: 4096,
		Data: format.ProfileSingle, Metadata: format.ProfileDup, Devices: []NewDevice{{Dev: faulty, Path: "mem0"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	fillTree(t, fs, rand.New(rand.NewPCG(31, 32)), 3000, map[format.Key][]byte{})
	root := fs.sb.Roots.Root(format.FSTree)
	rn, err := fs.readNode(format.FSTree, root.Logical, root.Generation, int(root.Level), nil)
	if err != nil || rn.IsLeaf() {
		t.Fatalf("fs tree root level %d (%v): need an interior root", root.Level, err)
	}
	leaf, ns := rn.Ptrs[len(rn.Ptrs)/2].Logical, uint64(fs.sb.NodeSize)
	ts, err := fs.Vol.Locate(leaf)
	if err != nil || len(ts) != 2 {
		t.Fatalf("leaf %d has %d copies (%v), want 2", leaf, len(ts), err)
	}
	faulty.SetRule(func(op device.OpKind, off, n int64, _ int) error {
		for _, c := range ts {
			if op == device.OpRead && off < int64(c.Physical+ns) && off+n > int64(c.Physical) {
				return syscall.EIO
			}
		}
		return nil
	})
	bg := fs.blockGroup(leaf)
	if err := fs.loadFreeLazy(bg); err != nil {
		t.Fatal(err)
	}
	if err := bg.free.Add(leaf, ns); err != nil { // the extent tree's lie
		t.Fatal(err)
	}
	if err := fs.checkTaken(bg, leaf, ns); !errors.Is(err, ErrSpaceInUse) {
		t.Fatalf("unreadable live leaf %d taken: %v, want ErrSpaceInUse", leaf, err)
	}
}
