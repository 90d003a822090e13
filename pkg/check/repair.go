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
	"slices"
	"strings"

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
	r := &repairer{open: open, opt: opt, all: []Problem{}, index: map[problemID]int{}}
	for round := 0; ; round++ {
		done, err := r.round(round)
		if err != nil {
			return nil, err
		}
		if done {
			return r.report(), nil
		}
	}
}

// repairer is Repair's state across rounds.
type repairer struct {
	open  func() (*volume.Volume, error)
	opt   Options
	all   []Problem // every problem any round found, in order
	index map[problemID]int
	last  *Report
	// What the whole-set steps did (each at most once).
	restored                       uint64
	rebuilt                        string
	rebuildFailed                  string // why the fs tree's rebuild failed
	lost                           int
	sysRewritten, profilesRestored bool
	limited                        string // why fixes were left (Report.RepairLimited)
}

// round checks once and makes one step of fixes; done when nothing is
// left that a further round could fix.
func (r *repairer) round(round int) (done bool, err error) {
	if err := r.opt.cancelled(); err != nil {
		return false, err
	}
	vol, err := r.open()
	if err != nil {
		return false, err
	}
	rep, err := CheckVolume(vol, r.opt)
	if err != nil {
		vol.Close()
		return false, err
	}
	same := r.record(rep)
	shared := vol.Super.Incompat&format.IncompatSnapshots != 0
	vol, again, err := r.wholeSet(vol, rep, round)
	if again || err != nil {
		return false, err
	}
	todo := r.plan(rep, shared)
	// A round that changed nothing will not do better next time.
	if len(todo) == 0 || round == maxRounds || same {
		if round == maxRounds && !same && len(todo) > 0 && r.limited == "" {
			r.limited = fmt.Sprintf("fixes were left after %d rounds", round+1)
		}
		vol.Close()
		return true, nil
	}
	err = repairRound(vol, todo, r.opt)
	if cerr := vol.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, fmt.Errorf("repair: %w", err)
	}
	return false, nil
}

// plan is the fixes of one round, and sets r.limited to why fixable
// problems are left (what the last round leaves is what the report
// says). Chunks below the profiles are moved by a whole-set step of
// their own.
func (r *repairer) plan(rep *Report, shared bool) []Problem {
	ps := rep.Problems
	var why []string
	todo := r.opt.fixable(ps, len(rep.Incomplete) > 0 || shared)
	if shared && len(rep.Incomplete) == 0 {
		why = append(why, "the image has snapshots: their trees are read-only")
		if countsWrong(ps) {
			// A copy on write of a shared leaf reads its node and data
			// counts (a node whose refs say 1 is freed, not split): the
			// live tree's edits wait for a round with the counts right.
			why = append(why, "the live tree's fixes wait for its node and data counts to be right")
		} else {
			todo = append(todo, r.opt.liveFixes(ps)...)
		}
		todo = append(todo, r.opt.unsharedFixes(ps)...)
		todo = append(todo, r.opt.everyTreeFixes(ps)...)
	} else if shared {
		why = append(why, "the image has snapshots and a tree did not read whole: only copies, superblocks and counts are repaired")
	}
	todo = withoutCode(todo, ChunkBelowProfile)
	switch {
	case snapshotItemBad(ps):
		// The tree such an item may name (a DROP_ITEM keyed wrong that
		// the store still drops) is not counted at all: no count, and
		// nothing a count decides, is trusted.
		todo = slices.DeleteFunc(todo, func(p Problem) bool { return p.Pass != PassSuper && !isCopyFix(p.Code) })
		why = append(why, "an item of the snapshot tree is bad (ITEM_BAD): the tree it may name is not counted, so only copies and superblocks are repaired")
	case hasCode(ps, SnapshotBad):
		// An item the check rejects may still be opened: its tree counts
		// as in use, but the counts are not trusted to free or re-count.
		for _, c := range []Code{MetaLeaked, MetaRefs, ExtentRefs, ExtentUnreferenced, CsumOrphan} {
			todo = withoutCode(todo, c)
		}
		why = append(why, "a snapshot item the check rejects stands (SNAPSHOT_BAD): nothing is freed or re-counted")
	}
	r.limited = ""
	if len(withoutCode(r.opt.fixable(ps, false), ChunkBelowProfile)) > len(todo) && len(why) > 0 {
		r.limited = strings.Join(why, "; ")
	}
	if r.rebuildFailed != "" {
		r.limited = strings.TrimPrefix(r.limited+"; the fs tree's nodes that do not read are left (its rebuild failed: "+r.rebuildFailed+")", "; ")
	}
	return todo
}

// isCopyFix: a fix that rewrites a bad copy from a good one.
func isCopyFix(c Code) bool { return c == NodeCopyBad || c == NodeCopiesDiffer || c == DataCopyBad }

// record adds rep's new problems to all and reports whether rep found
// the same problems as the round before.
func (r *repairer) record(rep *Report) (same bool) {
	same = r.last != nil && len(r.last.Problems) == len(rep.Problems)
	r.last = rep
	for _, p := range rep.Problems {
		if _, ok := r.index[p.id()]; !ok {
			r.index[p.id()] = len(r.all)
			r.all = append(r.all, p)
			same = false
		}
	}
	return same
}

