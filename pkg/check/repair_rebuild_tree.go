package check

// A tree some of whose nodes no copy reads (every copy bad) is rebuilt
// from the items of the nodes that do read, in one transaction: the
// unreadable nodes' references are dropped, what they held is lost. The
// next rounds make the rest whole as for any lost item: names of lost
// inodes go, inodes that lost their names go to /lost+found, data extents
// no file points at any more are freed with their checksums, the old
// nodes' metadata items are freed as leaked. Only the fs tree is rebuilt
// so: the chunk tree is the mapping itself, the extent tree is rebuilt
// item by item (META_MISSING, FILE_EXTENT_NO_ITEM), the checksums are
// never invented for data that was never verified, and the derived trees
// are dropped (repair_derived.go). A tree whose root does not read is
// left to the backup roots: rebuilt, it would be empty.

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// rebuildsFS reports whether rep calls for rebuilding the fs tree: a
// node of it unread, its root read.
func rebuildsFS(rep *Report) bool {
	fs := format.FSTree.String()
	if !slices.Contains(rep.Incomplete, fs) {
		return false
	}
	for _, p := range rep.Problems {
		if p.Code == TreeRootBad && p.Tree == fs {
			return false
		}
	}
	return true
}

// rebuildFS rebuilds the fs tree from the nodes that read and returns
// how many nodes could not be read (their subtrees are lost).
func rebuildFS(vol *volume.Volume, opt Options) (int, error) {
	st, err := store.OpenForRepair(vol)
	if err != nil {
		return 0, nil // the tree fixes need an openable filesystem
	}
	tx, err := st.Begin()
	if err != nil {
		return 0, err
	}
	r := &rebuild{st: st, tx: tx, to: tx.ResetTree(format.FSTree), seen: map[uint64]bool{}}
	if r.theirs, r.allTheirs, err = otherTreesNodes(st); err != nil {
		tx.Abort()
		return 0, err
	}
	sb := st.Super()
	root := sb.Roots.Root(format.FSTree)
	if err := r.walk(root.Logical, root.Generation, int(root.Level), 0, false); err != nil {
		tx.Abort()
		return 0, err
	}
	if err := r.to.EnsureRoot(); err != nil {
		tx.Abort()
		return 0, err
	}
	if err := opt.cancelled(); err != nil {
		tx.Abort()
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("rebuild the fs tree: %w", err)
	}
	return r.lost, nil
}

// rebuild carries one tree's rebuild.
type rebuild struct {
	st   *store.FS
	tx   *store.Txn
	to   *btree.Tree
	seen map[uint64]bool // a damaged tree may point at a node twice
	// theirs are the nodes the other fs trees reach (allTheirs: one of
	// their interior nodes does not read, so any node may be theirs).
	theirs    map[uint64]bool
	allTheirs bool
	lost      int
}

// walk copies the items of the committed node at l and its subtree into
// the new tree; a node no copy of which reads is counted and skipped.
// Below a node snapshots share (shared: reached from their roots, or refs
// above 1; refs alone may be wrong, since the report that asked for the
// rebuild withheld their check), the old nodes stay theirs: the
// data extents of a leaf copied from there gain the new leaf's reference
// (else the live tree's next free of one would free the snapshots'
// data). The old tree's own references to shared nodes stay counted, too
// high, until a later round counts them (never freed early).
func (r *rebuild) walk(l, gen uint64, level, depth int, shared bool) error {
	if r.seen[l] || depth > format.MaxLevel {
		return nil
	}
	r.seen[l] = true
	n, err := r.st.ReadNode(format.FSTree, l, gen, level)
	if err != nil {
		r.lost++
		return nil
	}
	shared = shared || r.allTheirs || r.theirs[l] || r.tx.NodeShared(n)
	for _, it := range n.Items {
		// The first of two items with one key wins, as readers find it.
		if err := r.to.Insert(it.Key, bytes.Clone(it.Data)); err != nil && !errors.Is(err, btree.ErrExists) {
			return fmt.Errorf("fs tree item %v: %w", it.Key, err)
		}
	}
	if shared && n.IsLeaf() {
		if err := r.tx.CopiedShared(n); err != nil {
			return fmt.Errorf("fs tree leaf %d: %w", l, err)
		}
	}
	for _, p := range n.Ptrs {
		if err := r.walk(p.Logical, p.Generation, level-1, depth+1, shared); err != nil {
			return err
		}
	}
	return nil
}

// otherTreesNodes lists the nodes the snapshots, the trees being dropped
// and a parked receive reach (their interior nodes read, leaves named);
// all when one of those interior nodes does not read.
func otherTreesNodes(st *store.FS) (map[uint64]bool, bool, error) {
	roots, err := st.SnapshotRoots()
	if err != nil {
		return nil, false, err
	}
	nodes := map[uint64]bool{}
	type at struct {
		l, gen uint64
		level  int
	}
	var stack []at
	for _, r := range roots {
		stack = append(stack, at{r.Logical, r.Generation, int(r.Level)})
	}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if nodes[v.l] {
			continue
		}
		nodes[v.l] = true
		if v.level <= 0 {
			continue
		}
		n, err := st.ReadNode(format.FSTree, v.l, v.gen, v.level)
		if err != nil {
			return nil, true, nil // "in use" wins: every node may be theirs
		}
		for _, p := range n.Ptrs {
			stack = append(stack, at{p.Logical, p.Generation, v.level - 1})
		}
	}
	return nodes, false, nil
}
