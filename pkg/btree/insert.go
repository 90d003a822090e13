package btree

import (
	"fmt"

	"github.com/ddfs/ddfs/format"
)

// Insert adds key; it fails with ErrExists if the key is present.
func (t *Tree) Insert(key format.Key, data []byte) error { return t.put(key, data, false) }

// Put adds key or replaces its value.
func (t *Tree) Put(key format.Key, data []byte) error { return t.put(key, data, true) }

func (t *Tree) put(key format.Key, data []byte, replace bool) error {
	if len(data) > format.MaxItemData(t.s.NodeSize()) {
		return fmt.Errorf("%v tree item %v of %d bytes: %w", t.id, key, len(data), ErrTooLarge)
	}
	if !replace {
		// Refuse before copying any node: a failed insert changes nothing.
		if _, err := t.Get(key); err == nil {
			return fmt.Errorf("%v tree item %v: %w", t.id, key, ErrExists)
		} else if !isNotFound(err) {
			return err
		}
	}
	root, err := t.cowRoot()
	if err != nil {
		return err
	}
	sibs, err := t.putIn(root, key, data)
	if err != nil {
		return err
	}
	if root.IsLeaf() && root.UsedBytes() > t.capacity() {
		if sibs, err = t.splitLeaf(root); err != nil {
			return err
		}
	}
	return t.growRoot(root, sibs)
}

// growRoot puts a new root above root and the siblings a split produced.
func (t *Tree) growRoot(root *format.Node, sibs []*format.Node) error {
	if len(sibs) == 0 {
		return nil
	}
	nr, err := t.s.NewNode(t.id, root.Level+1)
	if err != nil {
		return err
	}
	nr.Ptrs = append(nr.Ptrs, ptrTo(root))
	for _, s := range sibs {
		nr.Ptrs = append(nr.Ptrs, ptrTo(s))
	}
	t.setRoot(nr)
	return nil
}

// putIn stores key in the subtree of the writable node n and returns the
// new right siblings of n if n had to split. A leaf may come back
// overfull: its parent decides between shifting items to a neighbour and
// splitting (the caller of putIn on a root leaf splits it).
func (t *Tree) putIn(n *format.Node, key format.Key, data []byte) ([]*format.Node, error) {
	if n.IsLeaf() {
		i, found := itemIndex(n, key)
		if found {
			t.observe(key, n.Items[i].Data, false)
			n.SetItemData(i, data)
		} else {
			n.InsertItem(i, format.Item{Key: key, Data: data})
		}
		t.observe(key, data, true)
		return nil, t.checkCount(n)
	}
	i := childIndex(n, key)
	c, err := t.cowChild(n, i)
	if err != nil {
		return nil, err
	}
	sibs, err := t.putIn(c, key, data)
	if err != nil {
		return nil, err
	}
	if c.IsLeaf() && c.UsedBytes() > t.capacity() {
		if sibs, err = t.relieveLeaf(n, i, c); err != nil {
			return nil, err
		}
	}
	n.Ptrs[i].Key = c.FirstKey()
	if len(sibs) > 0 {
		add := make([]format.KeyPtr, len(sibs))
		for j, s := range sibs {
			add[j] = ptrTo(s)
		}
		n.Ptrs = append(n.Ptrs[:i+1], append(add, n.Ptrs[i+1:]...)...)
	}
	if len(n.Ptrs) <= t.maxPtrs() {
		return nil, nil
	}
	right, err := t.s.NewNode(t.id, n.Level)
	if err != nil {
		return nil, err
	}
	half := len(n.Ptrs) / 2
	right.Ptrs = append([]format.KeyPtr(nil), n.Ptrs[half:]...)
	n.Ptrs = n.Ptrs[:half:half]
	return []*format.Node{right}, nil
}

