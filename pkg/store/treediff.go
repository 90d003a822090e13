package store

import (
	"bytes"
	"fmt"

	"github.com/ddfs/ddfs/format"
)

// ChangedObjects returns the object ids (inode numbers) of the items that
// differ between the fs trees at roots a and b (DiffTrees).
func (fs *FS) ChangedObjects(a, b format.RootPtr) (map[uint64]bool, error) {
	changed := map[uint64]bool{}
	err := fs.DiffTrees(a, b, func(k format.Key, _, _ []byte) error {
		changed[k.ObjectID] = true
		return nil
	})
	return changed, err
}

// DiffTrees calls fn, in key order, for each key whose item differs
// between the fs trees at roots a and b, two trees of one image that
// share the nodes neither changed (FORMAT.md §6.12): old is a's value,
// new b's (nil: no such item). It walks both trees a level at a time
// and enters only the nodes the other tree's same level does not hold
// (a node's level is fixed, so a shared node is shared whole): the cost
// follows what changed, not the trees' size. Memory: the unshared nodes.
// The values passed to fn are only valid during the call.
func (fs *FS) DiffTrees(a, b format.RootPtr, fn func(k format.Key, old, new []byte) error) error {
	la, lb, err := fs.unsharedLeaves(a, b)
	if err != nil {
		return err
	}
	ia, ib := leafItems{leaves: la}, leafItems{leaves: lb}
	// The unshared leaves of each tree cover the same keys (the shared
	// leaves are in both): a key whose item differs, or is on one side
	// only, changed.
	for {
		x, y := ia.peek(), ib.peek()
		switch {
		case x == nil && y == nil:
			return nil
		case y == nil || x != nil && x.Key.Less(y.Key):
			err = fn(x.Key, x.Data, nil)
			ia.next()
		case x == nil || y.Key.Less(x.Key):
			err = fn(y.Key, nil, y.Data)
			ib.next()
		default:
			if !bytes.Equal(x.Data, y.Data) {
				err = fn(x.Key, x.Data, y.Data)
			}
			ia.next()
			ib.next()
		}
		if err != nil {
			return err
		}
	}
}

// leafItems iterates the items of leaves in order.
type leafItems struct {
	leaves []*format.Node
	n, i   int
}

func (l *leafItems) peek() *format.Item {
	for l.n < len(l.leaves) && l.i >= len(l.leaves[l.n].Items) {
		l.n, l.i = l.n+1, 0
	}
	if l.n == len(l.leaves) {
		return nil
	}
	return &l.leaves[l.n].Items[l.i]
}

func (l *leafItems) next() { l.i++ }

// levelNodes is one level of a tree walk: the nodes to enter, in key
// order.
type levelNodes struct {
	level int
	ptrs  []format.KeyPtr
}

// unsharedLeaves returns, in key order, the leaves of the tree at a that
// the tree at b does not hold, and those of b that a does not hold.
func (fs *FS) unsharedLeaves(a, b format.RootPtr) ([]*format.Node, []*format.Node, error) {
	if a.Level > format.MaxLevel || b.Level > format.MaxLevel {
		return nil, nil, fmt.Errorf("fs tree root level %d/%d: %w", a.Level, b.Level, ErrCorrupt)
	}
	x := levelNodes{int(a.Level), []format.KeyPtr{{Logical: a.Logical, Generation: a.Generation}}}
	y := levelNodes{int(b.Level), []format.KeyPtr{{Logical: b.Logical, Generation: b.Generation}}}
	for {
		var err error
		switch {
		case x.level > y.level: // b holds no node of this level
			x, err = fs.enter(x)
		case y.level > x.level:
			y, err = fs.enter(y)
		default:
			x.ptrs, y.ptrs = dropShared(x.ptrs, y.ptrs)
			if x.level == 0 {
				na, err := fs.leaves(x.ptrs)
				if err != nil {
					return nil, nil, err
				}
				nb, err := fs.leaves(y.ptrs)
				return na, nb, err
			}
			if x, err = fs.enter(x); err == nil {
				y, err = fs.enter(y)
			}
		}
		if err != nil {
			return nil, nil, err
		}
	}
}

// dropShared removes the nodes in both lists from each.
func dropShared(x, y []format.KeyPtr) ([]format.KeyPtr, []format.KeyPtr) {
	in := make(map[uint64]bool, len(x))
	for _, p := range x {
		in[p.Logical] = true
	}
	shared := map[uint64]bool{}
	ky := y[:0:0]
	for _, p := range y {
		if in[p.Logical] {
			shared[p.Logical] = true
		} else {
			ky = append(ky, p)
		}
	}
	kx := x[:0:0]
	for _, p := range x {
		if !shared[p.Logical] {
			kx = append(kx, p)
		}
	}
	return kx, ky
}

// enter reads the interior nodes of l and returns the level below: their
// children, in key order. A node reached twice is a corrupt tree (it
// would be walked, and its items counted, twice).
func (fs *FS) enter(l levelNodes) (levelNodes, error) {
	below := levelNodes{level: l.level - 1}
	seen := map[uint64]bool{}
	for _, p := range l.ptrs {
		n, err := fs.readNode(format.FSTree, p.Logical, p.Generation, l.level, nil)
		if err != nil {
			return below, fmt.Errorf("fs tree node %d: %w", p.Logical, err)
		}
		for _, c := range n.Ptrs {
			// As the btree's readers (checkChild): a child newer than
			// its parent is refused; the writer's lazy free-space check
			// (lazyfree.go) relies on it.
			if c.Generation > n.Generation {
				return below, fmt.Errorf("fs tree node %d: child %d has generation %d, newer than the node's %d: %w", p.Logical, c.Logical, c.Generation, n.Generation, ErrCorrupt)
			}
			if seen[c.Logical] {
				return below, fmt.Errorf("fs tree node %d reached twice: %w", c.Logical, ErrCorrupt)
			}
			seen[c.Logical] = true
			below.ptrs = append(below.ptrs, c)
		}
	}
	return below, nil
}

// leaves reads the leaves ps.
func (fs *FS) leaves(ps []format.KeyPtr) ([]*format.Node, error) {
	out := make([]*format.Node, 0, len(ps))
	for _, p := range ps {
		n, err := fs.readNode(format.FSTree, p.Logical, p.Generation, 0, nil)
		if err != nil {
			return nil, fmt.Errorf("fs tree node %d: %w", p.Logical, err)
		}
		out = append(out, n)
	}
	return out, nil
}
