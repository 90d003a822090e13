package check

// Fixes of fs tree items of any type, registered in the fix table
// (repair_trees.go).

import "github.com/ddfs/ddfs/format"

// fixFSItemBad drops an fs tree item that does not decode: an inode item
// is made anew, a file extent kept.
func (f *fixer) fixFSItemBad(p Problem) error {
	x := p.fix
	if x.key.Type == format.FileExtentKey {
		return nil // it maps file data: dropping it would lose the data
	}
	if x.key.Type == format.InodeItemKey {
		// Made anew in the same transaction, so no state between
		// has names of an inode that does not exist.
		if err := f.del(format.FSTree, x.key); err != nil {
			return err
		}
		f.settle[x.key.ObjectID] = true
		return f.recreateInode(x.key.ObjectID)
	}
	// What it held is lost either way; without it the next round
	// rebuilds the rest (an inode item, a DIR_ITEM from its
	// DIR_INDEX, a name in lost+found).
	return f.del(format.FSTree, x.key)
}

// fixPropItem drops a PROP_ITEM (reserved: version 1 writes none).
func (f *fixer) fixPropItem(p Problem) error {
	return f.del(format.FSTree, p.fix.key)
}
