// Package trim discards the free space of an offline filesystem (the
// FITRIM of trimtool): unallocated device space and the free ranges inside
// chunks, mapped to every stripe copy, merged per device, and handed to
// the device as discards (hole punching on image files, BLKDISCARD on
// block devices). It changes no metadata.
package trim

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/alloc"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/inuse"
	"github.com/ddfs/ddfs/pkg/store"
)

// Options are fstrim's.
type Options struct {
	Offset, Length uint64 // physical window on each device (Length 0: to the end)
	Minimum        uint64 // skip free ranges shorter than this
	DryRun         bool
	// Total, when set, is told the bytes the run will discard before the
	// first discard; Progress each range's bytes once it is discarded.
	Total    func(uint64)
	Progress func(int64)
	// Context, when set, ends the run between two discards (SIGINT):
	// what is discarded stays so, the rest is left for the next run.
	Context context.Context
}

// DeviceResult is what was (or would be) discarded on one device.
type DeviceResult struct {
	DevID    uint64 `json:"devid"`
	Path     string `json:"path"`
	Bytes    uint64 `json:"bytes"`
	Discards uint64 `json:"discards"`
	Note     string `json:"note,omitempty"` // e.g. discard not supported
}

// Result is a run's outcome: what each device got, and where the
// allocation metadata and the trees disagreed (nothing there discarded).
type Result struct {
	Devices []DeviceResult
	// Disagree lists referenced ranges the extent tree calls free, nodes
	// that could not be read and references outside every chunk; when it
	// is not empty the run kept its hands off everything it could not
	// prove free (see Run) and the filesystem wants fsck.
	Disagree []string
	// Kept is the free space (logical bytes, per the extent tree) not
	// discarded because of the disagreement.
	Kept uint64
}

// ErrDisagree marks a run that found the allocation metadata and the
// trees in disagreement: it trimmed what both call free and left the
// rest (trimtool exits 4, "problems left; run fsck").
var ErrDisagree = errors.New("allocation metadata and trees disagree: space they dispute was not trimmed; run fsck.ddfs")

// maxListed bounds the disagreements a Result names.
const maxListed = 32

// Run discards the free space of every device of fs: unallocated device
// space and the free ranges inside chunks, each only where both the
// allocation metadata (chunk map, extent tree) and a walk of what every
// tree references (pkg/inuse) call it free. A range the extent tree
// calls free but a tree references is kept; a node that cannot be read
// keeps every chunk's free space (what it references is unknown), and a
// reference outside every chunk or a chunk map that the walk cannot
// vouch for keeps the unallocated space too. Disagreement returns the
// Result with an error matching ErrDisagree after the agreed trim.
// An Offset at or past the end of every device is EINVAL, as FITRIM's
// start past the filesystem's end.
func Run(fs *store.FS, o Options) (*Result, error) {
	var sizes []uint64
	for _, d := range fs.Vol.Devices() {
		sizes = append(sizes, uint64(max(d.Dev.Size(), 0)))
	}
	if err := checkOffset(sizes, o.Offset); err != nil {
		return nil, err
	}
	inChunks, err := chunkFree(fs)
	if err != nil {
		return nil, err
	}
	walk := inuse.Check(fs, inChunks)
	res := &Result{Disagree: disagreements(walk, fs)}
	holesOK := walk.Sure() && len(res.Disagree) == 0
	all := sum(inChunks)
	if walk.Sure() {
		inChunks = inuse.Subtract(inChunks, walk.Taken())
	} else {
		inChunks = nil
	}
	res.Kept = all - sum(inChunks)
	free := map[uint64][]alloc.Range{}
	if holesOK {
		// Unallocated device space: the holes between stripes.
		for _, ds := range fs.DeviceSpace() {
			free[ds.DevID] = append(free[ds.DevID], ds.Holes()...)
		}
	}
	// Free space inside chunks, on every copy.
	if err := onDevices(fs, inChunks, free); err != nil {
		return nil, err
	}
	// What each device will get, then the discards: the total is known
	// before the first one (a progress bar's ETA).
	todo := map[uint64][]alloc.Range{}
	var total uint64
	for _, d := range fs.Vol.Devices() {
		for _, r := range window(merge(free[d.ID]), o) {
			if r.Len >= max(o.Minimum, 1) {
				todo[d.ID] = append(todo[d.ID], r)
				total += r.Len
			}
		}
	}
	if o.Total != nil {
		o.Total(total)
	}
	var out []DeviceResult
	defer func() { res.Devices = out }()
	for _, d := range fs.Vol.Devices() {
		dr := DeviceResult{DevID: d.ID, Path: d.Path}
		for _, r := range todo[d.ID] {
			if err := o.stopped(); err != nil {
				out = append(out, dr)
				return res, err
			}
			dr.Bytes += r.Len
			dr.Discards++
			if o.DryRun {
				continue
			}
			if err := d.Dev.Discard(int64(r.Start), int64(r.Len)); err != nil {
				if errors.Is(err, device.ErrNotSupported) {
					dr.Note = "discard not supported; nothing done"
					dr.Bytes, dr.Discards = 0, 0
					break
				}
				return res, fmt.Errorf("%s: discard [%d,+%d): %w", d.Path, r.Start, r.Len, err)
			}
			if o.Progress != nil {
				o.Progress(int64(r.Len))
			}
		}
		out = append(out, dr)
	}
	if !o.DryRun {
		if err := fs.Vol.Flush(); err != nil {
			return res, err
		}
	}
	if len(res.Disagree) > 0 {
		return res, ErrDisagree
	}
	return res, nil
}

