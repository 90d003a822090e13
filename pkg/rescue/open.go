package rescue

import (
	"errors"
	"fmt"
	"sort"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// rootSets lists the superblock's root set and then its backups, newest
// first (backups are best effort: FORMAT.md §3.3).
func rootSets(sb *format.Superblock) []rootSet {
	out := []rootSet{{"superblock", sb.Roots}}
	var bs []format.RootSet
	for _, b := range sb.Backups {
		if b.Generation != 0 && b.Generation <= sb.Generation {
			bs = append(bs, b)
		}
	}
	sort.SliceStable(bs, func(i, j int) bool { return bs[i].Generation > bs[j].Generation })
	for _, b := range bs {
		out = append(out, rootSet{"backup", b})
	}
	return out
}

type rootSet struct {
	from string
	set  format.RootSet
}

// openStore opens the store on vol, trying the chunk and extent roots of
// each root set in turn; a rescue reads no block group, so where no
// extent root reads it opens with an empty extent tree (every chunk then
// gets a block group with nothing used, which a read-only open never
// writes). vol.Super is restored to the superblock read from disk.
func openStore(vol *volume.Volume, degraded bool) (*store.FS, error) {
	orig := *vol.Super
	defer func() { *vol.Super = orig }()
	var errs error
	for _, rs := range rootSets(&orig) {
		for _, noExtent := range []bool{false, true} {
			if noExtent && degraded {
				continue // OpenForRepair does not take missing members
			}
			vol.Super.Roots = orig.Roots
			vol.Super.Roots.SetRoot(format.ChunkTree, rs.set.Root(format.ChunkTree))
			open := store.OpenVolume
			if degraded {
				open = store.OpenDegraded
			}
			if noExtent {
				vol.Super.Roots.SetRoot(format.ExtentTree, format.RootPtr{})
				open = store.OpenForRepair
			} else {
				vol.Super.Roots.SetRoot(format.ExtentTree, rs.set.Root(format.ExtentTree))
			}
			st, err := open(vol)
			if err == nil {
				return st, nil
			}
			errs = errors.Join(errs, fmt.Errorf("%s roots (generation %d): %w", rs.from, rs.set.Generation, err))
			if volume.Refused(err) || errors.Is(err, volume.ErrMissingDevice) {
				return nil, err // not damage: another root set cannot help
			}
		}
	}
	return nil, fmt.Errorf("no chunk tree reads: %w", errs)
}
