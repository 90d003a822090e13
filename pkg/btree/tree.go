// Package btree is ddfs's copy-on-write B+tree. A Tree never writes to
// disk: it asks its Store for nodes, for fresh nodes when it must change a
// node written by an earlier transaction, and it hands back nodes it no
// longer references. The store decides where nodes live and when dirty
// nodes are written (at commit).
package btree

import (
	"errors"
	"fmt"
	"sort"

	"github.com/ddfs/ddfs/format"
)

// Store provides nodes to trees; the transaction implements it.
type Store interface {
	// ReadNode reads the node a pointer names and checks it is what the
	// pointer expects. The returned node must not be modified unless
	// IsDirty reports true.
	ReadNode(owner format.TreeID, logical, generation uint64, level int) (*format.Node, error)
	// NewNode returns an empty node at a fresh address, owned by the
	// running transaction (dirty).
	NewNode(owner format.TreeID, level uint8) (*format.Node, error)
	// IsDirty reports whether n belongs to the running transaction and may
	// be changed in place.
	IsDirty(n *format.Node) bool
	// FreeNode releases a node the tree no longer references.
	FreeNode(n *format.Node) error
	// NodeSize is the size of every node.
	NodeSize() uint32
}

// ChildReader is an optional part of a Store: ReadChild is ReadNode
// told the parent's whole pointer, key included, so that a store holding
// several copies of a node can choose the one whose first key is the
// pointer's (and refuse when that cannot decide) instead of leaving
// checkChild to reject the copy it happened to read.
type ChildReader interface {
	ReadChild(owner format.TreeID, p format.KeyPtr, level int) (*format.Node, error)
}

// ItemObserver is an optional part of a Store: it sees every item a tree
// adds or removes (a replacement is a removal then an addition), which is
// how a transaction keeps the superblock counters exact (FORMAT.md §3.9).
type ItemObserver interface {
	ItemChanged(tree format.TreeID, key format.Key, data []byte, added bool)
}

var (
	// ErrNotFound: no item has the key.
	ErrNotFound = errors.New("key not found")
	// ErrExists: Insert found the key already present.
	ErrExists = errors.New("key exists")
	// ErrTooLarge: an item value larger than a leaf can hold.
	ErrTooLarge = errors.New("item too large for a node")
)

// Tree is one B+tree. It is not safe for concurrent use.
type Tree struct {
	s     Store
	obs   ItemObserver // nil when s does not observe items
	id    format.TreeID
	root  format.RootPtr
	hints *Hints // nil: none (UseHints)
	spare *Iter  // Scan's, when no Scan is running
}

// New returns a handle on tree id rooted at root (Logical 0 = empty).
func New(s Store, id format.TreeID, root format.RootPtr) *Tree {
	obs, _ := s.(ItemObserver)
	return &Tree{s: s, obs: obs, id: id, root: root}
}

// ID is the tree's id.
func (t *Tree) ID() format.TreeID { return t.id }

// Root is the current root pointer (changes as the tree is modified).
func (t *Tree) Root() format.RootPtr { return t.root }

func (t *Tree) capacity() int { return int(t.s.NodeSize()) - format.NodeHeaderSize }
func (t *Tree) maxPtrs() int  { return t.capacity() / format.KeyPtrSize }

func (t *Tree) readRoot() (*format.Node, error) {
	if t.root.Logical == 0 {
		return nil, nil
	}
	if t.root.Logical%uint64(t.s.NodeSize()) != 0 {
		return nil, fmt.Errorf("%v tree root at %d is not node-aligned: %w", t.id, t.root.Logical, format.ErrCorrupt)
	}
	n, err := t.s.ReadNode(t.id, t.root.Logical, t.root.Generation, int(t.root.Level))
	if err != nil {
		return nil, fmt.Errorf("%v tree root: %w", t.id, err)
	}
	return n, nil
}

func (t *Tree) readChild(n *format.Node, i int) (*format.Node, error) {
	p := n.Ptrs[i]
	if p.Logical%uint64(t.s.NodeSize()) != 0 {
		return nil, fmt.Errorf("%v tree node %d child %d at %d is not node-aligned: %w", t.id, n.Logical, i, p.Logical, format.ErrCorrupt)
	}
	var c *format.Node
	var err error
	if cr, ok := t.s.(ChildReader); ok {
		c, err = cr.ReadChild(t.id, p, int(n.Level)-1)
	} else {
		c, err = t.s.ReadNode(t.id, p.Logical, p.Generation, int(n.Level)-1)
	}
	if err != nil {
		return nil, fmt.Errorf("%v tree node %d child %d: %w", t.id, n.Logical, i, err)
	}
	if err := checkChild(n, i, c); err != nil {
		return nil, fmt.Errorf("%v tree node %d child %d at %d: %w", t.id, n.Logical, i, p.Logical, err)
	}
	return c, nil
}

