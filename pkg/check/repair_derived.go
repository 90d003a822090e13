package check

import (
	"fmt"
	"slices"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/volume"
)

// derivedTrees hold nothing that is not found elsewhere: the dedupe index
// is rebuilt from the extents it indexes (DEDUPE_ENTRIES), and a discard
// record only remembers space already free that a discard has not
// reached yet. When a node of one has no copy that reads, -y drops the
// whole tree rather than restoring older roots, which would lose every
// change since.
var derivedTrees = []format.TreeID{format.DedupeTree, format.DiscardTree}

// dropDerived gives the derived trees rep found incomplete no root, in
// one superblock write of the next generation (as a restore of backup
// roots). The next rounds rebuild them and free their old nodes
// (META_LEAKED). It returns the trees dropped.
func dropDerived(vol *volume.Volume, rep *Report) ([]format.TreeID, error) {
	cur := *vol.Super
	roots := cur.Roots
	var dropped []format.TreeID
	for _, id := range derivedTrees {
		if slices.Contains(rep.Incomplete, id.String()) && roots.Root(id).Logical != 0 {
			roots.SetRoot(id, format.RootPtr{})
			dropped = append(dropped, id)
		}
	}
	if len(dropped) == 0 {
		return nil, nil
	}
	cand := withRoots(cur, roots)
	if err := vol.WriteSupers(&cand); err != nil {
		return nil, fmt.Errorf("drop the %v trees: %w", dropped, err)
	}
	return dropped, vol.Flush()
}
