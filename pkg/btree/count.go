package btree

import (
	"errors"
	"fmt"

	"github.com/ddfs/ddfs/format"
)

// errCountDrift: a leaf's kept byte count (format.Node.UsedBytes) no
// longer matches its items, so overflow and underflow checks would be
// wrong. A bug in this package, never the image's.
var errCountDrift = errors.New("leaf byte count drifted from its items")

// checkCount is checkCountAlways under the ddfs_invariants tag (make
// test): it costs the item sum the count exists to save.
func (t *Tree) checkCount(n *format.Node) error {
	if !checkInvariants {
		return nil
	}
	return t.checkCountAlways(n)
}

func (t *Tree) checkCountAlways(n *format.Node) error {
	if n.CountDrift() {
		return fmt.Errorf("%v tree node %d: used %d, items take %d: %w", t.id, n.Logical, n.UsedBytes(), n.SumUsedBytes(), errCountDrift)
	}
	return nil
}
