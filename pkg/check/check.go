// Package check is fsck as a library: it reads every superblock copy,
// device item, chunk and every copy of every tree node without trusting
// any of them, and returns all problems it finds with their location.
// It never needs the filesystem to open cleanly.
package check

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/google/uuid"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// Problem is one inconsistency, located as precisely as it can be. The
// JSON keys are an interface (fsck.ddfs --json): keep them.
type Problem struct {
	Code    Code   `json:"code"`
	Pass    Pass   `json:"pass"` // filled in from Code by add
	Tree    string `json:"tree"`
	Logical uint64 `json:"logical"`
	DevID   uint64 `json:"devid"`
	Offset  uint64 `json:"offset"` // physical byte offset on DevID
	// Copy is the copy number as volume.ReadCopy and WriteCopy count
	// them (0 is the first); nil when the problem is not copy-specific.
	Copy *int `json:"copy"`
	// Path is the file that owns the bad inode or data block, when known.
	Path  string `json:"path"`
	Fixed bool   `json:"fixed"`
	// Ino is the inode the problem is about (0: none).
	Ino     uint64 `json:"ino,omitempty"`
	Device  string `json:"device,omitempty"`
	Message string `json:"message"`
	// Generation is, for a superblock copy of another generation than the
	// set's, the generation it holds (0 otherwise).
	Generation uint64 `json:"generation,omitempty"`
	// Warning marks what a crash or failed commit leaves behind and the
	// next commit repairs (a superblock copy that lags or is torn while
	// the device has a current one); it does not make the check fail.
	Warning bool `json:"warning,omitempty"`
	// fix is what a repair needs to know (repair.go).
	fix *fixData
}

// copyNum is a Problem.Copy value.
func copyNum(m int) *int { return &m }

// CopyIs reports whether the problem is about copy m.
func (p Problem) CopyIs(m int) bool { return p.Copy != nil && *p.Copy == m }

// LagsOneGeneration reports whether p is the trace a crash in the middle of
// a commit's superblock writes leaves: a warning about a valid superblock
// copy one generation behind the set's generation setGen. Crash tests
// accept this problem and no other.
func LagsOneGeneration(p Problem, setGen uint64) bool {
	return p.Code == SuperGeneration && p.Warning && p.Generation != 0 && p.Generation+1 == setGen
}

// CrashTrace reports whether p is a trace a power cut during a commit may
// leave and the next commit repairs: a superblock copy one generation
// behind (LagsOneGeneration) or a superblock copy whose write was torn
// (SUPER_BAD). Crash tests accept these and nothing else; the crash model
// tears the last write a device kept.
func CrashTrace(p Problem, setGen uint64) bool {
	return LagsOneGeneration(p, setGen) || p.Code == SuperBad
}

func (p Problem) String() string {
	s := string(p.Code)
	if p.Warning {
		s = "warning: " + s
	}
	if p.Tree != "" {
		s += " " + p.Tree + " tree"
	}
	if p.Ino != 0 {
		s += fmt.Sprintf(" inode %d", p.Ino)
	}
	if p.Path != "" {
		s += " " + p.Path
	}
	if p.Logical != 0 {
		s += fmt.Sprintf(" logical %d", p.Logical)
	}
	switch {
	case p.Device != "":
		s += fmt.Sprintf(" on %s (devid %d) offset %d", p.Device, p.DevID, p.Offset)
	case p.DevID != 0:
		s += fmt.Sprintf(" devid %d offset %d", p.DevID, p.Offset)
	}
	if p.Copy != nil {
		s += fmt.Sprintf(" copy %d", *p.Copy)
	}
	s += ": " + p.Message
	if p.Fixed {
		s += " (fixed)"
	}
	return s
}

