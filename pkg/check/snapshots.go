package check

// Snapshots (FORMAT.md §6.12): the snapshot tree's items, the fs trees
// they keep and the nodes those share with the live tree.
//
// Two passes. The node walk visits every node reachable from any fs tree
// once (visitSnapshots): a node reached again through another pointer is
// counted, not re-read, so METADATA_ITEM refs can be checked against the
// pointers found (checkMetaRefs), and the EXTENT_DATA items of the nodes
// only snapshots reach count toward their extents' refs, as the format
// counts them (distinct leaves). Then each snapshot's namespace is checked
// as a whole tree of its own by a checker of its own (checkSnapshotNames),
// whose namespace problems are reported under the tree "fs@NAME" and are
// never repaired: snapshots are read-only.

import (
	"fmt"

	"github.com/google/uuid"

	"github.com/ddfs/ddfs/format"
)

// snapshotRef is a snapshot item the walk of the snapshot tree accepted.
type snapshotRef struct {
	id   uint64
	item *format.SnapshotItem
	// countOnly: a tree whose nodes and data count as in use, with no
	// namespace checked: what is left of a tree being dropped
	// (DROP_ITEM), or the tree of an item the check rejects (SNAPSHOT_BAD:
	// the store may still open it, and "in use" wins).
	countOnly bool
}

// snapshotState is what the walk of the snapshot tree found.
type snapshotState struct {
	list  []snapshotRef
	names map[string]uint64
	uuids map[[16]byte]uint64
	// shared counts, per fs-tree node reached more than once, the pointers
	// beyond the first (only under IncompatSnapshots).
	shared map[uint64]uint64
	// metaRefs holds the METADATA_ITEM refs that are not 1.
	metaRefs map[uint64]uint64
	// inSnapshot: the walk is in a snapshot's tree (its new nodes' items
	// count data references only; their namespace is checked apart).
	inSnapshot bool
	// walking is the fs tree label (fs@NAME) of the snapshot walked.
	walking string
}

// sharing reports whether fs-tree nodes may have several pointers.
func (c *checker) sharing() bool { return c.sb.Incompat&format.IncompatSnapshots != 0 }

// snapshotItem takes an item of the snapshot tree.
func (c *checker) snapshotItem(node uint64, it format.Item) {
	bad := c.itemBadFunc(format.SnapshotTree, node, it)
	if it.Key == format.ReceiveKey {
		c.receiveItem(node, it, bad)
		return
	}
	if it.Key.Type == format.DropItemKey {
		c.dropItem(node, it, bad)
		return
	}
	if it.Key.Type != format.SnapshotItemKey || it.Key.Offset != 0 || it.Key.ObjectID == 0 {
		bad(fmt.Errorf("not a snapshot item key"))
		return
	}
	s, err := format.UnmarshalSnapshotItem(it.Data)
	if err != nil {
		bad(err)
		return
	}
	st := &c.snaps
	if st.names == nil {
		st.names, st.uuids = map[string]uint64{}, map[[16]byte]uint64{}
	}
	problem := func(msg string, args ...any) {
		c.add(Problem{Code: SnapshotBad, Tree: format.SnapshotTree.String(), Logical: node,
			Message: fmt.Sprintf("snapshot %d %q: ", it.Key.ObjectID, s.Name) + fmt.Sprintf(msg, args...)})
		st.list = append(st.list, snapshotRef{id: it.Key.ObjectID, item: s, countOnly: true})
	}
	switch other, dupName := st.names[s.Name]; {
	case !c.sharing():
		problem("the snapshots feature is off")
	case s.Generation > c.sb.Generation:
		problem("made at generation %d, after the filesystem's %d", s.Generation, c.sb.Generation)
	case len(st.list) >= format.MaxSnapshots:
		problem("more than %d snapshots", format.MaxSnapshots)
	case dupName:
		problem("snapshot %d has the same name", other)
	case st.uuids[s.UUID] != 0:
		problem("snapshot %d has the same uuid %s", st.uuids[s.UUID], uuid.UUID(s.UUID))
	default:
		st.names[s.Name], st.uuids[s.UUID] = it.Key.ObjectID, it.Key.ObjectID
		st.list = append(st.list, snapshotRef{id: it.Key.ObjectID, item: s})
	}
}

// parkedName labels the live tree a receive parked (§6.13) among the
// snapshots: no snapshot can have it (it is no valid name).
const parkedName = "(parked by a receive)"

// receiveItem takes the RECEIVE_ITEM: its parked root is one more fs tree
// to walk and check, as a snapshot's.
func (c *checker) receiveItem(node uint64, it format.Item, bad func(error)) {
	r, err := format.UnmarshalReceiveItem(it.Data)
	if err != nil {
		bad(err)
		return
	}
	ref := snapshotRef{item: &format.SnapshotItem{Root: r.Parked, Generation: r.Generation, Name: parkedName}}
	if c.sb.Incompat&format.IncompatReceive == 0 || !c.sharing() {
		c.add(Problem{Code: SnapshotBad, Tree: format.SnapshotTree.String(), Logical: node,
			Message: "a receive item without the receive and snapshots features"})
		ref.countOnly = true
	}
	c.snaps.list = append(c.snaps.list, ref)
}

