package check

import (
	"testing"

	"github.com/ddfs/ddfs/format"
)

// TestNodeTwice: an fs tree root whose second pointer is made to name its
// first child (a tree whose pointers share a subtree) is NODE_TWICE, and
// the check ends (with a bad data copy too, so the owners' second scan of
// the fs tree runs over the shared subtree).
func TestNodeTwice(t *testing.T) {
	s := newSurgeon(t, newTwoLevelFS(t))
	xs := s.extents(s.ino("/f000"))
	x, err := format.UnmarshalFileExtentItem(xs[len(xs)-1].Data)
	must(t, err)
	s.tx.Abort()
	vol := s.st.Vol
	sb := vol.Super
	root := sb.Roots.Root(format.FSTree)
	if root.Level == 0 {
		t.Fatal("the fs tree is one leaf: add files")
	}
	n := readNode(t, vol, root.Logical)
	if len(n.Ptrs) < 2 {
		t.Fatalf("root has %d pointers", len(n.Ptrs))
	}
	n.Ptrs[1].Logical, n.Ptrs[1].Generation = n.Ptrs[0].Logical, n.Ptrs[0].Generation
	writeNode(t, vol, n)
	// A bad data copy: the owners' scan runs.
	targets, err := vol.Locate(x.DiskLogical)
	must(t, err)
	flip(s.devs[targets[0].DevID-1], int64(targets[0].Physical)+10)
	rep := fsckDevs(t, s.devs, Options{CheckData: true})
	found := false
	for _, p := range rep.Problems {
		found = found || p.Code == NodeTwice
	}
	if !found {
		t.Fatalf("no NODE_TWICE: %v", rep.Problems)
	}
}