// wholeSet makes the first whole-set step that applies (system arrays,
// derived trees dropped, the fs tree rebuilt, backup roots, profiles);
// again: it did, vol is closed, check again. Backup roots that do not
// help leave vol reopened.
func (r *repairer) wholeSet(vol *volume.Volume, rep *Report, round int) (_ *volume.Volume, again bool, err error) {
	wrap := func(again bool, err error) (*volume.Volume, bool, error) {
		if err != nil {
			return nil, false, fmt.Errorf("repair: %w", err)
		}
		return vol, again, nil
	}
	// Shared nodes: the fs tree's rebuild gives the data extents of the
	// leaves it copies from shared nodes their new reference
	// (repair_rebuild_tree.go); the system arrays, the derived trees
	// (never shared), backup roots (only a set that checks clean) and
	// chunk moves (a move keeps every logical address, so every pointer
	// to a shared node or extent stays right) are as on any image.
	broken := mappingBroken(rep.Problems)
	if r.opt.Mode.allows(FixPreen) && !r.sysRewritten {
		// First: every other write goes through the mapping.
		if r.sysRewritten, err = fixSysArrays(vol, rep.Problems); r.sysRewritten || err != nil {
			vol.Close()
			return wrap(true, err)
		}
	}
	if r.opt.Mode == ModeRepair && !broken {
		if again, err := r.trees(vol, rep); again || err != nil {
			return wrap(again, err)
		}
	}
	// A backup root set is put in place only when it checks clean, data,
	// snapshot trees and their counts included: on any image.
	if r.opt.Mode == ModeRepair && r.restored == 0 && rootSetRootBad(rep.Problems) {
		if vol, again, err = r.backupRoots(vol); again || err != nil {
			return vol, again, err
		}
	}
	if r.opt.Mode == ModeRepair && !r.profilesRestored && round < maxRounds && onlyBelowProfile(rep.Problems) {
		return wrap(true, r.profiles(vol))
	}
	return vol, false, nil
}

// profiles moves the chunks below the set's profiles back (once), and
// closes vol.
func (r *repairer) profiles(vol *volume.Volume) error {
	r.profilesRestored = true
	err := restoreProfiles(vol, r.opt)
	if cerr := vol.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, store.ErrCannotRelocate) {
		err = nil // no room for the profile: the problem stays, reported
	}
	return err
}

// trees drops the derived trees that need it, else rebuilds the fs tree
// when its nodes are lost (once); again when it did (vol closed).
func (r *repairer) trees(vol *volume.Volume, rep *Report) (again bool, err error) {
	dropped, err := dropDerived(vol, rep)
	if err != nil || len(dropped) > 0 { // check without them; the next rounds rebuild them
		vol.Close()
		return true, err
	}
	if r.rebuilt != "" || r.rebuildFailed != "" || !rebuildsFS(rep) {
		return false, nil
	}
	r.lost, err = rebuildFS(vol, r.opt)
	vol.Close()
	if err != nil && !errors.Is(err, ErrCancelled) {
		// Nothing was written (one transaction): the other fixes go on,
		// and the report says why the tree stays as it is.
		r.rebuildFailed = err.Error()
		return true, nil
	}
	r.rebuilt = format.FSTree.String()
	return true, err // the next rounds make the rest whole
}

// rootSetRootBad: a tree of the root set has a root no copy of which
// reads (a snapshot's root that does not read is that snapshot's
// problem, fs@NAME: the backup roots, older, would lose what came after).
func rootSetRootBad(ps []Problem) bool {
	for _, p := range ps {
		if p.Code == TreeRootBad && !strings.Contains(p.Tree, "@") {
			return true
		}
	}
	return false
}

// backupRoots puts the newest backup root set that reads in place of
// roots that do not; again when it did (vol closed), else vol reopened.
func (r *repairer) backupRoots(vol *volume.Volume) (_ *volume.Volume, again bool, err error) {
	vol.Close()
	if r.restored, err = restoreBackupRoots(r.open, r.opt); err != nil {
		return nil, false, fmt.Errorf("repair: %w", err)
	}
	if r.restored != 0 {
		return nil, true, nil // check the restored roots
	}
	vol, err = r.open()
	return vol, false, err
}

// report is the last check's report listing every problem any round
// found, Fixed when the last check no longer finds it.
func (r *repairer) report() *Report {
	left := map[problemID]bool{}
	for _, p := range r.last.Problems {
		left[p.id()] = true
	}
	for i := range r.all {
		r.all[i].Fixed = !left[r.all[i].id()]
	}
	last := r.last
	last.Problems = r.all
	last.RestoredFrom = r.restored
	last.RepairLimited = r.limited
	last.RebuiltTree, last.NodesLost = r.rebuilt, r.lost
	return last
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
		// META_REFS and EXTENT_REFS count every tree's pointers,
		// snapshots' included (a shared leaf once): their fixes know
		// shared nodes (and they are withheld when a tree is incomplete).
		if incomplete && p.Pass != PassSuper && p.Code != NodeCopyBad && p.Code != NodeCopiesDiffer && p.Code != DataCopyBad && p.Code != MetaRefs && p.Code != ExtentRefs {
			continue
		}
		out = append(out, p)
	}
	return out
}

