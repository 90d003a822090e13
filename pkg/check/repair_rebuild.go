package check

// Rebuilding the extent tree's accounting from what references space (as
// btrfs check --init-extent-tree does, one item at a time): a file extent
// whose data extent has no item gets the item back, its references
// counted from the file extents; a node without a metadata item gets its
// item back. Dropping the file extent instead, or leaving the space to
// look free, would lose a file that still reads: "in use" wins over
// "free".

import (
	"fmt"

	"github.com/ddfs/ddfs/format"
)

// rebuildExtent makes the data extent item at x.key (x.item, from the
// file extents that point at it) where the range is sectors of one data
// chunk that no other extent holds; elsewhere the pointer is what is
// wrong, and the item stays missing (reported as left).
func (f *fixer) rebuildExtent(x *fixData) error {
	k := x.key
	ss := uint64(f.st.Super().SectorSize)
	ch, ok := f.st.Vol.Chunks.Lookup(k.ObjectID)
	if !ok || ch.Type != format.ChunkData || k.Offset == 0 || k.ObjectID%ss != 0 || k.Offset%ss != 0 || k.ObjectID+k.Offset > ch.End() {
		return nil
	}
	taken := false
	from := format.Key{ObjectID: k.ObjectID - min(k.ObjectID, format.MaxExtentBytes)}
	err := f.tree(format.ExtentTree).Scan(from, format.Key{ObjectID: k.ObjectID + k.Offset}, func(it format.Item) (bool, error) {
		// An item at k itself does not decode (ITEM_BAD): it is replaced.
		taken = it.Key.Type == format.ExtentItemKey && it.Key != k && it.Key.ObjectID+it.Key.Offset > k.ObjectID
		return !taken, nil
	})
	if err != nil || taken {
		return err
	}
	if err := f.tree(format.ExtentTree).Put(k, x.item); err != nil {
		return fmt.Errorf("extent item %v: %w", k, err)
	}
	f.addUsed(k.ObjectID, k.Offset)
	return nil
}

// addUsed counts n bytes at logical in its block group's usage (set as
// checked before the fixes run).
func (f *fixer) addUsed(logical, n uint64) {
	for _, bg := range f.st.BlockGroups() {
		if bg.Chunk.Logical <= logical && logical < bg.Chunk.End() {
			bg.Used += n
		}
	}
}

// rebuildMeta makes the metadata item of the node at l, a node of tree
// owner that a tree references, from the node's header.
func (f *fixer) rebuildMeta(l uint64, owner format.TreeID, refs uint64) error {
	n, err := f.st.ReadNode(owner, l, 0, -1)
	if err != nil {
		return nil // no copy reads: NODE_COPY_BAD's, not this fix's
	}
	k := format.Key{ObjectID: l, Type: format.MetadataItemKey, Offset: uint64(n.Level)}
	item := format.MarshalMetadataItem(&format.MetadataItem{Refs: refs, Generation: n.Generation, Owner: owner})
	// Put: an item at k that does not decode (ITEM_BAD) is replaced.
	if err := f.tree(format.ExtentTree).Put(k, item); err != nil {
		return fmt.Errorf("metadata item %v: %w", k, err)
	}
	f.addUsed(l, uint64(f.st.Super().NodeSize))
	return nil
}
