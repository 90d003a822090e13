package check

// DIR_ITEM and DIR_INDEX: a directory's entries, balanced against each
// other and against the children's INODE_REFs during the walk, matched
// one by one in the second pass; and the loop check over the parents.

import (
	"sort"

	"github.com/ddfs/ddfs/format"
)

// dirItem takes a DIR_ITEM: its entries under their name hash, balanced
// against the directory's DIR_INDEX entries.
func (c *checker) dirItem(cur *inodeState, it format.Item) {
	k := it.Key
	// fn runs only on a valid item, so the item is walked once;
	// dirEntries reports once, before the entries' problems.
	if err := format.EachDirEntry(it.Data, func(e format.DirEntryView) {
		c.dirEntries(cur)
		h := format.NameHash(e.Name)
		if h != k.Offset {
			c.fsFix(DirItemHash, cur.ino, &fixData{key: k, name: string(e.Name), want: e.Ino}, "DIR_ITEM entry %q is under key offset %#x, its name hash is %#x", e.Name, k.Offset, h)
		}
		cur.dir.n++
		cur.dir.h += entryMark(e.Ino, e.Type, h)
	}); err != nil {
		c.fsItemBad(cur, k, err)
	}
}

// dirIndex takes a DIR_INDEX: an index in [2, seq), balanced against the
// DIR_ITEM entries and against the child's INODE_REF names.
func (c *checker) dirIndex(cur *inodeState, it format.Item) {
	s := &c.fs
	e, err := format.UnmarshalDirEntryView(it.Data)
	if err != nil {
		c.fsItemBad(cur, it.Key, err)
		return
	}
	c.dirEntries(cur)
	idx := it.Key.Offset
	if in := cur.item; in != nil && in.FileType() == format.FileTypeDir && (idx < 2 || idx >= in.Seq) {
		c.fsFix(DirIndexRange, cur.ino, &fixData{dir: cur.ino, index: idx}, "DIR_INDEX %d (%q) is outside [2, seq %d)", idx, e.Name, in.Seq)
	}
	if e.Ino == cur.ino {
		c.fsFix(DirEntrySelf, cur.ino, &fixData{dir: cur.ino, index: idx}, "directory entry %q names the directory itself", e.Name)
	}
	cur.entries++
	if e.Type == format.FileTypeDir {
		cur.subdirs++
	}
	cur.dir.n--
	h := format.NameHash(e.Name)
	cur.dir.h -= entryMark(e.Ino, e.Type, h)
	s.names.add(e.Ino, nameMark(cur.ino, e.Ino, idx, h, e.Type), +1)
}

// dirEntries reports directory entries of an inode that is no directory.
func (c *checker) dirEntries(cur *inodeState) {
	if t := cur.fileType(); t != 0 && t != format.FileTypeDir && !cur.notDir {
		cur.notDir = true
		c.fsFix(NotDirEntries, cur.ino, &fixData{}, "a %v has directory entries", t)
	}
}

// checkLoops reports directories whose parent chain loops instead of
// reaching the root.
func (c *checker) checkLoops() {
	s := &c.fs
	const (
		unknown = iota
		walking
		done
	)
	state := map[uint64]int{}
	dirs := make([]uint64, 0, len(s.dirParent))
	for d := range s.dirParent {
		dirs = append(dirs, d)
	}
	sort.Slice(dirs, func(i, j int) bool { return dirs[i] < dirs[j] })
	var path []uint64
	for _, d := range dirs {
		path = path[:0]
		for x := d; ; {
			if state[x] == done {
				break
			}
			if state[x] == walking {
				var loop []uint64
				for i := len(path) - 1; i >= 0; i-- {
					loop = append(loop, path[i])
					if path[i] == x {
						break
					}
				}
				sort.Slice(loop, func(i, j int) bool { return loop[i] < loop[j] })
				c.fsFix(DirLoop, loop[0], &fixData{}, "directories %v are each other's ancestors, not connected to the root", loop)
				break
			}
			p, ok := s.dirParent[x]
			if !ok {
				break // the root, or a parent reported otherwise
			}
			state[x] = walking
			path = append(path, x)
			x = p
		}
		for _, x := range path {
			state[x] = done
		}
	}
}

// matchDirItem: a DIR_ITEM entry needs an existing child with an
// INODE_REF of its name (the INODE_REF's own check then finds the
// DIR_INDEX).
func (c *checker) matchDirItem(l lookup, dir uint64, e format.DirEntry) {
	_, exists, err := l.inode(e.Ino)
	if err != nil {
		return // unread: the fs tree is incomplete (lookup.get), nothing concluded
	}
	if !exists {
		c.fsFix(EntryDangling, dir, entryFix(dir, noIndex, e), "directory entry %q names inode %d, which does not exist", e.Name, e.Ino)
		return
	}
	if _, ok, err := l.refIndex(e.Ino, dir, e.Name); err == nil && !ok {
		c.fsFix(EntryNoRef, dir, entryFix(dir, noIndex, e), "directory entry %q names inode %d, which has no INODE_REF for it", e.Name, e.Ino)
	}
}

// noIndex marks a name whose DIR_INDEX is not known.
const noIndex = ^uint64(0)

// entryFix is the fix data of directory entry e of dir.
func entryFix(dir, idx uint64, e format.DirEntry) *fixData {
	return &fixData{dir: dir, index: idx, name: e.Name, ftype: e.Type, want: e.Ino}
}

// matchDirIndex: a DIR_INDEX entry needs the same entry in the DIR_ITEM,
// a child of its type, and (when the DIR_ITEM is missing, so that
// matchDirItem does not look) the child's INODE_REF.
func (c *checker) matchDirIndex(l lookup, dir, idx uint64, e format.DirEntry) {
	de, hasItem, err := l.dirItem(dir, e.Name)
	if err != nil {
		// Unread (the fs tree is incomplete: lookup.get) or a DIR_ITEM
		// that does not decode (FS_ITEM_BAD): nothing concluded.
		return
	}
	if hasItem && (de.Ino != e.Ino || de.Type != e.Type) {
		c.fsFix(EntryMismatch, dir, entryFix(dir, idx, e), "DIR_INDEX %d names %q inode %d (%v), its DIR_ITEM entry inode %d (%v)", idx, e.Name, e.Ino, e.Type, de.Ino, de.Type)
	}
	in, exists, err := l.inode(e.Ino)
	if err != nil {
		return // unread: the fs tree is incomplete, nothing concluded
	}
	if !exists {
		if !hasItem { // else matchDirItem reports it
			c.fsFix(EntryDangling, dir, entryFix(dir, idx, e), "DIR_INDEX %d %q names inode %d, which does not exist", idx, e.Name, e.Ino)
		}
		return
	}
	if in != nil && in.FileType() != e.Type {
		c.fsFix(EntryType, dir, &fixData{dir: dir, index: idx, name: e.Name, ftype: in.FileType(), want: e.Ino},
			"directory entry %q says %v, inode %d is a %v", e.Name, e.Type, e.Ino, in.FileType())
	}
	if hasItem {
		return
	}
	ri, hasRef, err := l.refIndex(e.Ino, dir, e.Name)
	if err != nil {
		return // unread (incomplete) or an INODE_REF that does not decode (FS_ITEM_BAD)
	}
	missing := "DIR_ITEM entry"
	if !hasRef || ri != idx {
		missing += " and no INODE_REF with this index"
	}
	c.fsFix(IndexNoItem, dir, entryFix(dir, idx, e), "DIR_INDEX %d %q (inode %d) has no %s", idx, e.Name, e.Ino, missing)
}
