package btree

import (
	"errors"
	"testing"

	"github.com/ddfs/ddfs/format"
)

// TestChildChecks: a reader checks every child against the pointer that
// led to it (FORMAT.md §4.1), as fsck does, so a crafted tree with valid
// checksums is reported as corrupt, never answered as "absent".
func TestChildChecks(t *testing.T) {
	for _, tc := range []struct {
		name string
		// craft changes the committed root and its child 1.
		craft func(s *memStore, root, child *format.Node)
	}{
		{"pointer key is not the first key", func(s *memStore, root, child *format.Node) {
			root.Ptrs[1].Key = format.Key{ObjectID: child.FirstKey().ObjectID, Type: 1, Offset: 1}
			// (its first key is now hidden from lookups, which go left:
			// only reading child 1 or a walk tells)
		}},
		{"child reaches the next pointer", func(s *memStore, root, child *format.Node) {
			root.Ptrs[2].Key = lastKey(child)
		}},
		{"child newer than its parent", func(s *memStore, root, child *format.Node) {
			child.Generation = root.Generation + 1
			root.Ptrs[1].Generation = child.Generation
		}},
		{"child not node-aligned", func(s *memStore, root, child *format.Node) {
			delete(s.disk, child.Logical)
			child.Logical += 512
			root.Ptrs[1].Logical = child.Logical
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, tr := committedTree(t)
			root, err := tr.readRoot()
			if err != nil || root.IsLeaf() || len(root.Ptrs) < 3 {
				t.Fatalf("want a root with 3 children or more: %v", err)
			}
			child, err := tr.readChild(root, 1)
			if err != nil {
				t.Fatal(err)
			}
			probe := child.Items[1].Key // a lookup of it reads child 1
			tc.craft(s, root, child)
			s.disk[child.Logical] = format.MarshalNode(child, s.nodesize, format.CsumCRC32C)
			s.disk[root.Logical] = format.MarshalNode(root, s.nodesize, format.CsumCRC32C)
			for _, hinted := range []bool{false, true} {
				tr := New(s, format.FSTree, tr.Root())
				if hinted { // the leaves either side answered first (if they can)
					tr.UseHints(&Hints{})
					tr.Get(root.Ptrs[0].Key)
					tr.Get(root.Ptrs[len(root.Ptrs)-1].Key)
				}
				_, getErr := tr.Get(probe)
				_, leErr := tr.SeekLE(probe)
				seekErr := tr.Seek(probe).Err()
				scanErr := tr.Scan(format.Key{}, format.MaxKey, func(format.Item) (bool, error) { return true, nil })
				for name, err := range map[string]error{"Get": getErr, "SeekLE": leErr, "Seek": seekErr, "Scan": scanErr, "Verify": tr.Verify()} {
					if !errors.Is(err, format.ErrCorrupt) {
						t.Errorf("hinted %v: %s: %v, want ErrCorrupt", hinted, name, err)
					}
				}
			}
		})
	}
}

// committedTree is a committed tree of 400 items in 4 KiB nodes (two
// levels or more).
func committedTree(t *testing.T) (*memStore, *Tree) {
	s := newMemStore(t, 4096)
	tr := New(s, format.FSTree, format.RootPtr{})
	for i := uint64(0); i < 400; i++ {
		if err := tr.Insert(format.Key{ObjectID: i, Type: 1}, make([]byte, 40)); err != nil {
			t.Fatal(err)
		}
	}
	s.commit()
	return s, tr
}
