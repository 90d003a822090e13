package store

import (
	"bytes"
	"fmt"

	"github.com/ddfs/ddfs/format"
)

// ChangedObjects returns the object ids (inode numbers) of the items that
// differ between the fs trees at roots a and b, two trees of one image
// that share the nodes neither changed (FORMAT.md §6.12). It reads the
// interior nodes of both and only the leaves the two do not share: the
// cost follows what changed, not the trees' size. Memory: a set of every
// node of both trees and the items of the unshared leaves.
func (fs *FS) ChangedObjects(a, b format.RootPtr) (map[uint64]bool, error) {
	na, err := fs.treeNodes(a)
	if err != nil {
		return nil, err
	}
	nb, err := fs.treeNodes(b)
	if err != nil {
		return nil, err
	}
	ia, err := fs.unsharedItems(a, nb)
	if err != nil {
		return nil, err
	}
	ib, err := fs.unsharedItems(b, na)
	if err != nil {
		return nil, err
	}
	// The unshared leaves of each tree cover the same keys (the shared
	// leaves are in both): a key whose item differs, or is on one side
	// only, changed.
	changed := map[uint64]bool{}
	i, j := 0, 0
	for i < len(ia) || j < len(ib) {
		switch {
		case j == len(ib) || i < len(ia) && ia[i].Key.Less(ib[j].Key):
			changed[ia[i].Key.ObjectID] = true
			i++
		case i == len(ia) || ib[j].Key.Less(ia[i].Key):
			changed[ib[j].Key.ObjectID] = true
			j++
		default:
			if !bytes.Equal(ia[i].Data, ib[j].Data) {
				changed[ia[i].Key.ObjectID] = true
			}
			i, j = i+1, j+1
		}
	}
	return changed, nil
}

// treeNodes returns the address of every node of the fs tree at root,
// reading only its interior nodes (a leaf's address is in its parent).
func (fs *FS) treeNodes(root format.RootPtr) (map[uint64]bool, error) {
	nodes := map[uint64]bool{root.Logical: true}
	var walk func(l, gen uint64, level int) error
	walk = func(l, gen uint64, level int) error {
		if level == 0 {
			return nil
		}
		n, err := fs.readNode(format.FSTree, l, gen, level, nil)
		if err != nil {
			return fmt.Errorf("fs tree node %d: %w", l, err)
		}
		for _, p := range n.Ptrs {
			if nodes[p.Logical] {
				return fmt.Errorf("fs tree node %d reached twice: %w", p.Logical, ErrCorrupt)
			}
			nodes[p.Logical] = true
			if err := walk(p.Logical, p.Generation, level-1); err != nil {
				return err
			}
		}
		return nil
	}
	if root.Level > format.MaxLevel {
		return nil, fmt.Errorf("fs tree root level %d: %w", root.Level, ErrCorrupt)
	}
	return nodes, walk(root.Logical, root.Generation, int(root.Level))
}

// unsharedItems returns, in key order, the items of the leaves of the
// tree at root that are not among other's nodes; a subtree whose root is
// shared is skipped whole.
func (fs *FS) unsharedItems(root format.RootPtr, other map[uint64]bool) ([]format.Item, error) {
	var out []format.Item
	var walk func(l, gen uint64, level int) error
	walk = func(l, gen uint64, level int) error {
		if other[l] {
			return nil
		}
		n, err := fs.readNode(format.FSTree, l, gen, level, nil)
		if err != nil {
			return fmt.Errorf("fs tree node %d: %w", l, err)
		}
		if level == 0 {
			for _, it := range n.Items {
				out = append(out, format.Item{Key: it.Key, Data: bytes.Clone(it.Data)})
			}
			return nil
		}
		for _, p := range n.Ptrs {
			if err := walk(p.Logical, p.Generation, level-1); err != nil {
				return err
			}
		}
		return nil
	}
	return out, walk(root.Logical, root.Generation, int(root.Level))
}