// checkChild is what a reader checks of a child against its parent
// (FORMAT.md §4.1), as fsck does: a pointer key that is not the child's
// first key, or a child reaching past the next pointer, would send
// lookups to the wrong subtree and report present keys as absent; a
// child newer than its parent cannot have been written before it.
func checkChild(n *format.Node, i int, c *format.Node) error {
	switch {
	case c.NumItems() == 0:
		return fmt.Errorf("empty node below the root: %w", format.ErrCorrupt)
	case c.FirstKey() != n.Ptrs[i].Key:
		return fmt.Errorf("first key %v, the parent's pointer says %v: %w", c.FirstKey(), n.Ptrs[i].Key, format.ErrCorrupt)
	case i+1 < len(n.Ptrs) && !lastKey(c).Less(n.Ptrs[i+1].Key):
		return fmt.Errorf("last key %v reaches the next pointer's %v: %w", lastKey(c), n.Ptrs[i+1].Key, format.ErrCorrupt)
	case c.Generation > n.Generation:
		return fmt.Errorf("generation %d, newer than the parent's %d: %w", c.Generation, n.Generation, format.ErrCorrupt)
	}
	return nil
}

func lastKey(n *format.Node) format.Key {
	if n.IsLeaf() {
		return n.Items[len(n.Items)-1].Key
	}
	return n.Ptrs[len(n.Ptrs)-1].Key
}

// childIndex is the index of the child whose subtree may hold key.
func childIndex(n *format.Node, key format.Key) int {
	i := sort.Search(len(n.Ptrs), func(i int) bool { return key.Less(n.Ptrs[i].Key) })
	if i > 0 {
		i--
	}
	return i
}

// itemIndex is the index of the first item >= key, and whether it equals key.
func itemIndex(n *format.Node, key format.Key) (int, bool) {
	i := sort.Search(len(n.Items), func(i int) bool { return !n.Items[i].Key.Less(key) })
	return i, i < len(n.Items) && n.Items[i].Key == key
}

// Get returns the value stored under key. The slice is the node's own:
// callers copy before changing it (Put sees the old value to keep the
// counters, and a clean node is the committed state).
func (t *Tree) Get(key format.Key) ([]byte, error) {
	n, err := t.leafFor(key)
	if err != nil || n == nil {
		// An unreadable node is not an absent key: the error alone.
		return nil, joinNotFound(err)
	}
	if i, ok := itemIndex(n, key); ok {
		return n.Items[i].Data, nil
	}
	return nil, ErrNotFound
}

// cow returns a node the running transaction may change: n itself if it is
// dirty, otherwise a copy at a new address (and n is freed).
func (t *Tree) cow(n *format.Node) (*format.Node, error) {
	if t.s.IsDirty(n) {
		return n, nil
	}
	c, err := t.s.NewNode(t.id, n.Level)
	if err != nil {
		return nil, err
	}
	if n.IsLeaf() {
		c.SetItems(append([]format.Item(nil), n.Items...))
	}
	c.Ptrs = append([]format.KeyPtr(nil), n.Ptrs...)
	if err := t.s.FreeNode(n); err != nil {
		return nil, err
	}
	return c, nil
}

func ptrTo(n *format.Node) format.KeyPtr {
	return format.KeyPtr{Key: n.FirstKey(), Logical: n.Logical, Generation: n.Generation}
}

func (t *Tree) setRoot(n *format.Node) {
	t.root = format.RootPtr{Logical: n.Logical, Generation: n.Generation, Level: n.Level}
}

// cowRoot makes the root writable, creating an empty leaf for an empty tree.
func (t *Tree) cowRoot() (*format.Node, error) {
	t.hints = nil // leaves change in place from now on
	n, err := t.readRoot()
	if err != nil {
		return nil, err
	}
	if n == nil {
		n, err = t.s.NewNode(t.id, 0)
	} else {
		n, err = t.cow(n)
	}
	if err != nil {
		return nil, err
	}
	t.setRoot(n)
	return n, nil
}

// cowChild makes child i of the writable node n writable.
func (t *Tree) cowChild(n *format.Node, i int) (*format.Node, error) {
	c, err := t.readChild(n, i)
	if err != nil {
		return nil, err
	}
	if c, err = t.cow(c); err != nil {
		return nil, err
	}
	n.Ptrs[i].Logical, n.Ptrs[i].Generation = c.Logical, c.Generation
	return c, nil
}

// EnsureRoot gives an empty tree an empty root leaf, so it has an address.
func (t *Tree) EnsureRoot() error {
	if t.root.Logical != 0 {
		return nil
	}
	_, err := t.cowRoot()
	return err
}

func (t *Tree) observe(key format.Key, data []byte, added bool) {
	if t.obs != nil {
		t.obs.ItemChanged(t.id, key, data, added)
	}
}
