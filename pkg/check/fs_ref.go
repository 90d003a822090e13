package check

// INODE_REF: the names of an inode, balanced against the DIR_INDEX
// entries during the walk and matched one by one in the second pass.

import (
	"github.com/ddfs/ddfs/format"
)

// inodeRef takes an INODE_REF: the names of the inode in one directory,
// each balanced against the DIR_INDEX entry naming it.
func (c *checker) inodeRef(cur *inodeState, it format.Item) {
	s := &c.fs
	// fn runs only on a valid item, so the item is walked once.
	parent := it.Key.Offset
	if err := format.EachInodeRef(it.Data, func(r format.InodeRefView) {
		cur.names++
		cur.parent = parent
		s.names.add(cur.ino, nameMark(parent, cur.ino, r.Index, format.NameHash(r.Name), cur.fileType()), -1)
	}); err != nil {
		c.fsItemBad(cur, it.Key, err)
		return
	}
	if cur.ino == format.RootDirIno {
		c.fsProblem(RootHasName, cur.ino, "the root directory has a name in directory %d", parent)
	}
	if parent == cur.ino {
		c.fsFix(RefSelfParent, cur.ino, &fixData{}, "INODE_REF names the inode as its own parent")
	}
}

// matchInodeRef: each name of an inode needs the DIR_INDEX its index names.
func (c *checker) matchInodeRef(l lookup, child, dir uint64, r format.InodeRef) {
	b, ok, err := l.get(format.Key{ObjectID: dir, Type: format.DirIndexKey, Offset: r.Index})
	if err != nil {
		return // unread: the fs tree is incomplete (lookup.get), nothing concluded
	}
	if ok {
		e, err := format.UnmarshalDirEntry(b)
		if err != nil || (e.Ino == child && e.Name == r.Name) {
			return
		}
		c.fsFix(RefIndexOther, child, &fixData{dir: dir, index: r.Index, name: r.Name, want: child}, "name %q in directory %d has index %d, but that DIR_INDEX is %q (inode %d)", r.Name, dir, r.Index, e.Name, e.Ino)
		return
	}
	_, exists, err := l.inode(dir)
	if err != nil {
		// Unread: whether the directory exists is not known, so neither
		// is which fix the name needs.
		return
	}
	if !exists {
		c.fsFix(RefNoDir, child, &fixData{dir: dir, index: r.Index, name: r.Name, want: child}, "name %q is in directory %d, which does not exist", r.Name, dir)
		return
	}
	c.fsFix(RefNoIndex, child, &fixData{dir: dir, index: r.Index, name: r.Name, want: child}, "name %q in directory %d (index %d) has no DIR_INDEX", r.Name, dir, r.Index)
}
