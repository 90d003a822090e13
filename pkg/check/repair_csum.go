package check

// Fixes of CSUM_ITEMs, registered in the fix table (repair_trees.go).

import "github.com/ddfs/ddfs/format"

// fixCsumOrphan drops the sums over space no extent uses, as fsys drops
// the sums of freed space.
func (f *fixer) fixCsumOrphan(p Problem) error {
	return f.tx.DeleteCsums(p.Logical, p.fix.end)
}

// fixCsumItemBad drops a csum item that does not decode.
func (f *fixer) fixCsumItemBad(p Problem) error {
	return f.del(format.CsumTree, p.fix.key)
}
