package check

// Fixes of directory entries (DIR_ITEM, DIR_INDEX) and of directories'
// names, registered in the fix tables (repair_trees.go, repair_names.go).

// fixEntryDangling drops an entry naming an inode that does not exist,
// unless this round makes the inode anew.
func (f *fixer) fixEntryDangling(p Problem) error {
	x := p.fix
	if f.recreated[x.want] {
		return nil
	}
	return f.dropName(x.dir, x.index, x.name, x.want)
}

// fixEntryMismatch makes the DIR_ITEM entry say what the DIR_INDEX and
// the child's inode say, or, the child gone, what the DIR_INDEX says.
func (f *fixer) fixEntryMismatch(p Problem) error {
	x := p.fix
	child := x.want
	in, err := f.getInode(child)
	if err != nil {
		return err
	}
	if in == nil {
		return f.indexToItem(x.dir, x.index, x.name)
	}
	y := *x
	y.ftype = in.FileType()
	if err := f.entryType(&y); err != nil {
		return err
	}
	if err := f.itemToIndex(x.dir, x.index, x.name, child, y.ftype); err != nil {
		return err
	}
	return f.indexToItem(x.dir, x.index, x.name)
}

// fixEntryNoRef completes a DIR_ITEM entry's name, or drops it when it is
// the odd one of the three.
func (f *fixer) fixEntryNoRef(p Problem) error {
	x := p.fix
	child := x.want
	// A DIR_ITEM entry that names another inode than the DIR_INDEX
	// and INODE_REF of its name is the odd one of the three:
	// ENTRY_MISMATCH's fix points it at theirs; no name is made up.
	if other, err := f.indexOwner(x.dir, x.name); err != nil || other != 0 && other != child {
		return err
	}
	// A DIR_ITEM entry alone (no DIR_INDEX of the name for the
	// inode) of an inode named elsewhere is not made a new name:
	// it goes. Only an inode it would leave nameless keeps it.
	if lone, err := f.loneItem(x.dir, x.name, child); err != nil || lone {
		if err != nil {
			return err
		}
		return f.dropName(x.dir, noIndex, x.name, child)
	}
	f.touched[child] = true
	return f.completeName(x.dir, x.index, x.name, child, x.ftype)
}

// fixIndexNoItem completes a DIR_INDEX entry's name with the entry's type.
func (f *fixer) fixIndexNoItem(p Problem) error {
	x := p.fix
	f.touched[x.want] = true
	return f.completeName(x.dir, x.index, x.name, x.want, x.ftype)
}

// fixDirNames keeps a directory's first name and drops the others.
func (f *fixer) fixDirNames(p Problem) error {
	return f.keepFirstName(p.Ino)
}

// fixDirLoop cuts the loop at its lowest directory: it moves to
// lost+found.
func (f *fixer) fixDirLoop(p Problem) error {
	return f.relink(p.Ino)
}

// fixEntryType sets an entry's type to its inode's.
func (f *fixer) fixEntryType(p Problem) error {
	return f.entryType(p.fix)
}

// fixDirItemHash moves a DIR_ITEM entry under its name's hash.
func (f *fixer) fixDirItemHash(p Problem) error {
	x := p.fix
	return f.rekeyDirItem(p.Ino, x.key, x.name, x.want)
}
