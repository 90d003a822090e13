package check

import (
	"fmt"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/volume"
)

// TestNodeStructure: a node rewritten (checksums valid) so that it
// disagrees with its parent, or a parent pointer moved off the metadata
// chunks, is reported by the node pass with its own code, in the fs tree,
// at the address of the node at fault.
func TestNodeStructure(t *testing.T) {
	base := newTwoLevelFS(t)
	// Each damage edits the fs tree's root (or its second child) and
	// returns the address the problem must name.
	for _, tc := range []struct {
		name   string
		codes  []Code
		damage func(s *surgeon, vol *volume.Volume, root *format.Node) uint64
	}{
		{"child pointer newer than its node", []Code{NodePtrGen}, func(s *surgeon, vol *volume.Volume, root *format.Node) uint64 {
			root.Ptrs[0].Generation = root.Generation + 1
			writeNode(t, vol, root)
			return root.Logical
		}},
		{"parent key past the child's first", []Code{NodeFirstKey, NodeKeyRange}, func(s *surgeon, vol *volume.Volume, root *format.Node) uint64 {
			child := readNode(t, vol, root.Ptrs[1].Logical)
			root.Ptrs[1].Key = child.Items[1].Key // still below the next pointer's
			writeNode(t, vol, root)
			return child.Logical
		}},
		{"empty leaf below the root", []Code{NodeEmpty}, func(s *surgeon, vol *volume.Volume, root *format.Node) uint64 {
			child := readNode(t, vol, root.Ptrs[1].Logical)
			child.Items = nil
			writeNode(t, vol, child)
			return child.Logical
		}},
		{"pointer to a misaligned address", []Code{NodeAlign}, func(s *surgeon, vol *volume.Volume, root *format.Node) uint64 {
			root.Ptrs[1].Logical += 512
			writeNode(t, vol, root)
			return root.Ptrs[1].Logical
		}},
		{"pointer into a data chunk", []Code{NodeChunkType}, func(s *surgeon, vol *volume.Volume, root *format.Node) uint64 {
			root.Ptrs[1].Logical, _ = s.diskExtent(s.ino("/f000"))
			writeNode(t, vol, root)
			return root.Ptrs[1].Logical
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSurgeon(t, base)
			s.tx.Abort()
			vol := s.st.Vol
			rootPtr := vol.Super.Roots.Root(format.FSTree)
			if rootPtr.Level == 0 {
				t.Fatal("the fs tree is one leaf: add files")
			}
			root := readNode(t, vol, rootPtr.Logical)
			logical := tc.damage(s, vol, root)
			rep := fsckDevs(t, s.devs, Options{})
			for _, code := range tc.codes {
				if !hasNodeProblem(rep, code, logical) {
					t.Errorf("no %s at logical %d in the fs tree: %v", code, logical, rep.Problems)
				}
			}
		})
	}
}

// newTwoLevelFS is a one-device image whose fs tree has a root above its
// leaves (4 KiB nodes): 300 files of a sector each, /f000 with a regular
// (not inline) extent too.
func newTwoLevelFS(t *testing.T) []*device.MemDevice {
	t.Helper()
	f, devs := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	for i := range 300 {
		in, err := f.Create(fmt.Sprintf("/f%03d", i), fsys.Attr{Mode: 0o644})
		must(t, err)
		must(t, f.WriteAt(in, []byte(fmt.Sprintf("file %d, a sector of its own", i)), 0))
		if i == 0 {
			must(t, f.WriteAt(in, make([]byte, 8192), 4096)) // a regular extent, not inline
		}
	}
	must(t, f.Sync())
	return devs
}

// readNode reads and decodes the first copy of the node at logical.
func readNode(t *testing.T, vol *volume.Volume, logical uint64) *format.Node {
	t.Helper()
	sb := vol.Super
	buf := make([]byte, sb.NodeSize)
	must(t, vol.ReadCopy(logical, buf, 0))
	n, err := format.UnmarshalNode(buf, sb.CsumType, format.NodeExpect{FSID: sb.FSID, Logical: logical, Level: -1})
	must(t, err)
	return n
}

// writeNode writes n, checksummed, over every copy of its address.
func writeNode(t *testing.T, vol *volume.Volume, n *format.Node) {
	t.Helper()
	must(t, vol.Write(n.Logical, format.MarshalNode(n, vol.Super.NodeSize, vol.Super.CsumType)))
}

func hasNodeProblem(rep *Report, code Code, logical uint64) bool {
	for _, p := range rep.Problems {
		if p.Code == code && p.Tree == format.FSTree.String() && p.Logical == logical {
			return true
		}
	}
	return false
}
