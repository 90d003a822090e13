package store

import (
	"fmt"

	"github.com/ddfs/ddfs/format"
)

// SnapshotSpace is the space one fs tree uses, in disk bytes: its nodes
// and the data extents its leaves point at.
type SnapshotSpace struct {
	// Referenced is everything the tree reaches.
	Referenced uint64 `json:"referenced_bytes"`
	// Exclusive is what only this tree reaches: what deleting it frees.
	Exclusive uint64 `json:"exclusive_bytes"`
	// ExclusiveData is the data extents' part of Exclusive.
	ExclusiveData uint64 `json:"-"`
}

// dataExtentRef counts a data extent's EXTENT_DATA items in the leaves
// only this tree reaches.
type dataExtentRef struct{ logical, length uint64 }

// Space computes snapshot root's space by walking its tree once: a node
// is exclusive when it and every node above it have refs 1 (FORMAT.md
// §6.12: refs counts the pointers to a node); a data extent is exclusive
// when all its refs are items of exclusive leaves. Memory is one entry
// per data extent the tree reaches.
func (fs *FS) Space(root format.RootPtr) (SnapshotSpace, error) {
	var sp SnapshotSpace
	ns := uint64(fs.sb.NodeSize)
	data := map[dataExtentRef]uint64{}
	seen := map[uint64]bool{}
	var walk func(l, gen uint64, level int, excl bool, depth int) error
	walk = func(l, gen uint64, level int, excl bool, depth int) error {
		if seen[l] || depth > format.MaxLevel {
			return nil
		}
		seen[l] = true
		if excl { // below a shared node nothing is the tree's own: no lookup
			refs, err := fs.committedRefs(format.Key{ObjectID: l, Type: format.MetadataItemKey, Offset: uint64(level)})
			if err != nil {
				return err
			}
			excl = refs == 1
		}
		sp.Referenced += ns
		if excl {
			sp.Exclusive += ns
		}
		n, err := fs.readNode(format.FSTree, l, gen, level, nil)
		if err != nil {
			return err
		}
		if level == 0 {
			return eachDataRef(n, func(x *format.FileExtentItem) error {
				k := dataExtentRef{x.DiskLogical, x.DiskLen}
				c := data[k]
				if excl {
					c++
				}
				data[k] = c
				return nil
			})
		}
		for _, p := range n.Ptrs {
			if err := walk(p.Logical, p.Generation, level-1, excl, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root.Logical, root.Generation, int(root.Level), true, 0); err != nil {
		return sp, err
	}
	for k, mine := range data {
		sp.Referenced += k.length
		if mine == 0 {
			continue
		}
		refs, err := fs.committedRefs(format.Key{ObjectID: k.logical, Type: format.ExtentItemKey, Offset: k.length})
		if err != nil {
			return sp, err
		}
		if mine >= refs {
			sp.Exclusive += k.length
			sp.ExclusiveData += k.length
		}
	}
	return sp, nil
}

// committedRefs is the refs of the committed METADATA_ITEM or
// EXTENT_ITEM at k.
func (fs *FS) committedRefs(k format.Key) (uint64, error) {
	b, err := fs.Tree(format.ExtentTree).Get(k)
	if err != nil {
		return 0, fmt.Errorf("%v: %w", k, err)
	}
	if k.Type == format.MetadataItemKey {
		m, err := format.UnmarshalMetadataItem(b)
		if err != nil {
			return 0, err
		}
		return m.Refs, nil
	}
	e, err := format.UnmarshalExtentItem(b)
	if err != nil {
		return 0, err
	}
	return e.Refs, nil
}