// Report is the outcome of a check.
type Report struct {
	UUID       string `json:"uuid"`
	Generation uint64 `json:"generation"`
	Devices    int    `json:"num_devices"` // as dump-super; "devices" is a device list everywhere
	Chunks     int    `json:"chunks"`
	Nodes      int    `json:"nodes"`
	NodeCopies int    `json:"node_copies"`
	Items      int    `json:"items"`
	// IO is the I/O the check did, per device.
	IO []volume.DeviceIO `json:"io,omitempty"`
	// TreeNodes counts the nodes of each tree.
	TreeNodes map[string]int `json:"tree_nodes"`
	Problems  []Problem      `json:"problems"`
	// RestoredFrom is the generation of the backup root set a repair
	// put in place of roots that did not read (0: none); the
	// generations after it are lost.
	RestoredFrom uint64 `json:"restored_from,omitempty"`
	// RebuiltTree is the tree a repair rebuilt from the nodes that read
	// ("": none), without the NodesLost nodes no copy of which read: what
	// they held is lost (the problems of the later rounds name it).
	RebuiltTree string `json:"rebuilt_tree,omitempty"`
	NodesLost   int    `json:"nodes_lost,omitempty"`
	// Incomplete names the trees with a node no copy of which could be
	// read (or whose address holds no node), or that a lookup of a later
	// pass could not read through (a node a reader refuses:
	// checker.unread): the cross-checks over them are unreliable, so
	// repair then makes only the fixes that do not depend on them.
	Incomplete []string `json:"incomplete,omitempty"`
	// Withheld counts the cross-check conclusions not reported because
	// of an incomplete tree.
	Withheld int `json:"withheld,omitempty"`
	// CsumsRebuilt and CsumsRefused are what --rebuild-csums vouched for
	// and left.
	CsumsRebuilt []CsumRebuilt `json:"csums_rebuilt,omitempty"`
	CsumsRefused []CsumRefused `json:"csums_refused,omitempty"`
	// BesideWriter: a writer held the image; the check read its last
	// commit (Generation), which the writer keeps while the check runs.
	BesideWriter bool `json:"beside_writer,omitempty"`
	// Exposure is what losing each device would cost: the chunks whose
	// set profile means to survive it that it would lose (missing
	// members counted as lost already).
	Exposure []volume.Exposure `json:"exposure"`
	// Snapshots counts the snapshots checked (FORMAT.md §6.12). Their
	// trees are read-only and share nodes: a repair of such an image
	// leaves the snapshots' trees and the live tree's fixes that are not
	// aware of shared nodes (RepairLimited says which it makes).
	Snapshots int `json:"snapshots_checked,omitempty"`
	// RepairLimited says why a repair left fixable problems alone.
	RepairLimited string `json:"repair_limited,omitempty"`
	// FsyncLog is the pending fsync log (nil: none); a writable open
	// replays it.
	FsyncLog *FsyncLog `json:"fsync_log,omitempty"`
}

// FsyncLog summarizes a pending fsync log (FORMAT.md §3.10).
type FsyncLog struct {
	Blocks  uint64 `json:"blocks"`
	Records int    `json:"records"`
}

// crossChecks are the codes concluded from whole trees (counts, links,
// references, coverage): over a tree with an unreadable node they may
// only reflect the unread part, so they are withheld.
var crossChecks = map[Code]bool{
	MetaLeaked: true, MetaRefs: true, BGUsed: true, DevBytesUsed: true, DevCount: true, DevNoItem: true,
	ExtentUnreferenced: true, ExtentRefs: true, FileExtentNoItem: true, CsumOrphan: true, CsumMissing: true,
	Orphan: true, RootMissing: true, InodeMissing: true, Nlink: true, DirNlink: true, DirSize: true, NBytes: true,
	EntryDangling: true, EntryNoRef: true, IndexNoItem: true, RefNoDir: true, RefNoIndex: true, RefIndexOther: true,
	EntryMismatch: true, EntryType: true, DirLoop: true, DirNames: true, DedupeStale: true, DedupeEntries: true,
	Counters: true,
}

// CrossCheck reports whether c is concluded from whole trees (counts,
// references, coverage): over an incomplete tree it is withheld
// (Report.Withheld), so a repair that completes the tree may show it.
func (c Code) CrossCheck() bool { return crossChecks[c] }

// withhold drops the cross-check problems when a tree is incomplete.
func (c *checker) withhold() {
	if len(c.rep.Incomplete) == 0 {
		return
	}
	kept := c.rep.Problems[:0]
	for _, p := range c.rep.Problems {
		if crossChecks[p.Code] {
			c.rep.Withheld++
			continue
		}
		kept = append(kept, p)
	}
	c.rep.Problems = kept
}

func (r *Report) markIncomplete(tree string) {
	for _, t := range r.Incomplete {
		if t == tree {
			return
		}
	}
	r.Incomplete = append(r.Incomplete, tree)
}

// Clean reports whether no problem is left (none found, or all fixed).
func (r *Report) Clean() bool { return r.Errors() == 0 }

// Errors counts the problems left that are not warnings.
func (r *Report) Errors() int {
	n := 0
	for _, p := range r.Problems {
		if !p.Warning && !p.Fixed {
			n++
		}
	}
	return n
}

