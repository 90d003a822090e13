package check

// Fixes of INODE_REF names, registered in the name fix table
// (repair_names.go).

import "github.com/ddfs/ddfs/format"

// fixRefNoIndex completes an INODE_REF's name with the child's own type.
func (f *fixer) fixRefNoIndex(p Problem) error {
	x := p.fix
	in, err := f.restoring(x.want)
	if err != nil || in == nil {
		return err
	}
	return f.completeName(x.dir, x.index, x.name, x.want, in.FileType())
}

// fixRefIndexOther makes the INODE_REF again with the index of its name.
func (f *fixer) fixRefIndexOther(p Problem) error {
	x := p.fix
	child := x.want
	// The name keeps its place: completeName finds its own DIR_INDEX
	// (or makes one at a new index) and the INODE_REF is made again
	// with that index.
	in, err := f.restoring(child)
	if err != nil || in == nil {
		return err
	}
	if err := f.dropRef(child, x.dir, x.name); err != nil {
		return err
	}
	if odd, err := f.refNameOdd(x.dir, x.index, x.name, child); err != nil || odd {
		return err
	}
	return f.completeName(x.dir, noIndex, x.name, child, in.FileType())
}

// fixRefNoDir drops a name in a directory that does not exist.
func (f *fixer) fixRefNoDir(p Problem) error {
	x := p.fix
	child := x.want
	if err := f.dropRef(child, x.dir, x.name); err != nil {
		return err
	}
	// Its last name gone, the inode needs one in /lost+found.
	if n, err := f.names(child); err != nil || n > 0 {
		return err
	}
	return f.reconnect(child)
}

// restoring marks child as getting a name back this round (no orphan)
// and reads its inode item (nil: absent or undecodable).
func (f *fixer) restoring(child uint64) (*format.InodeItem, error) {
	f.touched[child] = true
	return f.getInode(child)
}