// unsharedFixes are ps's problems of what snapshots never share, fixed
// on an image with snapshots as on one without: a metadata item for a
// node no tree (snapshots' included) points at, the dedupe index (its
// own tree and the extents' index marks) and discard records.
func (o Options) unsharedFixes(ps []Problem) []Problem {
	return o.fixesWhere(ps, func(p Problem) bool { return p.Code == MetaLeaked || p.Pass == PassDedupe || p.Pass == PassDisc })
}

// countedOverEveryTree are the fixes whose values the check counts over
// every tree, snapshots' and trees being dropped included: a metadata
// item rebuilt with the pointers counted, a data extent item rebuilt from
// (or made to read as) the file extents of every tree, or freed when none
// points at it, block group and device usage summed from the items, a
// block group item with no chunk dropped, and checksums over space no
// extent of any tree holds (or that do not decode) dropped. None edits a
// tree a snapshot shares; each is what it is on an image without
// snapshots.
var countedOverEveryTree = map[Code]bool{MetaMissing: true, BGMissing: true, BGUsed: true, BGOrphan: true, DevBytesUsed: true,
	ExtentUnreferenced: true, FileExtentNoItem: true, ExtentReadAs: true, CsumOrphan: true, CsumItemBad: true}

// everyTreeFixes are ps's problems whose fixes are countedOverEveryTree,
// on an image with snapshots (over complete trees only: a tree not read
// would be counted as pointing at nothing).
func (o Options) everyTreeFixes(ps []Problem) []Problem {
	return o.fixesWhere(ps, func(p Problem) bool { return countedOverEveryTree[p.Code] })
}

// countsWrong reports a node count the check finds wrong, a data extent
// with no item (a copy on write of a leaf pointing at it fails: the
// round's transaction would be dropped), or a data count it fixes this
// round. A data count it cannot fix (a file extent not decoding) does not
// hold the live tree's fixes back: their copy on write raises each count
// of a shared leaf by one, and the file extents they drop never free an
// extent.
func countsWrong(ps []Problem) bool {
	for _, p := range ps {
		switch {
		case p.Code == MetaRefs || p.Code == MetaMissing || p.Code == FileExtentNoItem:
			return true
		case p.Code == ExtentRefs && p.fix != nil:
			return true
		}
	}
	return false
}

// snapshotItemBad reports an item of the snapshot tree the check
// rejects (ITEM_BAD).
func snapshotItemBad(ps []Problem) bool {
	for _, p := range ps {
		if p.Code == ItemBad && p.Tree == format.SnapshotTree.String() {
			return true
		}
	}
	return false
}

// fixesWhere are ps's problems that match and the mode may fix (none
// while the chunk mapping is broken).
func (o Options) fixesWhere(ps []Problem, match func(Problem) bool) []Problem {
	if mappingBroken(ps) {
		return nil
	}
	var out []Problem
	for _, p := range ps {
		if ci, _ := p.Code.Info(); match(p) && o.Mode.allows(ci.fix) {
			out = append(out, p)
		}
	}
	return out
}

// liveValues are the fixes that rewrite items of one inode or directory
// in place: a field of an inode item set to the value the check counted,
// an entry's type set to its inode's, a directory or xattr item moved
// under its name's hash. Through the transaction's copy-on-write they
// change the live tree's leaf only (a snapshot sharing it keeps its
// own), and they change no data extent, and no reference beyond what
// copy-on-write itself changes.
var liveValues = map[Code]bool{Nlink: true, DirNlink: true, DirSize: true, NBytes: true, SpecialSize: true, Rdev: true, InodeFlags: true,
	EntryType: true, DirItemHash: true, XattrHash: true}

// liveFixes are ps's problems of the live fs tree whose fixes edit its
// items only (liveValues, liveItems, the layout fixes, and the name
// fixes: entries, back references, inodes recreated or linked into
// lost+found), on an image with snapshots (whose own trees are
// read-only: left reported). No data extent is freed, no reference
// changes beyond copy-on-write's own and a dropped file extent's: a
// snapshot sharing a leaf keeps its copy.
func (o Options) liveFixes(ps []Problem) []Problem {
	return o.fixesWhere(ps, func(p Problem) bool {
		return p.Tree == format.FSTree.String() && (liveValues[p.Code] || liveItems[p.Code] || nameFixes[p.Code] != nil || isLayoutFix(p.Code))
	})
}

// liveItems are the other fixes that edit the live tree's items only
// (an undecodable item or a PROP_ITEM dropped, a size grown over its
// extents), as the layout fixes do: through copy-on-write, a snapshot
// sharing the leaf keeps its own. A file extent they drop gives back its
// reference but never its data extent (dropFileExtent): whether another
// tree still points at it is the next round's recount.
var liveItems = map[Code]bool{FSItemBad: true, PropItem: true, ExtentBeyondSize: true}

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