// Options control a check.
type Options struct {
	Extra []string // more device specs (--device)
	Wait  bool
	// CheckData reads every copy of every checksummed data sector and
	// verifies its checksum (--check-data).
	CheckData bool
	// Degraded checks what the present devices hold when members are
	// missing (--degraded); without it a missing member is the only
	// problem reported.
	Degraded bool
	// Mode is what may be changed (ModeCheck: nothing).
	Mode Mode
	// Context cancels the check or repair between steps (nil: never);
	// the error then matches ErrCancelled.
	Context context.Context
	// Progress, if set, is called as the check goes: the pass, what it
	// has done and its total (0: unknown), in bytes when bytes is set.
	Progress func(pass string, done, total uint64, bytes bool)
	// BatchNodes bounds the nodes one repair transaction dirties before
	// it commits and the next continues (0: maxDirtyNodes).
	BatchNodes int
	// RebuildCsums sums, before the check, the data extents files use
	// that have no checksum (--rebuild-csums; csums_rebuild.go).
	RebuildCsums bool
}

func (o Options) progress(pass string, done, total uint64, bytes bool) {
	if o.Progress != nil {
		o.Progress(pass, done, total, bytes)
	}
}

type checker struct {
	// logNew: the new data extents of the pending fsync log (checkLogSpace)
	logNew []format.LogData
	vol    *volume.Volume
	opt    Options
	sb     *format.Superblock
	rep    *Report
	seen   map[uint64]format.TreeID
	// gathered from the trees
	devItems  map[uint64]*format.DevItem
	metaItems map[uint64]format.Key
	bgItems   map[uint64]*format.BlockGroupItem
	bgKeys    map[uint64]format.Key // the keys of bgItems
	fs        fsState               // the filesystem pass (fs.go)
	dedupe    dedupeState           // the dedupe index pass (dedupe.go)
	reads     *readPool             // node reads to reuse (nodes.go)
	data      dataCheck             // --check-data's workers (data.go)
	counted   format.Counters
	// parkedLogical is the logical bytes of the live tree a receive
	// parked, which the counters sum while it waits (FORMAT.md §6.13).
	parkedLogical *uint64
	sysTree       map[uint64]*format.ChunkItem // the chunk tree's system chunks
	snaps         snapshotState                // the snapshot pass (snapshots.go)
	// view names the snapshot whose namespace this checker checks
	// (checkSnapshotNames; "": the live tree and everything else).
	view string
}

// Check checks the filesystem that specs belong to. The error is for
// operational failures (nothing to check); damage is in the report.
// With a Mode other than ModeCheck it repairs what the mode allows
// (Repair) and the report marks what was fixed.
func Check(specs []string, opt Options) (*Report, error) {
	vo := volume.Options{Extra: opt.Extra, Wait: opt.Wait, Write: opt.Mode != ModeCheck || opt.RebuildCsums}
	vo.Beside = !vo.Write && !opt.Wait // -n on a busy image checks its last commit
	open := func() (*volume.Volume, error) { return volume.Open(specs, vo) }
	var rebuilt []CsumRebuilt
	var refused []CsumRefused
	if opt.RebuildCsums {
		var err error
		if rebuilt, refused, err = RebuildCsums(open, opt); err != nil {
			return nil, err
		}
	}
	rep, err := checkOrRepair(open, opt)
	if err != nil {
		return nil, err
	}
	rep.CsumsRebuilt, rep.CsumsRefused = rebuilt, refused
	return rep, nil
}

func checkOrRepair(open func() (*volume.Volume, error), opt Options) (*Report, error) {
	if opt.Mode != ModeCheck {
		return Repair(open, opt)
	}
	vol, err := open()
	if err != nil {
		return nil, err
	}
	defer vol.Close()
	rep, err := CheckVolume(vol, opt)
	if rep != nil {
		rep.BesideWriter = vol.Beside()
	}
	return rep, err
}

