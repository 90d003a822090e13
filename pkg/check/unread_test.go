package check

import (
	"fmt"
	"slices"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/volume"
)

// emptiedLeaf is newTwoLevelFS with one fs tree leaf emptied, its
// checksums valid: the leaf score rates highest (at least min), whose
// items it returns. before, if set, reads the image before the damage.
func emptiedLeaf(t *testing.T, score func(*format.Node) int, min int, before func(*surgeon)) (s *surgeon, leaf uint64, lost []format.Item) {
	t.Helper()
	s = newSurgeon(t, newTwoLevelFS(t))
	if before != nil {
		before(s)
	}
	s.tx.Abort()
	vol := s.st.Vol
	rootPtr := vol.Super.Roots.Root(format.FSTree)
	if rootPtr.Level != 1 {
		t.Fatalf("fs tree of level %d, want a root above its leaves", rootPtr.Level)
	}
	var best *format.Node
	bestN := 0
	for _, p := range readNode(t, vol, rootPtr.Logical).Ptrs {
		n := readNode(t, vol, p.Logical)
		if k := score(n); k > bestN {
			best, bestN = n, k
		}
	}
	if bestN < min {
		t.Fatalf("no leaf holds %d of the items wanted (at most %d)", min, bestN)
	}
	lost = slices.Clone(best.Items)
	best.Items = nil
	writeNode(t, vol, best)
	return s, best.Logical, lost
}

func rootDirItem(k format.Key) bool {
	return k.ObjectID == format.RootDirIno && k.Type == format.DirItemKey
}

// onlyRootDirItems rates a leaf that holds nothing but the root
// directory's DIR_ITEMs by their number (0: it holds something else).
func onlyRootDirItems(n *format.Node) int {
	for _, it := range n.Items {
		if !rootDirItem(it.Key) {
			return 0
		}
	}
	return len(n.Items)
}

// countRefs rates a leaf by its INODE_REF items.
func countRefs(n *format.Node) int {
	k := 0
	for _, it := range n.Items {
		if it.Key.Type == format.InodeRefKey {
			k++
		}
	}
	return k
}

// TestUnreadLeafInNamesPass (the reviewer's reproduction): an fs tree
// leaf that held only root directory DIR_ITEMs (about 90) is emptied,
// its checksums valid. The walk reads it (NODE_EMPTY); the names pass
// reads the tree through a btree, as the filesystem does, which refuses
// it: its lookups and its scan fail there. That must show as the fs tree
// incomplete (it was silent: NODE_EMPTY alone), and -y must delete or
// rewrite no name or inode on the guess that what it could not read is
// absent: every file named in the leaves that read still resolves to its
// inode, and every file reads as before.
func TestUnreadLeafInNamesPass(t *testing.T) {
	inos := map[string]uint64{}
	var before map[uint64][32]byte
	s, leaf, lost := emptiedLeaf(t, onlyRootDirItems, 40, func(s *surgeon) {
		for i := range 300 {
			name := fmt.Sprintf("f%03d", i)
			inos[name] = s.ino("/" + name)
		}
		before = contents(t, s.devs)
	})
	if len(before) != 300 {
		t.Fatalf("%d files read before the damage, want 300", len(before))
	}
	gone := map[string]bool{}
	for _, it := range lost {
		es, err := format.UnmarshalDirEntries(it.Data)
		must(t, err)
		for _, e := range es {
			gone[e.Name] = true
		}
	}
	t.Logf("leaf %d held %d items, the DIR_ITEMs of %d names", leaf, len(lost), len(gone))
	kept := map[string]uint64{} // names whose DIR_ITEM is in a leaf that reads
	for name, ino := range inos {
		if !gone[name] {
			kept[name] = ino
		}
	}

	rep := fsckDevs(t, s.devs, Options{})
	if !hasNodeProblem(rep, NodeEmpty, leaf) {
		t.Errorf("no NODE_EMPTY at %d: %v", leaf, rep.Problems)
	}
	if !slices.Contains(rep.Incomplete, format.FSTree.String()) {
		t.Fatalf("fs tree not incomplete (%v): a lookup that could not read concluded; problems %v", rep.Incomplete, rep.Problems)
	}
	for _, p := range rep.Problems {
		if crossChecks[p.Code] {
			t.Errorf("cross-check reported over an incomplete tree: %v", p)
		}
	}

	fixed := repairDevs(t, s.devs, ModeRepair)
	t.Logf("-y: rebuilt %q, %d nodes lost, %d problems", fixed.RebuiltTree, fixed.NodesLost, len(fixed.Problems))
	f := openedFS(t, s.devs)
	if f == nil {
		t.Fatal("the filesystem does not open after -y")
	}
	for name, ino := range kept {
		in, err := f.Resolve("/"+name, false)
		if err != nil {
			t.Errorf("/%s (inode %d, named in a leaf that reads) does not resolve after -y: %v", name, ino, err)
			continue
		}
		if in.Ino != ino {
			t.Errorf("/%s is inode %d after -y, was %d", name, in.Ino, ino)
		}
	}
	// Nothing was deleted: the names lost with the leaf come back from
	// their DIR_INDEX (INDEX_NO_ITEM, once the rebuilt tree reads whole),
	// and every file reads as before.
	readsAsBefore(t, s.devs, before)
	cleanAfter(t, s.devs, "-n after -y")
}