// relieveLeaf makes the overfull leaf c (child i of n) fit: by moving
// items into the left or right neighbour when that neighbour has room (as
// btrfs's push_leaf_left/right do), else by splitting it. Shifting keeps
// leaves fuller than halving does: appends fill leaves completely, and
// random inserts (the dedupe tree's hash keys) leave them about 80% full
// instead of 69%. A shift evens the two leaves out, so the next inserts
// do not overflow c again at once.
func (t *Tree) relieveLeaf(n *format.Node, i int, c *format.Node) ([]*format.Node, error) {
	if i > 0 {
		if ok, err := t.shift(n, i-1, i, c, true); ok || err != nil {
			return nil, err
		}
	}
	if i+1 < len(n.Ptrs) {
		if ok, err := t.shift(n, i, i+1, c, false); ok || err != nil {
			return nil, err
		}
	}
	return t.splitLeaf(c)
}

// shift moves items from the overfull leaf c into its neighbour (left of
// it when toLeft, else right) if both then fit, leaving them about evenly
// full. li and ri are the two leaves' indexes in n.
func (t *Tree) shift(n *format.Node, li, ri int, c *format.Node, toLeft bool) (bool, error) {
	ni := ri
	if toLeft {
		ni = li
	}
	nb, err := t.readChild(n, ni)
	if err != nil {
		return false, err
	}
	capacity := t.capacity()
	if !nb.IsLeaf() {
		return false, nil
	}
	// nb may be clean (summed, not counted): take its size once.
	cu, nu := c.UsedBytes(), nb.UsedBytes()
	if nu+cu > 2*capacity {
		return false, nil
	}
	// Move items from c's near end until c fits and the two are even.
	excess, goal := cu-capacity, (cu-nu)/2
	k, moved := 0, 0
	for k < len(c.Items)-1 {
		it := c.Items[k]
		if !toLeft {
			it = c.Items[len(c.Items)-1-k]
		}
		b := itemBytes(it)
		if moved >= excess && moved+b > goal {
			break
		}
		if nu+moved+b > capacity {
			break
		}
		moved += b
		k++
	}
	if moved < excess {
		return false, nil
	}
	if nb, err = t.cowChild(n, ni); err != nil {
		return false, err
	}
	if toLeft {
		nb.SetItems(append(nb.Items, c.Items[:k]...))
		c.SetItems(c.Items[k:])
	} else {
		cut := len(c.Items) - k
		nb.SetItems(append(append(make([]format.Item, 0, len(nb.Items)+k), c.Items[cut:]...), nb.Items...))
		c.SetItems(c.Items[:cut:cut])
	}
	if toLeft {
		n.Ptrs[li].Key = nb.FirstKey()
	} else {
		n.Ptrs[ri].Key = nb.FirstKey()
	}
	return true, nil
}

func itemBytes(it format.Item) int { return format.LeafItemSize + len(it.Data) }

// splitLeaf splits an overfull leaf into two nodes of similar size, or into
// more when one large item leaves no balanced split.
func (t *Tree) splitLeaf(n *format.Node) ([]*format.Node, error) {
	groups := splitPoints(n.Items, t.capacity())
	var sibs []*format.Node
	for g := len(groups) - 1; g >= 1; g-- {
		s, err := t.s.NewNode(t.id, 0)
		if err != nil {
			return nil, err
		}
		s.SetItems(append([]format.Item(nil), n.Items[groups[g]:]...))
		n.SetItems(n.Items[:groups[g]:groups[g]])
		sibs = append([]*format.Node{s}, sibs...)
	}
	return sibs, nil
}

// splitPoints returns the start indexes of the groups the items are cut
// into (the first is 0): the most even two-way cut where both halves fit,
// else a greedy packing.
func splitPoints(items []format.Item, capacity int) []int {
	total := 0
	for _, it := range items {
		total += itemBytes(it)
	}
	best, bestDiff, left := -1, total+1, 0
	for k := 1; k < len(items); k++ {
		left += itemBytes(items[k-1])
		right := total - left
		if left <= capacity && right <= capacity {
			if d := max(left-right, right-left); d < bestDiff {
				best, bestDiff = k, d
			}
		}
	}
	if best > 0 {
		return []int{0, best}
	}
	starts, used := []int{0}, 0
	for k, it := range items {
		if used+itemBytes(it) > capacity && used > 0 {
			starts = append(starts, k)
			used = 0
		}
		used += itemBytes(it)
	}
	return starts
}
