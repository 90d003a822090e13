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

// dataExtentRef is a data extent an EXTENT_DATA item points at.
type dataExtentRef struct{ logical, length uint64 }

// Space computes snapshot root's space (Spaces of one root).
func (fs *FS) Space(root format.RootPtr) (SnapshotSpace, error) {
	sp, err := fs.Spaces([]format.RootPtr{root})
	if err != nil {
		return SnapshotSpace{}, err
	}
	return sp[0], nil
}

// maxCachedRefs bounds the data refs Spaces keeps of the leaves it read
// (16 bytes each) and the refs it looked up: past it, a leaf another
// tree shares is read again, a ref looked up again.
const maxCachedRefs = 4 << 20

// spaceWalk is the state Spaces keeps across trees: what it read of the
// nodes they share, and the refs it looked up.
type spaceWalk struct {
	fs     *FS
	leaves map[format.RootPtr][]dataExtentRef // a leaf's data refs, by its pointer
	refs   map[format.Key]uint64
	cached int
}

// Spaces computes the space of each fs tree in roots, walking each tree
// once: a node is exclusive when it and every node above it have refs 1
// (FORMAT.md §6.12: refs counts the pointers to a node); a data extent is
// exclusive when all its refs are items of exclusive leaves. A leaf
// several trees share is read once (its data refs kept, up to
// maxCachedRefs), so k snapshots that share most of their nodes cost
// about one tree's reads, not k. Memory is one entry per data extent a
// tree reaches, and the kept refs.
func (fs *FS) Spaces(roots []format.RootPtr) ([]SnapshotSpace, error) {
	w := &spaceWalk{fs: fs, leaves: map[format.RootPtr][]dataExtentRef{}, refs: map[format.Key]uint64{}}
	out := make([]SnapshotSpace, len(roots))
	for i, r := range roots {
		sp, err := w.space(r)
		if err != nil {
			return nil, err
		}
		out[i] = sp
	}
	return out, nil
}

// space is one tree's.
func (w *spaceWalk) space(root format.RootPtr) (SnapshotSpace, error) {
	var sp SnapshotSpace
	ns := uint64(w.fs.sb.NodeSize)
	data := map[dataExtentRef]uint64{}
	seen := map[uint64]bool{}
	var walk func(l, gen uint64, level int, excl bool, depth int) error
	walk = func(l, gen uint64, level int, excl bool, depth int) error {
		if seen[l] || depth > format.MaxLevel {
			return nil
		}
		seen[l] = true
		if excl { // below a shared node nothing is the tree's own: no lookup
			refs, err := w.committedRefs(format.Key{ObjectID: l, Type: format.MetadataItemKey, Offset: uint64(level)})
			if err != nil {
				return err
			}
			excl = refs == 1
		}
		sp.Referenced += ns
		if excl {
			sp.Exclusive += ns
		}
		if level == 0 {
			refs, err := w.leafRefs(l, gen)
			if err != nil {
				return err
			}
			for _, k := range refs {
				c := data[k]
				if excl {
					c++
				}
				data[k] = c
			}
			return nil
		}
		n, err := w.fs.readNode(format.FSTree, l, gen, level, nil)
		if err != nil {
			return err
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
		refs, err := w.committedRefs(format.Key{ObjectID: k.logical, Type: format.ExtentItemKey, Offset: k.length})
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

// leafRefs is the data refs of the leaf at l (generation gen): one
// entry per EXTENT_DATA item, kept for the next tree that shares it.
func (w *spaceWalk) leafRefs(l, gen uint64) ([]dataExtentRef, error) {
	at := format.RootPtr{Logical: l, Generation: gen}
	if refs, ok := w.leaves[at]; ok {
		return refs, nil
	}
	n, err := w.fs.readNode(format.FSTree, l, gen, 0, nil)
	if err != nil {
		return nil, err
	}
	refs := []dataExtentRef{}
	err = eachDataRef(n, func(x *format.FileExtentItem) error {
		refs = append(refs, dataExtentRef{x.DiskLogical, x.DiskLen})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if w.cached+len(refs)+1 <= maxCachedRefs {
		w.leaves[at] = refs
		w.cached += len(refs) + 1
	}
	return refs, nil
}

// committedRefs is fs.committedRefs, each key looked up once.
func (w *spaceWalk) committedRefs(k format.Key) (uint64, error) {
	if r, ok := w.refs[k]; ok {
		return r, nil
	}
	r, err := w.fs.committedRefs(k)
	if err == nil && w.cached < maxCachedRefs {
		w.refs[k] = r
		w.cached++
	}
	return r, err
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
