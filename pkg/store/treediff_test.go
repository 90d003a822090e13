package store

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ddfs/ddfs/format"
)

// TestDiffTreesRefusesNewerChild: DiffTrees reads nodes as every reader
// does and refuses a child newer than its parent (fsck's NODE_PTR_GEN),
// even one whose header matches its pointer: the writer's lazy
// free-space check counts on no reader following such a pointer.
func TestDiffTreesRefusesNewerChild(t *testing.T) {
	devs := memDevs(1, 256<<20)
	fs := create(t, devs, format.ProfileSingle, format.ProfileSingle)
	fillTree(t, fs, rand.New(rand.NewPCG(41, 42)), 3000, map[format.Key][]byte{})
	snap := snapshotNow(t, fs)
	fillTree(t, fs, rand.New(rand.NewPCG(43, 44)), 5, map[format.Key][]byte{})
	live := fs.sb.Roots.Root(format.FSTree)
	if err := fs.DiffTrees(snap, live, func(format.Key, []byte, []byte) error { return nil }); err != nil {
		t.Fatalf("before the damage: %v", err)
	}
	rn, err := fs.readNode(format.FSTree, live.Logical, live.Generation, int(live.Level), nil)
	if err != nil || rn.IsLeaf() {
		t.Fatalf("live root level %d (%v): need an interior root", live.Level, err)
	}
	// The child and its pointer both say a generation past the root's.
	p := &rn.Ptrs[0]
	c, err := fs.readNode(format.FSTree, p.Logical, p.Generation, int(rn.Level)-1, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Generation = rn.Generation + 1
	p.Generation = c.Generation
	for _, n := range []*format.Node{c, rn} {
		if err := fs.Vol.Write(n.Logical, format.MarshalNode(n, fs.sb.NodeSize, fs.sb.CsumType)); err != nil {
			t.Fatal(err)
		}
	}
	fs.Close()
	fs = reopen(t, devs, false)
	defer fs.Close()
	err = fs.DiffTrees(snap, live, func(format.Key, []byte, []byte) error { return nil })
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("diff through a child newer than its parent: %v, want ErrCorrupt (newer)", err)
	}
}
