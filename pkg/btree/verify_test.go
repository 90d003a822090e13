package btree

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ddfs/ddfs/format"
)

// twoLevels builds an uncommitted tree of 4 KiB nodes with at least two
// levels; its nodes are the store's dirty nodes, so a test can damage them.
func twoLevels(t *testing.T) (*memStore, *Tree, *format.Node) {
	t.Helper()
	s := newMemStore(t, 4096)
	tr := New(s, format.FSTree, format.RootPtr{})
	for i := 0; i < 400; i++ {
		if err := tr.Insert(format.Key{ObjectID: uint64(i), Type: 1}, make([]byte, 40)); err != nil {
			t.Fatal(err)
		}
	}
	root, err := tr.readRoot()
	if err != nil || root.IsLeaf() {
		t.Fatalf("root %v, %v: want an internal node", root, err)
	}
	if err := tr.Verify(); err != nil {
		t.Fatalf("undamaged tree: %v", err)
	}
	return s, tr, root
}

// TestVerifyFindsDamage: each kind of damage is ErrCorrupt.
func TestVerifyFindsDamage(t *testing.T) {
	for name, damage := range map[string]func(tr *Tree, root *format.Node){
		"key order": func(tr *Tree, root *format.Node) {
			leaf, _ := tr.readChild(root, 0)
			leaf.Items[0].Key, leaf.Items[1].Key = leaf.Items[1].Key, leaf.Items[0].Key
			root.Ptrs[0].Key = leaf.Items[0].Key
		},
		"order across leaves": func(tr *Tree, root *format.Node) {
			leaf, _ := tr.readChild(root, 1)
			leaf.Items[0].Key = format.Key{}
			root.Ptrs[1].Key = leaf.Items[0].Key
		},
		"parent key": func(tr *Tree, root *format.Node) { root.Ptrs[1].Key.Offset++ },
		"empty leaf": func(tr *Tree, root *format.Node) {
			leaf, _ := tr.readChild(root, 1)
			leaf.Items = nil
		},
		"overfull leaf": func(tr *Tree, root *format.Node) {
			leaf, _ := tr.readChild(root, 0)
			leaf.Items[len(leaf.Items)-1].Data = make([]byte, 4096)
		},
		"too many pointers": func(tr *Tree, root *format.Node) {
			for len(root.Ptrs) <= tr.maxPtrs() {
				root.Ptrs = append(root.Ptrs, root.Ptrs[len(root.Ptrs)-1])
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, tr, root := twoLevels(t)
			damage(tr, root)
			if err := tr.Verify(); !errors.Is(err, format.ErrCorrupt) {
				t.Fatalf("Verify: %v, want ErrCorrupt", err)
			}
		})
	}
}

// TestWalkNodes: every node once, parents first; errors of fn and of a
// missing child come back; an empty tree has no nodes.
func TestWalkNodes(t *testing.T) {
	empty := New(newMemStore(t, 4096), format.FSTree, format.RootPtr{})
	calls := 0
	if err := empty.WalkNodes(func(*format.Node) error { calls++; return nil }); err != nil || calls != 0 {
		t.Fatalf("empty tree: %d calls, %v", calls, err)
	}
	if err := empty.Verify(); err != nil {
		t.Fatalf("empty tree: Verify %v", err)
	}

	s, tr, root := twoLevels(t)
	s.commit()
	var levels []uint8
	if err := tr.WalkNodes(func(n *format.Node) error { levels = append(levels, n.Level); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(levels) != reachable(t, tr) || len(levels) != len(s.disk) || levels[0] != root.Level {
		t.Fatalf("walked %d nodes (first level %d), %d reachable, %d stored", len(levels), levels[0], reachable(t, tr), len(s.disk))
	}
	stop := errors.New("stop")
	calls = 0
	if err := tr.WalkNodes(func(*format.Node) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("fn error: %v after %d calls", err, calls)
	}

	// A child that cannot be read is an error for both walkers, never a
	// shorter tree.
	delete(s.disk, root.Ptrs[len(root.Ptrs)-1].Logical)
	if err := tr.WalkNodes(func(*format.Node) error { return nil }); err == nil {
		t.Fatal("WalkNodes: missing child not reported")
	}
	if err := tr.Verify(); err == nil {
		t.Fatal("Verify: missing child not reported")
	}
}

// TestDeleteKeepsNodesFilled: after most keys of a three-level tree are
// deleted, the leaves and internal nodes are merged, not left sparse: a
// node below a quarter full is rebalanced, so their number stays within
// four times what the remaining items need.
func TestDeleteKeepsNodesFilled(t *testing.T) {
	s := newMemStore(t, 4096)
	tr := New(s, format.FSTree, format.RootPtr{})
	const n = 20000
	for i := 0; i < n; i++ {
		if err := tr.Insert(format.Key{ObjectID: uint64(i)}, make([]byte, 8)); err != nil {
			t.Fatal(err)
		}
	}
	if tr.Root().Level < 2 {
		t.Fatalf("root level %d: want three levels", tr.Root().Level)
	}
	s.commit()
	left := 0
	for i := 0; i < n; i++ {
		if i%7 == 0 {
			left++
			continue
		}
		if err := tr.Delete(format.Key{ObjectID: uint64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	s.commit()
	if err := tr.Verify(); err != nil {
		t.Fatal(err)
	}
	var leaves, inner, ptrs int
	tr.WalkNodes(func(nd *format.Node) error {
		if nd.IsLeaf() {
			leaves++
		} else {
			inner++
			ptrs += len(nd.Ptrs)
		}
		return nil
	})
	perLeaf := tr.capacity() / (format.LeafItemSize + 8)
	needLeaves := (left + perLeaf - 1) / perLeaf
	needInner := (leaves + tr.maxPtrs() - 1) / tr.maxPtrs()
	if leaves > 4*needLeaves+1 || inner > 4*needInner+2 {
		t.Fatalf("%d items left in %d leaves (need %d) and %d internal nodes (need %d)", left, leaves, needLeaves, inner, needInner)
	}
}

// TestSplitPoints: the most even two-way cut where both halves fit (the
// first of equally even ones), else greedy packing that fills a group up
// to exactly the capacity.
func TestSplitPoints(t *testing.T) {
	items := func(sizes ...int) []format.Item { // sizes in bytes including the item header
		var out []format.Item
		for _, s := range sizes {
			out = append(out, format.Item{Data: make([]byte, s-format.LeafItemSize)})
		}
		return out
	}
	for _, tc := range []struct {
		sizes    []int
		capacity int
		want     []int
	}{
		{[]int{300, 300, 300, 300}, 1000, []int{0, 2}},
		{[]int{400, 200, 400}, 600, []int{0, 1}},                 // two cuts as even: the first
		{[]int{300, 200, 300, 300, 300}, 500, []int{0, 2, 3, 4}}, // greedy, the first group exactly full
		{[]int{500, 500}, 500, []int{0, 1}},
	} {
		if got := splitPoints(items(tc.sizes...), tc.capacity); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%v in %d: cut at %v, want %v", tc.sizes, tc.capacity, got, tc.want)
		}
	}
}
