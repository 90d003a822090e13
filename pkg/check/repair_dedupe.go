package check

// Fixes of the dedupe tree, registered in the fix table (repair_trees.go):
// a bad entry goes and its extent is indexed again.

import "github.com/ddfs/ddfs/format"

// fixDedupeEntries indexes an extent again once its stale entries are
// dropped.
func (f *fixer) fixDedupeEntries(p Problem) error {
	if p.fix.want != 0 {
		return nil // several entries: the stale ones are dropped first
	}
	return f.reindex(p.fix.key.ObjectID)
}

// fixDedupeStale drops an entry whose extent is gone.
func (f *fixer) fixDedupeStale(p Problem) error {
	return f.del(format.DedupeTree, p.fix.key)
}

// fixDedupeItem drops a bad entry and indexes its extent again.
func (f *fixer) fixDedupeItem(p Problem) error {
	if err := f.del(format.DedupeTree, p.fix.key); err != nil {
		return err
	}
	return f.reindex(p.fix.key.Offset)
}