// onDevices adds the logical ranges rs, on every copy, to the physical
// ranges of each device.
func onDevices(fs *store.FS, rs []alloc.Range, free map[uint64][]alloc.Range) error {
	for _, r := range rs {
		c, ok := fs.Vol.Chunks.Lookup(r.Start)
		if !ok {
			return fmt.Errorf("free range %d+%d is in no chunk: %w", r.Start, r.Len, store.ErrCorrupt)
		}
		segs, err := c.DiscardMap(r.Start-c.Logical, r.Len)
		if err != nil {
			return err
		}
		for _, s := range segs {
			for _, t := range s.Targets {
				free[t.DevID] = append(free[t.DevID], alloc.Range{Start: t.Physical, Len: uint64(s.Len)})
			}
		}
	}
	return nil
}

// Finish ends a run that discarded everything free (no window, no
// minimum, not a dry run) and found no disagreement: the async policy's
// records of pending discards are done, and one commit drops them.
func Finish(fs *store.FS, o Options) error {
	if o.DryRun || o.Offset != 0 || o.Length != 0 || o.Minimum != 0 {
		return nil
	}
	return fs.ClearDiscardRecords()
}

// stopped is the context's error once it has ended: a discard is the
// run's safe point, it never leaves the filesystem inconsistent.
func (o Options) stopped() error {
	if o.Context == nil || o.Context.Err() == nil {
		return nil
	}
	return fmt.Errorf("interrupted: %w", o.Context.Err())
}

// merge sorts ranges and joins overlapping or adjacent ones, then cuts out
// the superblock copies, which are never discarded.
func merge(rs []alloc.Range) []alloc.Range {
	merged := inuse.Merge(rs)
	cut := make([]alloc.Range, 0, len(merged)+len(protected))
	for _, r := range merged {
		if !overlaps(r, protected) {
			cut = append(cut, r) // most of a million fragments: no copy, no allocation
			continue
		}
		cut = append(cut, exclude(r, protected)...)
	}
	return cut
}

// overlaps reports whether r meets any of holes.
func overlaps(r alloc.Range, holes []alloc.Range) bool {
	for _, h := range holes {
		if h.Start < r.End() && r.Start < h.End() {
			return true
		}
	}
	return false
}

// protected are the device areas trim never touches: the first MiB (boot
// area, primary superblock) and the superblock copies.
var protected = []alloc.Range{{Start: 0, Len: 1 << 20}}

func init() {
	for _, off := range format.SuperblockOffsets[1:] {
		protected = append(protected, alloc.Range{Start: off, Len: 64 << 10})
	}
}

func exclude(r alloc.Range, holes []alloc.Range) []alloc.Range {
	out := []alloc.Range{r}
	for _, h := range holes {
		var next []alloc.Range
		for _, x := range out {
			if h.End() <= x.Start || h.Start >= x.End() {
				next = append(next, x)
				continue
			}
			if x.Start < h.Start {
				next = append(next, alloc.Range{Start: x.Start, Len: h.Start - x.Start})
			}
			if x.End() > h.End() {
				next = append(next, alloc.Range{Start: h.End(), Len: x.End() - h.End()})
			}
		}
		out = next
	}
	return out
}

// window keeps the parts of the ranges inside [Offset, Offset+Length).
// checkOffset refuses an offset no device reaches (syscall.EINVAL).
func checkOffset(sizes []uint64, off uint64) error {
	var largest uint64
	for _, n := range sizes {
		largest = max(largest, n)
	}
	if off > 0 && off >= largest {
		return fmt.Errorf("offset %d is past the end of every device (the largest has %d bytes): %w", off, largest, syscall.EINVAL)
	}
	return nil
}

func window(rs []alloc.Range, o Options) []alloc.Range {
	if o.Offset == 0 && o.Length == 0 {
		return rs
	}
	end := ^uint64(0)
	if o.Length > 0 {
		end = o.Offset + o.Length
	}
	var out []alloc.Range
	for _, r := range rs {
		s, e := max(r.Start, o.Offset), min(r.End(), end)
		if s < e {
			out = append(out, alloc.Range{Start: s, Len: e - s})
		}
	}
	return out
}
