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
