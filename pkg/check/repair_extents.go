package check

// Fixes of extent tree items (data and metadata extents, block groups),
// registered in the fix table (repair_trees.go).

import "github.com/ddfs/ddfs/format"

// fixExtentRefs sets a data extent's references to the file extents that
// point at it.
func (f *fixer) fixExtentRefs(p Problem) error {
	return f.extentItem(p.fix.key, func(e *format.ExtentItem) { e.Refs = p.fix.want })
}

// fixExtentReadAs makes a data extent item read as its file extents do.
func (f *fixer) fixExtentReadAs(p Problem) error {
	x := p.fix
	return f.extentItem(x.key, func(e *format.ExtentItem) { e.RAMBytes, e.Compression = x.want, x.comp })
}

// fixExtentUnreferenced frees a data extent no file extent points at.
func (f *fixer) fixExtentUnreferenced(p Problem) error {
	return f.dropExtent(p.fix.key)
}

// fixFileExtentNoItem rebuilds a data extent item from the file extents
// that point at it.
func (f *fixer) fixFileExtentNoItem(p Problem) error {
	return f.rebuildExtent(p.fix)
}

// fixMetaLeaked frees a metadata extent item no tree uses.
func (f *fixer) fixMetaLeaked(p Problem) error {
	if err := f.del(format.ExtentTree, p.fix.key); err != nil {
		return err
	}
	// Its block group's usage, set as checked above, drops with it.
	for _, bg := range f.st.BlockGroups() {
		if bg.Chunk.Logical <= p.Logical && p.Logical < bg.Chunk.End() {
			bg.Used -= min(bg.Used, uint64(f.st.Super().NodeSize))
		}
	}
	return nil
}

// fixMetaRefs sets a node's METADATA_ITEM refs to the pointers the walk
// of every fs tree (snapshots and trees being dropped too) counted: a
// cross-check, so it is only reported, and fixed, over complete trees.
func (f *fixer) fixMetaRefs(p Problem) error {
	return f.item(format.ExtentTree, p.fix.key, func(b []byte) ([]byte, error) {
		m, err := format.UnmarshalMetadataItem(b)
		if err != nil {
			return nil, err
		}
		m.Refs = p.fix.want
		return format.MarshalMetadataItem(m), nil
	})
}

// fixMetaMissing rebuilds the metadata extent item of a node in use,
// its refs the pointers the walk of every tree counted.
func (f *fixer) fixMetaMissing(p Problem) error {
	return f.rebuildMeta(p.Logical, p.fix.owner, max(p.fix.want, 1))
}

// fixBGOrphan drops a block group item with no chunk.
func (f *fixer) fixBGOrphan(p Problem) error {
	return f.del(format.ExtentTree, p.fix.key)
}
