package btree

import (
	"fmt"

	"github.com/ddfs/ddfs/format"
)

// Verify walks the whole tree and checks the B+tree invariants: key order
// across nodes, parent keys equal to child first keys, levels, fill, that
// only the root may be empty, and that a changed leaf's kept byte count
// matches its items (errCountDrift). Tests and fsck use it.
func (t *Tree) Verify() error {
	n, err := t.readRoot()
	if err != nil || n == nil {
		return err
	}
	var last *format.Key
	return t.verifyNode(n, true, &last)
}

func (t *Tree) verifyNode(n *format.Node, isRoot bool, last **format.Key) error {
	if n.NumItems() == 0 && !isRoot {
		return fmt.Errorf("%v tree node %d: empty non-root node: %w", t.id, n.Logical, format.ErrCorrupt)
	}
	if n.IsLeaf() {
		if n.SumUsedBytes() > t.capacity() {
			return fmt.Errorf("%v tree node %d: overfull: %w", t.id, n.Logical, format.ErrCorrupt)
		}
		if err := t.checkCountAlways(n); err != nil {
			return err
		}
		for i := range n.Items {
			k := n.Items[i].Key
			if *last != nil && !(*last).Less(k) {
				return fmt.Errorf("%v tree node %d: key %v after %v: %w", t.id, n.Logical, k, **last, format.ErrCorrupt)
			}
			*last = &k
		}
		return nil
	}
	if len(n.Ptrs) > t.maxPtrs() {
		return fmt.Errorf("%v tree node %d: %d pointers: %w", t.id, n.Logical, len(n.Ptrs), format.ErrCorrupt)
	}
	for i, p := range n.Ptrs {
		c, err := t.readChild(n, i)
		if err != nil {
			return err
		}
		if c.FirstKey() != p.Key {
			return fmt.Errorf("%v tree node %d pointer %d: key %v but child starts at %v: %w", t.id, n.Logical, i, p.Key, c.FirstKey(), format.ErrCorrupt)
		}
		if err := t.verifyNode(c, false, last); err != nil {
			return err
		}
	}
	return nil
}

// WalkNodes calls fn for every node of the tree, parents first.
func (t *Tree) WalkNodes(fn func(*format.Node) error) error {
	n, err := t.readRoot()
	if err != nil || n == nil {
		return err
	}
	var walk func(n *format.Node) error
	walk = func(n *format.Node) error {
		if err := fn(n); err != nil {
			return err
		}
		for i := range n.Ptrs {
			c, err := t.readChild(n, i)
			if err != nil {
				return err
			}
			if err := walk(c); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(n)
}
