package store

import (
	"fmt"
	"slices"
	"testing"

	"github.com/ddfs/ddfs/format"
)

// TestLiveNodesHoldSnapshots: the nodes only a snapshot keeps are in
// use for every check of free space (verifyFree's node list): after the
// live fs tree has replaced all of them, they are still listed once.
func TestLiveNodesHoldSnapshots(t *testing.T) {
	fs := create(t, memDevs(1, 256<<20), format.ProfileSingle, format.ProfileDup)
	put := func(val byte) { putItems(t, fs, val) }
	put(1)
	kept := snapshotNow(t, fs)
	// As an open finds it: nodes up to the snapshot root's generation
	// may be shared.
	fs.sharedGen = 0
	if err := fs.loadSharedGen(); err != nil || fs.sharedGen != kept.Generation {
		t.Fatalf("shared generation %d (%v), want %d", fs.sharedGen, err, kept.Generation)
	}
	// Right after the snapshot every node is named by two roots.
	if shared, err := fs.liveNodes(); err != nil || len(shared) == 0 {
		t.Fatalf("with every node shared: %d nodes listed (%v)", len(shared), err)
	}
	put(2) // every leaf and the root copied: the old ones are the snapshot's alone
	var snapNodes []uint64
	if err := fs.TreeAt(kept).WalkNodes(func(n *format.Node) error { snapNodes = append(snapNodes, n.Logical); return nil }); err != nil {
		t.Fatal(err)
	}
	if fs.sb.Roots.Root(format.FSTree).Logical == kept.Logical || len(snapNodes) < 3 {
		t.Fatalf("live root %d, snapshot root %d, %d snapshot nodes: nothing to test", fs.sb.Roots.Root(format.FSTree).Logical, kept.Logical, len(snapNodes))
	}
	nodes, err := fs.liveNodes()
	if err != nil {
		t.Fatal(err)
	}
	nodes = slices.Sorted(slices.Values(nodes)) // listed in walk order
	for _, l := range snapNodes {
		if _, ok := slices.BinarySearch(nodes, l); !ok {
			t.Fatalf("snapshot node %d is not among the nodes in use", l)
		}
	}
}

// putItems commits 2000 items of the fs tree whose values name val: run
// again with another val, it copies every leaf.
func putItems(t *testing.T, fs *FS, val byte) {
	t.Helper()
	tx, err := fs.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(0); i < 2000; i++ {
		k := format.Key{ObjectID: 300 + i, Type: format.XattrItemKey, Offset: 1}
		if err := tx.Tree(format.FSTree).Put(k, []byte(fmt.Sprint(val, i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// snapshotNow commits snapshot "s" of the live fs tree and returns the
// root it keeps.
func snapshotNow(t *testing.T, fs *FS) format.RootPtr {
	t.Helper()
	tx, err := fs.Begin()
	if err != nil {
		t.Fatal(err)
	}
	kept := fs.sb.Roots.Root(format.FSTree)
	if _, err := tx.CreateSnapshot(format.SnapshotItem{Name: "s", UUID: [16]byte{1}}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return kept
}
