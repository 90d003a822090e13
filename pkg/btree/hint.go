package btree

import "github.com/ddfs/ddfs/format"

// Hints remembers the last leaves that lookups of one committed tree
// descended to, each with the range of keys a descent from the root sends
// to it, so a lookup of a nearby key (the next inode of a walk, another
// name of the same directory) searches one leaf instead of descending from
// the root through the node cache.
//
// A hint answers exactly as the descent would: the range is what every
// node on the path chose the leaf for (childIndex), so for any key inside
// it the descent reads the same nodes and ends in the same leaf, as long
// as the tree's nodes do not change. That holds while the root pointer is
// the same for a committed tree (copy-on-write gives every change a new
// root), and the hints forget everything when it is not. A key outside
// every range descends as before, so an unreadable node on its way is
// still an error, never "not found". Attach Hints only to trees of a
// read-only Store (Tree.UseHints); like the node cache behind it, it is
// not safe for concurrent use.
type Hints struct {
	root  format.RootPtr
	slots [hintSlots]hintSlot
	last  int // the slot that answered last: tried first
	next  int // the slot the next miss fills (round robin)
}

// hintSlots: a walk alternates between a directory's name leaves (a few,
// in hash order) and its children's inode leaves (in order); more slots
// cost more range checks on every miss.
const hintSlots = 4

type hintSlot struct {
	leaf *format.Node // nil: empty
	lo   format.Key   // the range's first key (inclusive)
	hi   format.Key   // its end (exclusive), unless open
	open bool         // no end: the rightmost leaf
}

func (s *hintSlot) holds(key format.Key) bool {
	return s.leaf != nil && !key.Less(s.lo) && (s.open || key.Less(s.hi))
}

// UseHints makes t's lookups (Get, SeekLE, Seek and Scan) use and fill
// h. Only for a tree whose nodes never change in place (a committed
// tree): a handle that then changes its tree stops using them.
func (t *Tree) UseHints(h *Hints) { t.hints = h }

// find returns the slot whose range holds key under root, or nil.
func (h *Hints) find(root format.RootPtr, key format.Key) *hintSlot {
	if h == nil || h.root != root {
		return nil
	}
	if h.slots[h.last].holds(key) {
		return &h.slots[h.last]
	}
	for i := range h.slots {
		if h.slots[i].holds(key) {
			h.last = i
			return &h.slots[i]
		}
	}
	return nil
}

// add remembers leaf, which a descent from root reached for the keys of
// s's range.
func (h *Hints) add(root format.RootPtr, s hintSlot) {
	if h == nil {
		return
	}
	if h.root != root {
		*h = Hints{root: root}
	}
	h.slots[h.next], h.last = s, h.next
	h.next = (h.next + 1) % hintSlots
}

// leafFor returns the leaf a descent from the root sends key to (nil for
// an empty tree), from the hints when one holds key.
func (t *Tree) leafFor(key format.Key) (*format.Node, error) {
	if s := t.hints.find(t.root, key); s != nil {
		return s.leaf, nil
	}
	return t.descend(key, nil)
}

// descend reads the nodes from the root to the leaf for key (nil for an
// empty tree), appends the internal ones to path unless it is nil, and
// hints the leaf with the range of keys the path sends to it.
func (t *Tree) descend(key format.Key, path *[]frame) (*format.Node, error) {
	n, err := t.readRoot()
	if err != nil || n == nil {
		return nil, err
	}
	s := hintSlot{open: true}
	for !n.IsLeaf() {
		i := childIndex(n, key)
		s.narrow(n, i)
		if path != nil {
			*path = append(*path, frame{n, i})
		}
		if n, err = t.readChild(n, i); err != nil {
			return nil, err
		}
	}
	s.leaf = n
	t.hints.add(t.root, s)
	return n, nil
}

// narrow intersects s's range with the keys childIndex sends to child i
// of n: from its pointer key on (all below it for child 0), up to the
// next pointer's key (no end for the last child). checkChild already
// keeps a child's keys inside its parent's range; the max and min keep
// the slot exact without relying on it.
func (s *hintSlot) narrow(n *format.Node, i int) {
	if i > 0 && s.lo.Less(n.Ptrs[i].Key) {
		s.lo = n.Ptrs[i].Key
	}
	if i+1 < len(n.Ptrs) && (s.open || n.Ptrs[i+1].Key.Less(s.hi)) {
		s.hi, s.open = n.Ptrs[i+1].Key, false
	}
}
