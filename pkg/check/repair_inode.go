package check

// Fixes of inode items, registered in the fix tables (repair_trees.go,
// repair_names.go).

import "github.com/ddfs/ddfs/format"

// fixInodeMissing makes a missing inode item anew; its names stay.
func (f *fixer) fixInodeMissing(p Problem) error {
	f.settle[p.Ino] = true
	return f.recreateInode(p.Ino)
}

// fixRootMissing makes the root directory anew, once.
func (f *fixer) fixRootMissing(Problem) error {
	if f.recreated[format.RootDirIno] {
		return nil
	}
	f.recreated[format.RootDirIno] = true
	return f.recreateInode(format.RootDirIno)
}

// fixOrphan gives an inode without a name one in lost+found.
func (f *fixer) fixOrphan(p Problem) error {
	f.settle[p.Ino] = true
	if f.touched[p.Ino] {
		return nil // a name of it is being restored this round
	}
	return f.reconnect(p.Ino)
}

// fixNlink sets nlink to the names counted (a directory's: 2 + its
// subdirectories).
func (f *fixer) fixNlink(p Problem) error {
	return f.inode(p.Ino, func(in *format.InodeItem) { in.Nlink = uint32(p.fix.want) })
}

// fixDirSize sets a directory's size to its entries.
func (f *fixer) fixDirSize(p Problem) error {
	return f.inode(p.Ino, func(in *format.InodeItem) { in.Size = p.fix.want })
}

// fixNBytes sets nbytes to what the extents hold.
func (f *fixer) fixNBytes(p Problem) error {
	return f.inode(p.Ino, func(in *format.InodeItem) { in.NBytes = p.fix.want })
}

// fixSpecialSize zeroes the size of a special file.
func (f *fixer) fixSpecialSize(p Problem) error {
	return f.inode(p.Ino, func(in *format.InodeItem) { in.Size = 0 })
}

// fixRdev zeroes the device number of an inode that is no device.
func (f *fixer) fixRdev(p Problem) error {
	return f.inode(p.Ino, func(in *format.InodeItem) { in.Rdev = 0 })
}

// fixInodeFlags clears the flags version 1 does not know.
func (f *fixer) fixInodeFlags(p Problem) error {
	return f.inode(p.Ino, func(in *format.InodeItem) { in.Flags &= format.KnownInodeFlags })
}

// fixExtentBeyondSize grows a regular file's size over its extents,
// unless this round drops the extent.
func (f *fixer) fixExtentBeyondSize(p Problem) error {
	x := p.fix
	if f.dropped[x.key] {
		return nil
	}
	return f.inode(p.Ino, func(in *format.InodeItem) {
		if in.FileType() == format.FileTypeRegular { // a fifo's extents are the problem
			in.Size = max(in.Size, x.want)
		}
	})
}
