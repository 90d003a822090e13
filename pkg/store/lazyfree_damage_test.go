package store

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
)

// The block check against damage a second fault adds (review of the lazy
// check): each case is a live leaf the extent tree calls free, and a
// block check that would pass it without the guard named.

// liveLeaf fills a DUP-metadata image with n items and returns a leaf of
// the fs tree, its parent and the open filesystem.
func liveLeaf(t *testing.T, devs []*device.MemDevice, n int) (*FS, *format.Node, *format.KeyPtr) {
	t.Helper()
	fs := create(t, devs, format.ProfileSingle, format.ProfileDup)
	fillTree(t, fs, rand.New(rand.NewPCG(uint64(n), 7)), n, map[format.Key][]byte{})
	root := fs.sb.Roots.Root(format.FSTree)
	p, err := fs.readNode(format.FSTree, root.Logical, root.Generation, int(root.Level), nil)
	if err != nil || p.IsLeaf() {
		t.Fatalf("fs tree root level %d (%v): need an interior root", root.Level, err)
	}
	for p.Level > 1 {
		c := p.Ptrs[0]
		if p, err = fs.readNode(format.FSTree, c.Logical, c.Generation, int(p.Level)-1, &c.Key); err != nil {
			t.Fatal(err)
		}
	}
	return fs, p, &p.Ptrs[len(p.Ptrs)/2]
}

// TestLazyFreeGenZeroPointer: readers take a pointer of generation 0 as
// "unknown" and read the node below whatever its header's: the walk
// follows it too.
func TestLazyFreeGenZeroPointer(t *testing.T) {
	devs := memDevs(1, 256<<20)
	fs, _, _ := liveLeaf(t, devs, 12000)
	root := fs.sb.Roots.Root(format.FSTree)
	rn, err := fs.readNode(format.FSTree, root.Logical, root.Generation, int(root.Level), nil)
	if err != nil || rn.Level < 2 {
		t.Fatalf("fs tree root level %d (%v): need two levels of interior nodes", root.Level, err)
	}
	q, err := fs.readNode(format.FSTree, rn.Ptrs[0].Logical, rn.Ptrs[0].Generation, int(rn.Level)-1, &rn.Ptrs[0].Key)
	if err != nil {
		t.Fatal(err)
	}
	x := q.Ptrs[len(q.Ptrs)/2]
	rn.Ptrs[0].Generation = 0
	if err := fs.Vol.Write(rn.Logical, format.MarshalNode(rn, fs.sb.NodeSize, fs.sb.CsumType)); err != nil {
		t.Fatal(err)
	}
	fs.Close()
	g := reopen(t, devs, false)
	if _, err := g.Tree(format.FSTree).Get(x.Key); err != nil {
		t.Fatalf("a reader through the generation-0 pointer: %v", err)
	}
	g.Close()
	if whole, lazy := verifyFreeLying(t, devs, x.Logical); !errors.Is(whole, ErrSpaceInUse) || !errors.Is(lazy, ErrSpaceInUse) {
		t.Fatalf("leaf %d under a generation-0 pointer: %v, block alone %v; want ErrSpaceInUse", x.Logical, whole, lazy)
	}
}

// TestLazyFreeDamagedCopies: every copy of a live leaf fails its checksum
// (a reader may still see it through the cache, or fsck rebuild it), or
// is zeros while this process still reads it (the node cache), or a
// second copy is a newer node at the same address: not free.
func TestLazyFreeDamagedCopies(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cached bool // else the check runs in a new open
		damage func(fs *FS, x uint64, b []byte, m int) []byte
	}{
		{"bad checksum", false, func(_ *FS, _ uint64, b []byte, _ int) []byte { b[len(b)-1] ^= 0xff; return b }},
		{"bad checksum, cached", true, func(_ *FS, _ uint64, b []byte, _ int) []byte { b[len(b)-1] ^= 0xff; return b }},
		{"zeros, cached", true, func(_ *FS, _ uint64, b []byte, _ int) []byte { return make([]byte, len(b)) }},
		{"newer second copy", false, func(fs *FS, x uint64, b []byte, m int) []byte {
			if m == 0 {
				return b
			}
			n, err := format.UnmarshalNode(b, fs.sb.CsumType, format.NodeExpect{FSID: fs.sb.FSID, Logical: x, Level: -1})
			if err != nil {
				panic(err)
			}
			n.Generation = fs.sb.Generation + 5
			return format.MarshalNode(n, fs.sb.NodeSize, fs.sb.CsumType)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			devs := memDevs(1, 256<<20)
			fs, _, x := liveLeaf(t, devs, 3000)
			if _, err := fs.Tree(format.FSTree).Get(x.Key); err != nil { // cached
				t.Fatal(err)
			}
			buf := make([]byte, fs.sb.NodeSize)
			for m := 0; m < fs.Vol.Copies(x.Logical); m++ {
				if err := fs.Vol.ReadCopy(x.Logical, buf, m); err != nil {
					t.Fatal(err)
				}
				if err := fs.Vol.WriteCopy(x.Logical, tc.damage(fs, x.Logical, buf, m), m); err != nil {
					t.Fatal(err)
				}
			}
			if !tc.cached {
				fs.Close()
				fs = reopen(t, devs, false)
			} else if _, err := fs.Tree(format.FSTree).Get(x.Key); err != nil {
				t.Fatalf("the leaf no longer reads in this process: %v", err)
			}
			defer fs.Close()
			bg := fs.blockGroup(x.Logical)
			if err := fs.loadFreeLazy(bg); err != nil {
				t.Fatal(err)
			}
			if err := bg.free.Add(x.Logical, uint64(fs.sb.NodeSize)); err != nil {
				t.Fatal(err)
			}
			if err := fs.checkTaken(bg, x.Logical, uint64(fs.sb.NodeSize)); !errors.Is(err, ErrSpaceInUse) {
				t.Fatalf("live leaf %d taken: %v, want ErrSpaceInUse", x.Logical, err)
			}
		})
	}
}

