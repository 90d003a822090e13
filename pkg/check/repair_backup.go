package check

import (
	"fmt"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/volume"
)

// restoreBackupRoots handles a tree root no copy of which reads: it
// checks each backup root set of the superblock, newest first, as if it
// were the current one, and writes the first that checks clean (with its
// data) as the roots of a new generation. Nodes and data freed after a
// backup may since have been reused, which the check of that backup
// finds. It returns the generation restored, 0 if none checked clean.
func restoreBackupRoots(open func() (*volume.Volume, error), opt Options) (uint64, error) {
	vol, err := open()
	if err != nil {
		return 0, err
	}
	defer vol.Close()
	cur := *vol.Super
	for _, b := range cur.Backups {
		if err := opt.cancelled(); err != nil {
			return 0, err
		}
		if b.Generation == 0 || b.Generation >= cur.Generation || b.Root(format.ChunkTree).Logical == 0 {
			continue
		}
		cand := withRoots(cur, b)
		if !checksClean(open, &cand, opt) {
			continue
		}
		if err := vol.WriteSupers(&cand); err != nil {
			return 0, fmt.Errorf("write the roots of generation %d: %w", b.Generation, err)
		}
		if err := vol.Flush(); err != nil {
			return 0, err
		}
		return b.Generation, nil
	}
	return 0, nil
}

// checksClean checks the filesystem as if sb were its superblock; the
// superblock copies on disk are not sb's yet, so that pass is ignored.
func checksClean(open func() (*volume.Volume, error), sb *format.Superblock, opt Options) bool {
	vol, err := open()
	if err != nil {
		return false
	}
	defer vol.Close()
	vol.Super = sb
	opt.CheckData = true
	rep, err := CheckVolume(vol, opt)
	if err != nil || opt.cancelled() != nil {
		return false // a check cut short may skip the data and snapshot passes
	}
	for _, p := range rep.Problems {
		if p.Pass != PassSuper && !p.Warning {
			return false
		}
	}
	return true
}

// withRoots is the superblock of the generation after cur's with roots in
// place of cur's (kept as the newest backup).
func withRoots(cur format.Superblock, roots format.RootSet) format.Superblock {
	cand := cur
	cand.Generation = cur.Generation + 1
	cand.Roots = roots
	// The root set is this generation's, as a commit stamps it: the next
	// commit keeps it as a backup, and a device a crash leaves at this
	// generation is then one the set remembers (volume.inHistory).
	cand.Roots.Generation = cand.Generation
	copy(cand.Backups[1:], cur.Backups[:format.NumBackupRoots-1])
	cand.Backups[0] = cur.Roots
	// The counters were those of the old roots; the next writer
	// recounts (FORMAT.md §3.9).
	cand.RoCompat &^= format.RoCompatCounters
	cand.Counters = format.Counters{}
	return cand
}