// TestUnreadLookup: a lookup of the names pass whose key lies behind a
// node that does not read concludes nothing and marks the fs tree
// incomplete: a DIR_INDEX whose DIR_ITEM is in the emptied leaf is not
// INDEX_NO_ITEM, and the failure is not silent. So does a path lookup
// (setPaths) of an inode whose names were in it.
func TestUnreadLookup(t *testing.T) {
	open := func(t *testing.T, s *surgeon) (*checker, lookup) {
		c := walkedChunks(t, s)
		root := c.sb.Roots.Root(format.FSTree)
		return c, lookup{c: c, t: btree.New(&nodeReader{c: c, cache: map[uint64]*format.Node{}}, format.FSTree, root)}
	}
	incomplete := func(t *testing.T, c *checker) {
		t.Helper()
		if !slices.Equal(c.rep.Incomplete, []string{format.FSTree.String()}) {
			t.Errorf("incomplete %v, want [fs]", c.rep.Incomplete)
		}
	}
	t.Run("DIR_INDEX", func(t *testing.T) {
		index := map[string]uint64{}
		s, _, lost := emptiedLeaf(t, onlyRootDirItems, 40, func(s *surgeon) {
			for _, it := range s.items(format.FSTree, dirIndexKey(format.RootDirIno, 0), dirIndexKey(format.RootDirIno, noIndex)) {
				e, err := format.UnmarshalDirEntry(it.Data)
				must(t, err)
				index[e.Name] = it.Key.Offset
			}
		})
		es, err := format.UnmarshalDirEntries(lost[len(lost)/2].Data)
		must(t, err)
		e := es[0]
		idx, ok := index[e.Name]
		if !ok {
			t.Fatalf("no DIR_INDEX of %q", e.Name)
		}
		c, l := open(t, s)
		c.matchDirIndex(l, format.RootDirIno, idx, e)
		if len(c.rep.Problems) != 0 {
			t.Errorf("concluded from a lookup that did not read: %v", c.rep.Problems)
		}
		incomplete(t, c)
	})
	t.Run("path", func(t *testing.T) {
		s, _, lost := emptiedLeaf(t, countRefs, 10, nil)
		var ino uint64
		for _, it := range lost {
			if it.Key.Type == format.InodeRefKey {
				ino = it.Key.ObjectID
			}
		}
		c, _ := open(t, s)
		c.rep.Problems = append(c.rep.Problems, Problem{Code: Nlink, Ino: ino})
		c.setPaths()
		if p := c.rep.Problems[0].Path; p != "" {
			t.Errorf("inode %d has path %q", ino, p)
		}
		incomplete(t, c)
	})
}