// CheckVolume checks an opened volume (tests, crash replay); opts, if
// given, are those of Check (only CheckData matters here).
func CheckVolume(vol *volume.Volume, opts ...Options) (*Report, error) {
	var opt Options
	if len(opts) > 0 {
		opt = opts[0]
	}
	if err := openHinted(vol, opt); err != nil {
		return nil, err
	}
	c := newChecker(vol, opt)
	defer c.reads.arena.free() // after the walks: no node read is in use
	defer c.fs.free()
	defer c.data.stop() // first: its workers use the arena
	c.rep.UUID = uuid.UUID(c.sb.FSID).String()
	c.rep.Generation = c.sb.Generation
	c.walk(format.ChunkTree)
	c.dropRemoved()
	c.checkSupers()
	c.checkLog()
	c.checkSysArrays()
	c.checkDevices()
	if !c.missingDevices() || c.opt.Degraded {
		c.checkChunks()
		for id := format.TreeID(2); id <= format.NumTrees; id++ {
			c.walk(id)
		}
		c.visitSnapshots()
		if err := c.opt.cancelled(); err != nil {
			return nil, err
		}
		c.checkExtents()
		c.checkLogSpace()
		c.checkFS()
		c.checkSnapshotNames()
		for _, s := range c.snaps.list {
			if !s.countOnly {
				c.rep.Snapshots++
			}
		}
		c.checkDedupe()
		c.checkCounters()
		c.checkProfiles() // from the block group items the walks read
		c.withhold()
		c.setPaths()
		c.withhold() // setPaths may find the fs tree incomplete
	}
	c.rep.Devices = len(vol.Devices())
	items := make([]*format.DevItem, 0, len(c.devItems))
	for _, id := range sortedIDs(c.devItems) {
		items = append(items, c.devItems[id])
	}
	c.rep.IO = vol.IO(items)
	c.rep.Chunks = len(vol.Chunks.All())
	c.rep.Nodes = len(c.seen)
	c.rep.TreeNodes = map[string]int{}
	for _, id := range c.seen {
		c.rep.TreeNodes[id.String()]++
	}
	sort.SliceStable(c.rep.Problems, func(i, j int) bool {
		return passOrder[c.rep.Problems[i].Pass] < passOrder[c.rep.Problems[j].Pass]
	})
	return c.rep, nil
}

func newChecker(vol *volume.Volume, opt Options) *checker {
	return &checker{
		vol: vol, opt: opt, sb: vol.Super, rep: &Report{Problems: []Problem{}, Exposure: []volume.Exposure{}}, seen: map[uint64]format.TreeID{},
		devItems: map[uint64]*format.DevItem{}, metaItems: map[uint64]format.Key{}, bgItems: map[uint64]*format.BlockGroupItem{}, bgKeys: map[uint64]format.Key{},
		reads: &readPool{}, sysTree: map[uint64]*format.ChunkItem{},
	}
}

// openHinted opens, before the check proper, the members that only their
// path hints in the chunk tree find (a set spread over folders), opened
// as the set was (writable for a repair), so that every copy they hold is
// checked and can be repaired. An opened member whose own hint names
// another file claiming it is a copy of a member: refused as the tools
// refuse it, or the other hints would lead into the original set.
func openHinted(vol *volume.Volume, opt Options) error {
	c := newChecker(vol, Options{Context: opt.Context})
	c.walk(format.ChunkTree)
	c.reads.arena.free()
	c.fs.free()
	vo := volume.Options{Write: vol.Writable(), Wait: opt.Wait}
	for _, id := range sortedIDs(c.devItems) {
		if _, ok := vol.Device(id); ok {
			continue
		}
		hint, follow := vol.HintPath(c.devItems[id].Path)
		if !follow {
			continue
		}
		if err := vol.AddDevice(hint, id, vo); volume.Refused(err) {
			return err // found but refused: an operational error, not a missing device
		}
	}
	for _, id := range sortedIDs(c.devItems) {
		if err := vol.CheckOwnHint(id, c.devItems[id].Path); err != nil {
			return err
		}
	}
	return nil
}

// add records a problem; its pass comes from its code (every Code value
// comes from def, so it is registered).
func (c *checker) add(p Problem) {
	ci, _ := p.Code.Info()
	p.Pass = ci.Pass
	c.rep.Problems = append(c.rep.Problems, p)
}

// checkCounters compares the superblock counters, where the image keeps
// them, with the sums over the items the walk saw.
func (c *checker) checkCounters() {
	if c.parkedLogical != nil {
		c.counted.LogicalBytes = *c.parkedLogical
	}
	if c.sb.RoCompat&format.RoCompatCounters == 0 || c.sb.Counters == c.counted {
		return
	}
	c.add(Problem{Code: Counters, Message: fmt.Sprintf("superblock counters %s, the trees count %s", countersString(c.sb.Counters), countersString(c.counted))})
}

