package btree

import (
	"errors"
	"fmt"

	"github.com/ddfs/ddfs/format"
)

func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// Delete removes key; it fails with ErrNotFound (changing nothing) if absent.
func (t *Tree) Delete(key format.Key) error {
	if _, err := t.Get(key); err != nil {
		if isNotFound(err) {
			return fmt.Errorf("%v tree item %v: %w", t.id, key, ErrNotFound)
		}
		return err
	}
	root, err := t.cowRoot()
	if err != nil {
		return err
	}
	if err := t.deleteIn(root, key); err != nil {
		return err
	}
	// Collapse roots left with a single child.
	for !root.IsLeaf() && len(root.Ptrs) == 1 {
		c, err := t.readChild(root, 0)
		if err != nil {
			return err
		}
		if err := t.s.FreeNode(root); err != nil {
			return err
		}
		root = c
		t.setRoot(root)
	}
	return nil
}

func (t *Tree) deleteIn(n *format.Node, key format.Key) error {
	if n.IsLeaf() {
		i, found := itemIndex(n, key)
		if !found {
			return fmt.Errorf("%v tree item %v vanished: %w", t.id, key, format.ErrCorrupt)
		}
		t.observe(key, n.Items[i].Data, false)
		n.DeleteItem(i)
		return t.checkCount(n)
	}
	i := childIndex(n, key)
	c, err := t.cowChild(n, i)
	if err != nil {
		return err
	}
	if err := t.deleteIn(c, key); err != nil {
		return err
	}
	if c.NumItems() == 0 {
		n.Ptrs = append(n.Ptrs[:i], n.Ptrs[i+1:]...)
		return t.s.FreeNode(c)
	}
	n.Ptrs[i].Key = c.FirstKey()
	if t.underfull(c) && len(n.Ptrs) > 1 {
		return t.rebalance(n, i, c)
	}
	return nil
}

func (t *Tree) underfull(n *format.Node) bool {
	if n.IsLeaf() {
		return n.UsedBytes() < t.capacity()/4
	}
	return len(n.Ptrs) < t.maxPtrs()/4
}

// rebalance merges the underfull child i of n with a neighbour, or evens
// out the two when together they do not fit in one node.
func (t *Tree) rebalance(n *format.Node, i int, c *format.Node) error {
	l, r := i, i+1
	if r == len(n.Ptrs) {
		l, r = i-1, i
	}
	var left, right *format.Node
	var err error
	if l == i {
		left = c
		right, err = t.cowChild(n, r)
	} else {
		right = c
		left, err = t.cowChild(n, l)
	}
	if err != nil {
		return err
	}
	if left.IsLeaf() {
		all := append(append([]format.Item(nil), left.Items...), right.Items...)
		if used(all) <= t.capacity() {
			left.SetItems(all)
			right.SetItems(nil)
		} else {
			k := splitPoints(all, t.capacity())[1]
			left.SetItems(all[:k:k])
			right.SetItems(all[k:])
		}
	} else {
		all := append(append([]format.KeyPtr(nil), left.Ptrs...), right.Ptrs...)
		if len(all) <= t.maxPtrs() {
			left.Ptrs = all
			right.Ptrs = nil
		} else {
			k := len(all) / 2
			left.Ptrs, right.Ptrs = all[:k:k], all[k:]
		}
	}
	n.Ptrs[l].Key = left.FirstKey()
	if right.NumItems() == 0 {
		n.Ptrs = append(n.Ptrs[:r], n.Ptrs[r+1:]...)
		return t.s.FreeNode(right)
	}
	n.Ptrs[r].Key = right.FirstKey()
	return nil
}

func used(items []format.Item) int {
	u := 0
	for _, it := range items {
		u += itemBytes(it)
	}
	return u
}
