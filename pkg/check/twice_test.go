package check

import (
	"fmt"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// TestNodeTwice: an fs tree root whose second pointer is made to name its
// first child (a tree whose pointers share a subtree) is NODE_TWICE, and
// the check ends (with a bad data copy too, so the owners' second scan of
// the fs tree runs over the shared subtree).
func TestNodeTwice(t *testing.T) {
	f, devs := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	for i := range 300 { // enough items for a root above the leaves (4 KiB nodes)
		in, err := f.Create(fmt.Sprintf("/f%03d", i), fsys.Attr{Mode: 0o644})
		must(t, err)
		must(t, f.WriteAt(in, []byte(fmt.Sprintf("file %d, a sector of its own", i)), 0))
		if i == 0 {
			must(t, f.WriteAt(in, make([]byte, 8192), 4096)) // a regular extent, not inline
		}
	}
	must(t, f.Sync())
	s := newSurgeon(t, devs)
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
	buf := make([]byte, sb.NodeSize)
	must(t, vol.ReadCopy(root.Logical, buf, 0))
	n, err := format.UnmarshalNode(buf, sb.CsumType, format.NodeExpect{FSID: sb.FSID, Logical: root.Logical, Level: -1})
	must(t, err)
	if len(n.Ptrs) < 2 {
		t.Fatalf("root has %d pointers", len(n.Ptrs))
	}
	n.Ptrs[1].Logical, n.Ptrs[1].Generation = n.Ptrs[0].Logical, n.Ptrs[0].Generation
	must(t, vol.Write(root.Logical, format.MarshalNode(n, sb.NodeSize, sb.CsumType)))
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