func countersString(k format.Counters) string {
	return fmt.Sprintf("logical %d, physical %d, dedupe saved %d, compress saved %d, index entries %d, index nodes %d",
		k.LogicalBytes, k.PhysicalBytes, k.DedupeSavedBytes, k.CompressSavedBytes, k.IndexEntries, k.IndexNodes)
}

// checkLog decodes the pending fsync log as the replay would.
func (c *checker) checkLog() {
	if c.sb.LogRoot == 0 {
		return
	}
	recs, err := store.LogRecords(c.vol, c.sb)
	if err != nil {
		c.add(Problem{Code: LogBad, Logical: c.sb.LogRoot, Message: err.Error()})
		return
	}
	c.rep.FsyncLog = &FsyncLog{Blocks: c.sb.LogSeq + 1, Records: len(recs)}
	for _, r := range recs {
		c.logNew = append(c.logNew, r.New...)
	}
}

func (c *checker) checkSupers() {
	for _, d := range c.vol.Devices() {
		copies := volume.ReadSuperCopies(d.Dev)
		current := false
		for _, sc := range copies {
			current = current || (sc.Err == nil && volume.SameSet(sc.SB, c.sb) && sc.SB.DevID == d.ID && sc.SB.Generation == c.sb.Generation)
		}
		for _, sc := range copies {
			p, ok := c.superCopyProblem(d, sc)
			if !ok {
				continue
			}
			// With a current copy on the device, the others are the trace of
			// an interrupted superblock write. So is a copy exactly one
			// generation behind on a device with none: a commit writes the
			// superblocks device by device after flushing every node, and a
			// crash in between leaves whole devices at the previous one.
			// Further behind, the device is stale. A bad primary is a
			// problem: it is the copy other tools read first.
			lagsOne := sc.Err == nil && volume.SameSet(sc.SB, c.sb) && sc.SB.DevID == d.ID && sc.SB.Generation+1 == c.sb.Generation
			lags := sc.Err == nil && sc.SB.Generation < c.sb.Generation
			p.Warning = lagsOne || current && (lags || (sc.Err != nil && sc.Offset != format.SuperblockOffsets[0]))
			c.add(p)
		}
	}
}

// superCopyProblem is the problem of superblock copy sc of device d, if
// it is not a current copy of the set's superblock.
func (c *checker) superCopyProblem(d *volume.Dev, sc volume.SuperCopy) (Problem, bool) {
	p := Problem{DevID: d.ID, Device: d.Path, Offset: sc.Offset}
	switch {
	case sc.Err != nil:
		p.Code, p.Message = SuperBad, sc.Err.Error()
	case !volume.SameSet(sc.SB, c.sb) || sc.SB.DevID != d.ID:
		p.Code, p.Message = SuperForeign, "copy belongs to another filesystem or device"
	case sc.SB.Generation != c.sb.Generation:
		p.Generation = sc.SB.Generation
		p.Code, p.Message = SuperGeneration, fmt.Sprintf("generation %d, the set is at %d", sc.SB.Generation, c.sb.Generation)
	case !volume.SameSetFields(sc.SB, c.sb):
		// FORMAT.md §3.7: copies of one generation are written from
		// one superblock; a difference is corruption, never a crash.
		p.Code, p.Message = SuperDiffers, fmt.Sprintf("differs from the set's superblock of generation %d (root set, system chunks, settings or sizes)", c.sb.Generation)
	default:
		return p, false
	}
	return p, true
}

// dropRemoved sets aside a device that the chunk tree does not list and
// whose superblocks are older than the set's: device remove commits
// without it, then wipes it, and a crash in between leaves it (FORMAT.md
// §3.7). The tools ignore it; fsck warns.
func (c *checker) dropRemoved() {
	for _, d := range c.vol.Devices() {
		if _, ok := c.devItems[d.ID]; ok || d.Super == nil || d.Super.Generation >= c.sb.Generation {
			continue
		}
		c.vol.DetachDevice(d.ID).Dev.Close()
		c.add(Problem{Code: DevRemoved, DevID: d.ID, Device: d.Path, Warning: true,
			Message: fmt.Sprintf("removed from the set at a generation after %d (no device item): ignored", d.Super.Generation)})
	}
}

