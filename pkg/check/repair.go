package check

// Repair (fsck.ddfs -p / -y) runs in rounds: check, fix what the mode
// allows, check again. A fix is either a rewrite of one bad copy from a
// good one (volume.WriteCopy: the committed state does not change, the
// good copies stay as they are) or a normal store transaction, committed
// copy-on-write like any write: a crash at any point leaves the state
// before or after that transaction. A problem counts as fixed only when
// the next check no longer finds it.

import (
	"errors"
	"fmt"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// Mode is what fsck may change.
type Mode int

const (
	// ModeCheck changes nothing (-n, the default).
	ModeCheck Mode = iota
	// ModePreen makes only the fixes that cannot lose data (-p, -a).
	ModePreen
	// ModeRepair fixes everything it can (-y, --repair).
	ModeRepair
)

// ErrCancelled is returned when Options.Context ends a check or repair;
// a repair stops between two transactions, so nothing is half-done.
var ErrCancelled = errors.New("cancelled")

// allows reports whether the mode makes fixes of level f.
func (m Mode) allows(f Fix) bool {
	return f != FixNone && (m == ModeRepair || (m == ModePreen && f == FixPreen))
}

// maxRounds bounds the check-fix rounds: one fix can uncover the next (a
// rewritten node copy exposes its subtree, a removed entry changes its
// directory's size, a dropped extent leaves checksums over free space).
const maxRounds = 6

// fixData is what a fix needs beyond the problem's location.
type fixData struct {
	// sys is the chunk tree's system chunks (SysArrayMismatch), set
	// when they verified.
	sys []format.SysChunk

	want  uint64        // the value the checker computed (count, size, bytes used)
	gen   uint64        // node generation (NodeCopyBad)
	level int           // node level (NodeCopyBad)
	owner format.TreeID // node owner (NodeCopyBad)
	sum   []byte        // the sector's checksum (DataCopyBad)
	key   format.Key    // the item concerned
	dir   uint64        // directory of a name
	index uint64        // DIR_INDEX of a name
	name  string
	ftype format.FileType
	end   uint64             // end of a range (CsumOrphan)
	item  []byte             // the item to make at key (FileExtentNoItem)
	comp  format.Compression // with want: how the file extents read an extent (ExtentReadAs)
}

// problemID identifies a problem across rounds.
type problemID struct {
	code                   Code
	tree                   string
	logical, devid, offset uint64
	copy                   int
	ino                    uint64
	msg                    string
}

func (p Problem) id() problemID {
	c := -1
	if p.Copy != nil {
		c = *p.Copy
	}
	return problemID{p.Code, p.Tree, p.Logical, p.DevID, p.Offset, c, p.Ino, p.Message}
}

// Repair checks the filesystem open returns and fixes what opt.Mode
// allows, reopening it for every round. The report lists every problem
// any round found, Fixed when the last check no longer finds it.
func Repair(open func() (*volume.Volume, error), opt Options) (*Report, error) {
	all := []Problem{}
	index := map[problemID]int{}
	var last *Report
	var restored uint64
	rebuilt, lost := "", 0
	sysRewritten, profilesRestored := false, false
	for round := 0; ; round++ {
		if err := opt.cancelled(); err != nil {
			return nil, err
		}
		vol, err := open()
		if err != nil {
			return nil, err
		}
		rep, err := CheckVolume(vol, opt)
		if err != nil {
			vol.Close()
			return nil, err
		}
		same := last != nil && len(last.Problems) == len(rep.Problems)
		last = rep
		for _, p := range rep.Problems {
			if _, ok := index[p.id()]; !ok {
				index[p.id()] = len(all)
				all = append(all, p)
				same = false
			}
		}
		if opt.Mode.allows(FixPreen) && !sysRewritten {
			// First: every other write goes through the mapping.
			if sysRewritten, err = fixSysArrays(vol, rep.Problems); sysRewritten || err != nil {
				vol.Close()
				if err != nil {
					return nil, fmt.Errorf("repair: %w", err)
				}
				continue
			}
		}
		if opt.Mode == ModeRepair && !mappingBroken(rep.Problems) {
			dropped, err := dropDerived(vol, rep)
			if err != nil {
				vol.Close()
				return nil, fmt.Errorf("repair: %w", err)
			}
			if len(dropped) > 0 {
				vol.Close()
				continue // check without them; the next rounds rebuild them
			}
		}
		if opt.Mode == ModeRepair && rebuilt == "" && !mappingBroken(rep.Problems) && rebuildsFS(rep) {
			lost, err = rebuildFS(vol, opt)
			vol.Close()
			if err != nil {
				return nil, fmt.Errorf("repair: %w", err)
			}
			rebuilt = format.FSTree.String()
			continue // the next rounds make the rest whole
		}
		if opt.Mode == ModeRepair && restored == 0 && hasCode(rep.Problems, TreeRootBad) {
			vol.Close()
			if restored, err = restoreBackupRoots(open, opt); err != nil {
				return nil, fmt.Errorf("repair: %w", err)
			}
			if restored != 0 {
				continue // check the restored roots
			}
			if vol, err = open(); err != nil {
				return nil, err
			}
		}
		todo := opt.fixable(rep.Problems, len(rep.Incomplete) > 0)
		if opt.Mode == ModeRepair && !profilesRestored && round < maxRounds && onlyBelowProfile(rep.Problems) {
			profilesRestored = true
			err := restoreProfiles(vol, opt)
			if cerr := vol.Close(); err == nil {
				err = cerr
			}
			// No room for the profile: the problem stays, reported.
			if err != nil && !errors.Is(err, store.ErrCannotRelocate) {
				return nil, fmt.Errorf("repair: %w", err)
			}
			continue
		}
		todo = withoutCode(todo, ChunkBelowProfile) // not while anything else is wrong
		// A round that changed nothing will not do better next time.
		if len(todo) == 0 || round == maxRounds || same {
			vol.Close()
			break
		}
		err = repairRound(vol, todo, opt)
		if cerr := vol.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("repair: %w", err)
		}
	}
	left := map[problemID]bool{}
	for _, p := range last.Problems {
		left[p.id()] = true
	}
	for i := range all {
		all[i].Fixed = !left[all[i].id()]
	}
	last.Problems = all
	last.RestoredFrom = restored
	last.RebuiltTree, last.NodesLost = rebuilt, lost
	return last, nil
}

