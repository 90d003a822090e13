package check

import (
	"fmt"

	"github.com/ddfs/ddfs/format"
)

// bounds are the keys a subtree may hold: [lo, hi).
type bounds struct {
	lo, hi format.Key
}

func (c *checker) walk(id format.TreeID) {
	root := c.sb.Roots.Root(id)
	if root.Logical == 0 {
		if id == format.ChunkTree || id == format.ExtentTree || id == format.FSTree {
			c.add(Problem{Code: TreeNoRoot, Tree: id.String(), Message: "tree has no root"})
		}
		return
	}
	c.visit(id, root.Logical, root.Generation, int(root.Level), nil, bounds{format.Key{}, format.MaxKey}, true, nil)
}

// visit checks every copy of one node, then its items or children. Each
// step is a helper of its own; the order of the checks, and so of the
// problems reported, is the walk's.
func (c *checker) visit(id format.TreeID, logical, gen uint64, level int, firstKey *format.Key, b bounds, isRoot bool, pre *nodeRead) {
	if !c.claimNode(id, logical, isRoot) {
		return
	}
	r := pre
	if r == nil || (r.node == nil && len(r.errs) == 0) {
		// Not read ahead, or read before the chunk tree walk added its
		// chunk: read now.
		r = c.readCopies(id, logical, gen, level, nil)
	}
	node := c.goodCopy(id, logical, gen, level, firstKey, r)
	if node == nil {
		c.lostNode(id, logical, isRoot) // every copy is bad
		return
	}
	c.checkNodeHeader(id, logical, node, firstKey, isRoot)
	if node.IsLeaf() {
		c.visitItems(id, logical, node, b)
	} else {
		c.visitChildren(id, logical, node, level, b)
	}
	c.reads.put(r) // nothing keeps item data: item() decodes or copies
}

// lostNode notes a node of tree id that cannot be read: its subtree
// cannot be checked, and what the cross-checks conclude about this tree
// is unreliable (its items are unread, not absent). In a snapshot's walk
// that tree is the snapshot's (fs@NAME).
func (c *checker) lostNode(id format.TreeID, logical uint64, isRoot bool) {
	tree := id.String()
	if c.snaps.inSnapshot && id == format.FSTree {
		tree = c.snaps.walking // a node the live tree does not reach
	}
	c.rep.markIncomplete(tree)
	if isRoot {
		c.add(Problem{Code: TreeRootBad, Tree: tree, Logical: logical, Message: "no copy of the root node reads"})
	}
}

// nodeProblem reports a problem of the node at logical in tree id.
func (c *checker) nodeProblem(id format.TreeID, logical uint64, code Code, msg string, args ...any) {
	c.add(Problem{Code: code, Tree: id.String(), Logical: logical, Message: fmt.Sprintf(msg, args...)})
}

// claimNode marks the node at logical seen and checks where it lives: it
// reports false when the node is not to be read (the check was cancelled,
// the node was visited before, or its address holds no node: then it is
// a lost node, as one no copy of which reads).
func (c *checker) claimNode(id format.TreeID, logical uint64, isRoot bool) bool {
	if c.opt.cancelled() != nil {
		return false // CheckVolume reports ErrCancelled
	}
	if other, dup := c.seen[logical]; dup {
		if c.sharedNode(id, other, logical) {
			return false
		}
		c.nodeProblem(id, logical, NodeTwice, "node referenced twice (also by the %v tree)", other)
		return false
	}
	c.seen[logical] = id
	c.opt.progress("nodes", uint64(len(c.seen)), c.nodesTotal(), false)
	ch, ok := c.vol.Chunks.Lookup(logical)
	if !ok {
		c.nodeProblem(id, logical, NodeNoChunk, "node address is in no chunk")
		c.lostNode(id, logical, isRoot)
		return false
	}
	wantType := format.ChunkMetadata
	if id == format.ChunkTree {
		wantType = format.ChunkSystem
	}
	if ch.Type != wantType {
		c.nodeProblem(id, logical, NodeChunkType, "node lives in a %v chunk, want %v", ch.Type, wantType)
	}
	if logical%uint64(c.sb.NodeSize) != 0 || logical+uint64(c.sb.NodeSize) > ch.End() {
		c.nodeProblem(id, logical, NodeAlign, "node is misaligned or crosses its chunk's end")
		c.lostNode(id, logical, isRoot)
		return false
	}
	return true
}