// TestLostPointer: an fs tree pointer moved to a misaligned address
// (checksums valid) leaves its leaf unread by the walk: NODE_ALIGN, and
// the tree incomplete, not the leaf's items absent (at the root: the root
// does not read, TREE_ROOT_BAD). -y then rebuilds the tree without that
// leaf, and every file none of whose items it held still resolves.
func TestLostPointer(t *testing.T) {
	inos := map[string]uint64{}
	s := newSurgeon(t, newTwoLevelFS(t))
	for i := range 300 {
		name := fmt.Sprintf("f%03d", i)
		inos[name] = s.ino("/" + name)
	}
	s.tx.Abort()
	vol := s.st.Vol
	rootPtr := vol.Super.Roots.Root(format.FSTree)
	root := readNode(t, vol, rootPtr.Logical)
	lost := readNode(t, vol, root.Ptrs[1].Logical)
	in := map[uint64]bool{} // inodes with an item, or a name, in the lost leaf
	for _, it := range lost.Items {
		in[it.Key.ObjectID] = true
		switch it.Key.Type {
		case format.DirItemKey:
			es, err := format.UnmarshalDirEntries(it.Data)
			must(t, err)
			for _, e := range es {
				in[e.Ino] = true
			}
		case format.DirIndexKey:
			e, err := format.UnmarshalDirEntry(it.Data)
			must(t, err)
			in[e.Ino] = true
		}
	}
	bad := root.Ptrs[1].Logical + 512
	root.Ptrs[1].Logical = bad
	writeNode(t, vol, root)

	t.Run("walk", func(t *testing.T) {
		c := walkedChunks(t, s)
		c.walk(format.FSTree) // the walk alone: no later pass reads the tree
		if !slices.Equal(c.rep.Incomplete, []string{format.FSTree.String()}) {
			t.Errorf("incomplete %v after the walk, want [fs]", c.rep.Incomplete)
		}
		c = walkedChunks(t, s)
		c.visit(format.FSTree, bad, rootPtr.Generation, int(rootPtr.Level), nil, bounds{format.Key{}, format.MaxKey}, true, nil)
		if !slices.Equal(c.rep.Incomplete, []string{format.FSTree.String()}) || !hasNodeProblem(c.rep, TreeRootBad, bad) {
			t.Errorf("a root at a misaligned address: incomplete %v, problems %v; want [fs] and TREE_ROOT_BAD", c.rep.Incomplete, c.rep.Problems)
		}
	})
	rep := fsckDevs(t, s.devs, Options{})
	if !hasNodeProblem(rep, NodeAlign, bad) || !slices.Contains(rep.Incomplete, format.FSTree.String()) {
		t.Fatalf("incomplete %v, problems %v; want NODE_ALIGN at %d and the fs tree incomplete", rep.Incomplete, rep.Problems, bad)
	}
	fixed := repairDevs(t, s.devs, ModeRepair)
	if fixed.RebuiltTree != "fs" || fixed.NodesLost != 1 {
		t.Errorf("rebuilt %q without %d nodes, want the fs tree without 1", fixed.RebuiltTree, fixed.NodesLost)
	}
	f := openedFS(t, s.devs)
	if f == nil {
		t.Fatal("the filesystem does not open after -y")
	}
	kept := 0
	for name, ino := range inos {
		if in[ino] {
			continue
		}
		kept++
		if got, err := f.Resolve("/"+name, false); err != nil || got.Ino != ino {
			t.Errorf("/%s (inode %d, no item in the lost leaf) after -y: %v", name, ino, err)
		}
	}
	if kept == 0 {
		t.Fatal("every file had an item in the lost leaf")
	}
}

// walkedChunks is a checker over s.devs that has walked the chunk tree
// (the mapping of the metadata chunks) and nothing else.
func walkedChunks(t *testing.T, s *surgeon) *checker {
	t.Helper()
	var ds []device.Device
	for _, d := range s.devs {
		ds = append(ds, d)
	}
	vol, err := volume.FromDevices(ds, false)
	must(t, err)
	c := newChecker(vol, Options{})
	c.walk(format.ChunkTree)
	if len(c.rep.Problems) != 0 || len(c.rep.Incomplete) != 0 {
		t.Fatalf("chunk tree: %v, incomplete %v", c.rep.Problems, c.rep.Incomplete)
	}
	t.Cleanup(func() { c.reads.arena.free(); c.fs.free() })
	return c
}
