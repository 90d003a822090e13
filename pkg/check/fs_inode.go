package check

// INODE_ITEM: the check of the item (fsItems) and of what all the items
// of one inode add up to once the walk leaves it (finishInode).

import (
	"github.com/ddfs/ddfs/format"
)

// inodeItem takes an INODE_ITEM.
func (c *checker) inodeItem(cur *inodeState, it format.Item) {
	k := it.Key
	cur.hasItem = true
	if cur.ino == format.RootDirIno {
		c.fs.rootSeen = true
	}
	var dec format.InodeItem
	if err := format.DecodeInodeItem(it.Data, &dec); err != nil {
		c.fsItemBad(cur, k, err)
		return
	}
	if k.Offset != 0 {
		c.fsFix(InodeKeyOffset, cur.ino, &fixData{key: k}, "inode item key offset %d, want 0", k.Offset)
	}
	// A second inode item (another key offset) replaces the first, as
	// a pointer to a fresh decode would; in stays the same place.
	cur.itemBuf = dec
	in := &cur.itemBuf
	cur.item = in
	if cur.ino == format.RootDirIno && in.FileType() != format.FileTypeDir {
		c.fsProblem(RootNotDir, cur.ino, "the root directory is a %v", in.FileType())
	}
}

// finishInode checks what the items of the inode add up to, in a fixed
// order (names, directory, size and type, counts).
func (c *checker) finishInode() {
	s := &c.fs
	cur := &s.cur
	if cur.ino < format.RootDirIno {
		return
	}
	if !cur.dir.zero() {
		s.dirFlag[cur.ino] = true
	}
	if !cur.hasItem {
		c.fsFix(InodeMissing, cur.ino, &fixData{}, "%d items but no inode item", cur.orphaned)
		return
	}
	in := cur.item
	if in == nil {
		return // the inode item did not decode (reported)
	}
	c.inodeNames(cur, in)
	if in.FileType() == format.FileTypeDir {
		c.finishDir(cur, in)
	}
	c.inodeFields(cur, in)
}

// inodeNames checks the names counted against nlink: a directory has one.
func (c *checker) inodeNames(cur *inodeState, in *format.InodeItem) {
	t := in.FileType()
	isDir := t == format.FileTypeDir
	switch {
	case cur.ino == format.RootDirIno:
		// no name (reported with the INODE_REF otherwise)
	case cur.names == 0:
		c.fsFix(Orphan, cur.ino, &fixData{ftype: t}, "a %v with nlink %d has no name (orphan)", t, in.Nlink)
	case isDir && cur.names > 1:
		c.fsFix(DirNames, cur.ino, &fixData{}, "directory has %d names, want 1", cur.names)
	case !isDir && in.Nlink != cur.names:
		c.fsFix(Nlink, cur.ino, &fixData{want: uint64(cur.names)}, "nlink %d, the inode has %d names", in.Nlink, cur.names)
	}
}

// finishDir checks a directory's nlink, size and seq against its
// entries, and keeps its parent for the loop check.
func (c *checker) finishDir(cur *inodeState, in *format.InodeItem) {
	if uint64(in.Nlink) != 2+cur.subdirs {
		c.fsFix(DirNlink, cur.ino, &fixData{want: 2 + cur.subdirs}, "directory nlink %d, want %d (2 + %d subdirectories)", in.Nlink, 2+cur.subdirs, cur.subdirs)
	}
	if in.Size != cur.entries {
		c.fsFix(DirSize, cur.ino, &fixData{want: cur.entries}, "directory size %d, it has %d entries", in.Size, cur.entries)
	}
	if in.Seq < 2 {
		c.fsFix(DirSeq, cur.ino, &fixData{}, "directory seq %d, want >= 2", in.Seq)
	}
	if cur.names == 1 && cur.ino != format.RootDirIno {
		c.fs.dirParent[cur.ino] = cur.parent
	}
}

// inodeFields checks the fields that depend on the file type, the flags
// and nbytes against the extents.
func (c *checker) inodeFields(cur *inodeState, in *format.InodeItem) {
	t := in.FileType()
	if t != format.FileTypeRegular && t != format.FileTypeSymlink && t != format.FileTypeDir && in.Size != 0 {
		c.fsFix(SpecialSize, cur.ino, &fixData{}, "a %v with size %d, want 0", t, in.Size)
	}
	if t == format.FileTypeSymlink && (in.Size == 0 || cur.linkData < in.Size || cur.linkNUL) {
		c.fsProblem(SymlinkTarget, cur.ino, "symlink target of %d bytes: %d of them data from offset 0, NUL %v (want a non-empty target without holes or NUL)", in.Size, min(cur.linkData, in.Size), cur.linkNUL)
	}
	if t != format.FileTypeCharDev && t != format.FileTypeBlockDev && in.Rdev != 0 {
		c.fsFix(Rdev, cur.ino, &fixData{}, "a %v with device number %#x, want 0", t, in.Rdev)
	}
	if in.Flags&^format.KnownInodeFlags != 0 {
		c.fsFix(InodeFlags, cur.ino, &fixData{}, "unknown flags %#x", in.Flags)
	}
	if !cur.extentLost && in.NBytes != cur.nbytes {
		c.fsFix(NBytes, cur.ino, &fixData{want: cur.nbytes}, "nbytes %d, its extents hold %d", in.NBytes, cur.nbytes)
	}
}