// goodCopy counts the node's copies, reports each bad one, and returns the
// copy to check (copiesDiffer settles copies that differ), or nil when no
// copy is good.
func (c *checker) goodCopy(id format.TreeID, logical, gen uint64, level int, firstKey *format.Key, r *nodeRead) *format.Node {
	for m, err := range r.errs {
		if err == errMissingCopy {
			continue // the missing member is reported once, not per copy
		}
		c.rep.NodeCopies++
		if err == nil {
			continue
		}
		p := Problem{Code: NodeCopyBad, Tree: id.String(), Logical: logical, Copy: copyNum(m), fix: &fixData{gen: gen, level: level, owner: id}, Message: errString(err)}
		if m > 0 && r.parity { // a rebuild from P or Q: the row's parity (or another strip) is wrong
			p.Code, p.fix = ParityBad, nil
		}
		c.locate(&p, r.targets, m)
		c.add(p)
	}
	if r.node == nil {
		return nil
	}
	return c.copiesDiffer(id, gen, level, firstKey, r)
}

// checkNodeHeader checks what a node says of itself against its place in
// the tree: not empty below the root, the first key its parent names, and
// contents that fit.
func (c *checker) checkNodeHeader(id format.TreeID, logical uint64, node *format.Node, firstKey *format.Key, isRoot bool) {
	if node.NumItems() == 0 && !isRoot {
		c.nodeProblem(id, logical, NodeEmpty, "empty node below the root")
	}
	if firstKey != nil && node.NumItems() > 0 && node.FirstKey() != *firstKey {
		c.nodeProblem(id, logical, NodeFirstKey, "first key %v, parent pointer says %v", node.FirstKey(), *firstKey)
	}
	if node.SumUsedBytes() > int(c.sb.NodeSize)-format.NodeHeaderSize {
		c.nodeProblem(id, logical, NodeOverflow, "contents overflow the node")
	}
}

// visitItems checks a leaf's keys against its parent's range and hands
// each item to the checks of its tree.
func (c *checker) visitItems(id format.TreeID, logical uint64, node *format.Node, b bounds) {
	for _, it := range node.Items {
		if it.Key.Less(b.lo) || !it.Key.Less(b.hi) {
			c.nodeProblem(id, logical, NodeKeyRange, "key %v outside the parent's range [%v, %v)", it.Key, b.lo, b.hi)
		}
		c.rep.Items++
		c.item(id, logical, it)
	}
}

// visitChildren checks an interior node's pointers and visits each child,
// read ahead by the prefetcher.
func (c *checker) visitChildren(id format.TreeID, logical uint64, node *format.Node, level int, b bounds) {
	ahead := c.prefetch(id, node, level-1)
	for i, p := range node.Ptrs {
		r := ahead.next()
		cb := bounds{p.Key, b.hi}
		if i+1 < len(node.Ptrs) {
			cb.hi = node.Ptrs[i+1].Key
		}
		if p.Key.Less(b.lo) || !p.Key.Less(b.hi) {
			c.nodeProblem(id, logical, NodeKeyRange, "pointer key %v outside the parent's range", p.Key)
		}
		if p.Generation > node.Generation {
			c.nodeProblem(id, logical, NodePtrGen, "child %d has generation %d, newer than the node's %d", p.Logical, p.Generation, node.Generation)
		}
		k := p.Key
		c.visit(id, p.Logical, p.Generation, level-1, &k, cb, false, r)
	}
	ahead.stop()
}