func withoutCode(ps []Problem, c Code) []Problem {
	out := ps[:0:0]
	for _, p := range ps {
		if p.Code != c {
			out = append(out, p)
		}
	}
	return out
}

func hasCode(ps []Problem, c Code) bool {
	for _, p := range ps {
		if p.Code == c {
			return true
		}
	}
	return false
}

// fixable returns the problems the mode repairs. Over incomplete trees
// only copies and superblocks are fixed: the other conclusions (an
// orphan, a dangling entry, a count) may only reflect the unread part.
func (o Options) fixable(ps []Problem, incomplete bool) []Problem {
	if mappingBroken(ps) {
		return nil
	}
	var out []Problem
	for _, p := range ps {
		ci, _ := p.Code.Info()
		if !o.Mode.allows(ci.fix) {
			continue
		}
		if incomplete && p.Pass != PassSuper && p.Code != NodeCopyBad && p.Code != NodeCopiesDiffer && p.Code != DataCopyBad {
			continue
		}
		out = append(out, p)
	}
	return out
}

// mappingBroken reports problems of the chunk mapping or the device
// items: then a write through the mapping (a rewritten copy, a commit's
// new nodes) could land on another chunk's bytes, so nothing is repaired.
func mappingBroken(ps []Problem) bool {
	for _, p := range ps {
		switch {
		case p.Pass == PassChunk && p.Code != ChunkBelowProfile, p.Code == SysArrayMismatch, p.Code == DevSize, p.Code == DevNoItem, p.Code == DevCount, p.Code == DevUUID:
			return true
		case p.Code == ItemBad && p.Tree == format.ChunkTree.String():
			return true
		case p.Code == TreeRootBad && p.Tree == format.ChunkTree.String():
			return true
		}
	}
	return false
}

func (o Options) cancelled() error {
	if o.Context != nil && o.Context.Err() != nil {
		return ErrCancelled
	}
	return nil
}

// repairRound makes one round of fixes: copies first (so the
// transactions read good nodes), then one transaction for tree fixes.
func repairRound(vol *volume.Volume, todo []Problem, opt Options) error {
	var rest []Problem
	for _, p := range todo {
		switch p.Code {
		case NodeCopyBad:
			if err := fixNodeCopy(vol, p); err != nil {
				return err
			}
		case NodeCopiesDiffer:
			if err := fixCopiesDiffer(vol, p); err != nil {
				return err
			}
		case DataCopyBad:
			if err := fixDataCopy(vol, p); err != nil {
				return err
			}
		default:
			rest = append(rest, p)
		}
	}
	if err := vol.Flush(); err != nil {
		return err
	}
	if len(rest) == 0 {
		return nil
	}
	if err := opt.cancelled(); err != nil {
		return err
	}
	st, err := store.OpenForRepair(vol)
	if err != nil {
		// The tree fixes need an openable filesystem; the copies are done.
		return nil
	}
	return fixTrees(st, rest, opt)
}