func (c *checker) checkDevices() {
	if uint64(len(c.devItems)) != c.sb.NumDevices {
		c.add(Problem{Code: DevCount, Message: fmt.Sprintf("superblock says %d devices, chunk tree has %d device items", c.sb.NumDevices, len(c.devItems))})
	}
	for _, d := range c.vol.Devices() {
		item, ok := c.devItems[d.ID]
		p := Problem{DevID: d.ID, Device: d.Path}
		switch {
		case !ok:
			p.Code, p.Message = DevNoItem, "no device item in the chunk tree"
		case item.UUID != d.UUID:
			p.Code, p.Message = DevUUID, fmt.Sprintf("device item uuid %s, superblock says %s", uuid.UUID(item.UUID), uuid.UUID(d.UUID))
		case item.TotalBytes > uint64(d.Dev.Size()):
			p.Code, p.Message = DevSize, fmt.Sprintf("device item says %d bytes, device has %d", item.TotalBytes, d.Dev.Size())
		default:
			continue
		}
		c.add(p)
	}
}

// missingDevices reports each member with a device item but no open
// device (devid, uuid, last path) and whether there was one. The copies
// such a member holds are not checked; a degraded check goes on without
// them.
func (c *checker) missingDevices() bool {
	for _, id := range sortedIDs(c.devItems) {
		if _, ok := c.vol.Device(id); !ok {
			d := c.devItems[id]
			last := d.Path
			if last == "" {
				last = "none recorded: it was next to the first device"
			}
			msg := fmt.Sprintf("device missing (uuid %s, last path %s)", uuid.UUID(d.UUID), last)
			if u := c.vol.Unread(); len(u) > 0 {
				msg += ": could not read " + strings.Join(u, ", ")
			}
			if err := c.vol.Unusable(id); err != nil {
				msg = fmt.Sprintf("device found but cannot be used (uuid %s): %v", uuid.UUID(d.UUID), err)
			}
			c.add(Problem{Code: DevMissing, DevID: id, Device: d.Path, Message: msg})
		}
	}
	// Unread copies on missing members must not pass as checked.
	for _, p := range c.rep.Problems {
		if p.Code == DevMissing {
			return true
		}
	}
	return false
}

func sortedIDs(m map[uint64]*format.DevItem) []uint64 {
	ids := make([]uint64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func (c *checker) checkChunks() {
	for _, ch := range c.vol.Chunks.All() {
		for _, s := range ch.Stripes {
			end := s.Offset + ch.StripeLength()
			p := Problem{Logical: ch.Logical, DevID: s.DevID, Offset: s.Offset}
			if d, ok := c.devItems[s.DevID]; !ok {
				p.Code, p.Message = ChunkNoDevice, "stripe on a device with no device item"
				c.add(p)
				continue
			} else if end > d.TotalBytes {
				p.Code, p.Message = ChunkPastDevice, fmt.Sprintf("stripe ends at %d, past the device's %d bytes", end, d.TotalBytes)
				c.add(p)
			}
			for _, off := range format.SuperblockOffsets {
				if s.Offset < off+format.SuperblockSize && off < end {
					p.Code, p.Message = ChunkCoversSuper, fmt.Sprintf("stripe covers the superblock at %d", off)
					c.add(p)
				}
			}
		}
	}
	for id := range c.devItems {
		var sum uint64
		ext := c.vol.Chunks.DevExtents(id)
		for i, e := range ext {
			sum += e.Length
			if i > 0 && ext[i-1].Physical+ext[i-1].Length > e.Physical {
				c.add(Problem{Code: ChunkOverlap, Logical: e.ChunkLogical, DevID: id, Offset: e.Physical, Message: fmt.Sprintf("stripe overlaps chunk %d", ext[i-1].ChunkLogical)})
			}
		}
		if d := c.devItems[id]; d.BytesUsed != sum {
			c.add(Problem{Code: DevBytesUsed, DevID: id, Device: d.Path, fix: &fixData{want: sum}, Message: fmt.Sprintf("device item says %d bytes used, chunks use %d", d.BytesUsed, sum)})
		}
	}
	for _, sc := range c.sb.SysChunks {
		ch, ok := c.vol.Chunks.Lookup(sc.Logical)
		if !ok || ch.Logical != sc.Logical || ch.Length != sc.Chunk.Length {
			c.add(Problem{Code: ChunkSysMissing, Logical: sc.Logical, Message: "system chunk of the superblock is not in the chunk tree"})
		}
	}
}

// errString keeps problem messages to one line.
func errString(err error) string {
	var ce *format.CorruptError
	if errors.As(err, &ce) {
		return ce.Error()
	}
	return err.Error()
}