// TestLazyFreeTakeRefused: through takeFromGroup, as a writer takes it
// (the block is out of the map before it is checked), within the block
// bound and past it, and through the fsync log, whose refusal is not
// "log full" (a commit would not meet it again).
func TestLazyFreeTakeRefused(t *testing.T) {
	devs := memDevs(1, 256<<20)
	fs, _, x := liveLeaf(t, devs, 3000)
	leaf, ns := x.Logical, uint64(fs.sb.NodeSize)
	fs.Close()
	for _, tc := range []struct {
		name string
		past bool
		log  bool
	}{{"block", false, false}, {"past the bound", true, false}, {"fsync log", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			fs := reopen(t, devs, false)
			defer fs.Close()
			tx, err := fs.Begin()
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Abort()
			bg := fs.blockGroup(leaf)
			if err := fs.loadForTaking(bg); err != nil || !bg.lazy {
				t.Fatalf("lazy %v: %v", bg.lazy, err)
			}
			if tc.past {
				bg.lazyChecked = lazyBlocks
			}
			if err := bg.free.Add(leaf, ns); err != nil {
				t.Fatal(err)
			}
			tx.hint[format.ChunkMetadata] = leaf
			if tc.log {
				err = tx.WriteLog([]byte("x"))
				if !errors.Is(err, ErrSpaceInUse) || errors.Is(err, ErrLogFull) {
					t.Fatalf("fsync log over live leaf %d: %v, want ErrSpaceInUse alone", leaf, err)
				}
				return
			}
			if at, ok, err := tx.takeFromGroup(bg, ns, ns); ok || !errors.Is(err, ErrSpaceInUse) {
				t.Fatalf("took %d (%v): %v, want ErrSpaceInUse", at, ok, err)
			}
		})
	}
}

// besideDev stands in for a device with a reader beside the writer at
// generation *oldest (0: none).
type besideDev struct {
	*device.MemDevice
	oldest *uint64
}

func (besideDev) Beside() bool            { return false }
func (besideDev) MarkReader(uint64) error { return nil }
func (d besideDev) OldestReader() (uint64, int, bool, error) {
	return *d.oldest, 1, *d.oldest != 0, nil
}

// TestHeldSpaceOutOfLaterMaps: space a commit freed while a reader beside
// reads the older generation stays out of a group's map loaded after the
// free (lazily or whole), not only out of maps loaded before it.
func TestHeldSpaceOutOfLaterMaps(t *testing.T) {
	devs := memDevs(1, 256<<20)
	fs := create(t, devs, format.ProfileSingle, format.ProfileDup)
	fillTree(t, fs, rand.New(rand.NewPCG(5, 6)), 3000, map[format.Key][]byte{})
	fs.Close()
	var oldest uint64
	fs = openOn(t, []device.Device{besideDev{devs[0], &oldest}}, true)
	defer fs.Close()
	oldest = fs.sb.Generation
	old := fs.sb.Roots.Root(format.FSTree).Logical
	fillTree(t, fs, rand.New(rand.NewPCG(7, 8)), 5, map[format.Key][]byte{})
	if fs.HeldForReaders() == 0 {
		t.Fatal("nothing held for the reader")
	}
	bg := fs.blockGroup(old)
	for _, load := range []func(*BlockGroup) error{fs.loadFree, fs.loadFreeLazy} {
		bg.free, bg.lazy = nil, false // as a group no transaction had loaded
		if err := load(bg); err != nil {
			t.Fatal(err)
		}
		if bg.free.Contains(old, uint64(fs.sb.NodeSize)) {
			t.Fatalf("old root %d, held for a reader at generation %d, is free in a map loaded after", old, oldest)
		}
	}
	oldest = 0 // the reader is gone: the next commit releases it
	fillTree(t, fs, rand.New(rand.NewPCG(9, 10)), 5, map[format.Key][]byte{})
	if !bg.free.Contains(old, uint64(fs.sb.NodeSize)) {
		t.Fatalf("old root %d not free once released", old)
	}
}

// TestLazyFreeRealLie: a live leaf whose METADATA_ITEM is gone from the
// committed extent tree. A writer's first allocation there fails with
// ErrSpaceInUse (the block checked alone); a repair (fsck) never loads a
// map lazily: its whole-map check takes the leaf out and allocation goes
// on elsewhere.
func TestLazyFreeRealLie(t *testing.T) {
	devs := memDevs(1, 256<<20)
	fs, _, x := liveLeaf(t, devs, 3000)
	leaf, ns := x.Logical, uint64(fs.sb.NodeSize)
	tx, err := fs.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Tree(format.ExtentTree).Delete(format.Key{ObjectID: leaf, Type: format.MetadataItemKey, Offset: 0}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	fs.Close()
	for _, repair := range []bool{false, true} {
		fs := reopen(t, devs, false)
		fs.repair = repair // as OpenForRepair opens
		tx, err := fs.Begin()
		if err != nil {
			t.Fatal(err)
		}
		tx.hint[format.ChunkMetadata] = leaf
		at, ok, err := tx.takeFrom(format.ChunkMetadata, ns, ns, func(bg *BlockGroup) bool { return !bg.isNew })
		switch {
		case !repair && !errors.Is(err, ErrSpaceInUse):
			t.Errorf("writer: took %d (%v): %v, want ErrSpaceInUse", at, ok, err)
		case repair && (err != nil || !ok || at == leaf):
			t.Errorf("repair: took %d (%v): %v, want another block", at, ok, err)
		}
		tx.Abort()
		fs.Close()
	}
}