// dropItem takes a DROP_ITEM: what is left of a tree being dropped is
// one more fs tree whose nodes and data references count (§6.12).
func (c *checker) dropItem(node uint64, it format.Item, bad func(error)) {
	d, err := format.UnmarshalDropItem(it.Data)
	if err == nil && it.Key.Offset != 0 {
		err = fmt.Errorf("drop item key offset %d", it.Key.Offset)
	}
	if err != nil {
		bad(err)
		return
	}
	if c.sb.Incompat&format.IncompatDropping == 0 || !c.sharing() || d.Generation > c.sb.Generation {
		c.add(Problem{Code: SnapshotBad, Tree: format.SnapshotTree.String(), Logical: node,
			Message: fmt.Sprintf("drop item %d: without the dropping and snapshots features, or made at generation %d after the filesystem's %d", it.Key.ObjectID, d.Generation, c.sb.Generation)})
	}
	c.snaps.list = append(c.snaps.list, snapshotRef{item: &format.SnapshotItem{Root: d.Root, Generation: d.Generation, Name: droppingName}, countOnly: true})
}

// droppingName labels a tree being dropped among the snapshots.
const droppingName = "(being dropped)"

// visitSnapshots walks the nodes of each snapshot's fs tree that the live
// tree does not share (claimNode counts the shared ones).
func (c *checker) visitSnapshots() {
	st := &c.snaps
	st.inSnapshot = true
	defer func() { st.inSnapshot = false }()
	for _, s := range st.list {
		r := s.item.Root
		st.walking = format.FSTree.String() + "@" + s.item.Name
		c.visit(format.FSTree, r.Logical, r.Generation, int(r.Level), nil, bounds{format.Key{}, format.MaxKey}, true, nil)
	}
}

// sharedNode reports whether a node seen before as other may be reached
// again from tree id (both fs trees under IncompatSnapshots): then the
// pointer is counted and the node not read again.
func (c *checker) sharedNode(id, other format.TreeID, logical uint64) bool {
	if id != format.FSTree || other != format.FSTree || !c.sharing() {
		return false
	}
	if c.snaps.shared == nil {
		c.snaps.shared = map[uint64]uint64{}
	}
	c.snaps.shared[logical]++
	return true
}

// snapshotFSItem takes an item of a node only snapshots reach: it counts
// the data extent an EXTENT_DATA item points at (its namespace is
// checkSnapshotNames'); one that does not decode leaves the counts short.
func (c *checker) snapshotFSItem(it format.Item) {
	if it.Key.Type != format.FileExtentKey {
		return
	}
	var x format.FileExtentItem
	if err := format.DecodeFileExtentItem(it.Data, &x); err != nil {
		c.fs.extentLost = true // reported by the snapshot's own pass
		return
	}
	if x.Type != format.FileExtentInline && x.DiskLogical != 0 {
		c.fs.use(extentID{x.DiskLogical, x.DiskLen}, it.Key.ObjectID, it.Key.Offset, &x)
	}
}

// metaRef notes a METADATA_ITEM's refs.
func (c *checker) metaRef(logical uint64, m *format.MetadataItem) {
	if m.Refs == 1 {
		return
	}
	if c.snaps.metaRefs == nil {
		c.snaps.metaRefs = map[uint64]uint64{}
	}
	c.snaps.metaRefs[logical] = m.Refs
}

// checkMetaRef compares node l's METADATA_ITEM refs with the pointers to
// it the walks found.
func (c *checker) checkMetaRef(l uint64) {
	refs, ok := c.snaps.metaRefs[l]
	if !ok {
		refs = 1
	}
	if want := 1 + c.snaps.shared[l]; refs != want {
		c.add(Problem{Code: MetaRefs, Tree: c.seen[l].String(), Logical: l, fix: &fixData{key: c.metaItems[l], want: want},
			Message: fmt.Sprintf("metadata item has refs %d, %d pointers to the node", refs, want)})
	}
}

// checkSnapshotNames checks each snapshot's namespace: a checker of its
// own walks the snapshot's tree whole (shared nodes too) and runs the
// namespace checks; its fs problems are reported here, under "fs@NAME",
// without fixes. Node problems are the node walk's, reported once.
func (c *checker) checkSnapshotNames() {
	for _, s := range c.snaps.list {
		if c.opt.cancelled() != nil {
			return
		}
		if s.countOnly {
			continue
		}
		sb := *c.sb
		sb.Roots.SetRoot(format.FSTree, s.item.Root)
		v := newChecker(c.vol, Options{Context: c.opt.Context})
		v.sb, v.view = &sb, s.item.Name
		v.walk(format.FSTree)
		v.checkNames()
		v.withhold()
		if s.item.Name == parkedName {
			n := v.counted.LogicalBytes
			c.parkedLogical = &n
		}
		v.reads.arena.free()
		v.fs.free()
		tree := format.FSTree.String() + "@" + s.item.Name
		for _, p := range v.rep.Problems {
			if p.Pass == PassFS {
				p.Tree, p.fix = tree, nil
				c.add(p)
			}
		}
		c.rep.Withheld += v.rep.Withheld
		if len(v.rep.Incomplete) > 0 {
			c.rep.markIncomplete(tree)
		}
	}
}
