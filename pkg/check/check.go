// Package check is fsck as a library: it reads every superblock copy,
// device item, chunk and every copy of every tree node without trusting
// any of them, and returns all problems it finds with their location.
// It never needs the filesystem to open cleanly.
package check

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/uuid"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/inspect"
	"github.com/ddfs/ddfs/pkg/volume"
)

// Problem is one inconsistency, located as precisely as it can be.
type Problem struct {
	Kind    string `json:"kind"` // superblock, device, chunk, node, extent, block-group, fs, data
	Tree    string `json:"tree,omitempty"`
	Logical uint64 `json:"logical,omitempty"`
	DevID   uint64 `json:"devid,omitempty"`
	Device  string `json:"device,omitempty"`
	Offset  uint64 `json:"offset,omitempty"` // physical byte offset on Device
	Copy    int    `json:"copy,omitempty"`   // 1-based copy number, 0 = not copy-specific
	Message string `json:"message"`
	// Generation is, for a superblock copy of another generation than the
	// set's, the generation it holds (0 otherwise).
	Generation uint64 `json:"generation,omitempty"`
	// Warning marks what a crash or failed commit leaves behind and the
	// next commit repairs (a superblock copy that lags or is torn while
	// the device has a current one); it does not make the check fail.
	Warning bool `json:"warning,omitempty"`
}

// LagsOneGeneration reports whether p is the trace a crash in the middle of
// a commit's superblock writes leaves: a warning about a valid superblock
// copy one generation behind the set's generation setGen. Crash tests
// accept this problem and no other.
func LagsOneGeneration(p Problem, setGen uint64) bool {
	return p.Kind == "superblock" && p.Warning && p.Generation != 0 && p.Generation+1 == setGen
}

func (p Problem) String() string {
	s := p.Kind
	if p.Warning {
		s = "warning: " + s
	}
	if p.Tree != "" {
		s += " " + p.Tree + " tree"
	}
	if p.Logical != 0 {
		s += fmt.Sprintf(" logical %d", p.Logical)
	}
	if p.Device != "" {
		s += fmt.Sprintf(" on %s (devid %d)", p.Device, p.DevID)
		if p.Kind == "node" || p.Kind == "superblock" || p.Kind == "chunk" || p.Kind == "data" {
			s += fmt.Sprintf(" offset %d", p.Offset)
		}
	}
	if p.Copy > 0 {
		s += fmt.Sprintf(" copy %d", p.Copy)
	}
	return s + ": " + p.Message
}

// Report is the outcome of a check.
type Report struct {
	UUID       string `json:"uuid"`
	Generation uint64 `json:"generation"`
	Devices    int    `json:"devices"`
	Chunks     int    `json:"chunks"`
	Nodes      int    `json:"nodes"`
	NodeCopies int    `json:"node_copies"`
	Items      int    `json:"items"`
	// IO is the I/O the check did, per device.
	IO []inspect.DeviceIO `json:"io,omitempty"`
	// TreeNodes counts the nodes of each tree.
	TreeNodes map[string]int `json:"tree_nodes"`
	Problems  []Problem      `json:"problems"`
}

// Clean reports whether no problem was found.
func (r *Report) Clean() bool { return r.Errors() == 0 }

// Errors counts the problems that are not warnings.
func (r *Report) Errors() int {
	n := 0
	for _, p := range r.Problems {
		if !p.Warning {
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
}

type checker struct {
	vol  *volume.Volume
	opt  Options
	sb   *format.Superblock
	rep  *Report
	seen map[uint64]format.TreeID
	// gathered from the trees
	devItems  map[uint64]*format.DevItem
	metaItems map[uint64]format.Key
	bgItems   map[uint64]*format.BlockGroupItem
	extents   []format.Key // data extent keys, in order
	fs        fsState      // the filesystem pass (fs.go)
	dedupe    dedupeState  // the dedupe index pass (dedupe.go)
}

// Check checks the filesystem that specs belong to. The error is for
// operational failures (nothing to check); damage is in the report.
func Check(specs []string, opt Options) (*Report, error) {
	vol, err := volume.Open(specs, volume.Options{Extra: opt.Extra, Wait: opt.Wait})
	if err != nil {
		return nil, err
	}
	defer vol.Close()
	return CheckVolume(vol, opt)
}

// CheckVolume checks an opened volume (tests, crash replay); opts, if
// given, are those of Check (only CheckData matters here).
func CheckVolume(vol *volume.Volume, opts ...Options) (*Report, error) {
	c := &checker{
		vol: vol, sb: vol.Super, rep: &Report{Problems: []Problem{}}, seen: map[uint64]format.TreeID{},
		devItems: map[uint64]*format.DevItem{}, metaItems: map[uint64]format.Key{}, bgItems: map[uint64]*format.BlockGroupItem{},
	}
	if len(opts) > 0 {
		c.opt = opts[0]
	}
	c.rep.UUID = uuid.UUID(c.sb.FSID).String()
	c.rep.Generation = c.sb.Generation
	c.checkSupers()
	c.walk(format.ChunkTree)
	c.checkDevices()
	if err := c.missingDevices(); err != nil {
		return nil, err
	}
	c.checkChunks()
	for id := format.TreeID(2); id <= format.NumTrees; id++ {
		c.walk(id)
	}
	c.checkExtents()
	c.checkFS()
	c.checkDedupe()
	c.rep.Devices = len(vol.Devices())
	items := make([]*format.DevItem, 0, len(c.devItems))
	for _, id := range sortedIDs(c.devItems) {
		items = append(items, c.devItems[id])
	}
	c.rep.IO = inspect.VolumeIO(vol, items)
	c.rep.Chunks = len(vol.Chunks.All())
	c.rep.Nodes = len(c.seen)
	c.rep.TreeNodes = map[string]int{}
	for _, id := range c.seen {
		c.rep.TreeNodes[id.String()]++
	}
	sort.SliceStable(c.rep.Problems, func(i, j int) bool { return kindOrder[c.rep.Problems[i].Kind] < kindOrder[c.rep.Problems[j].Kind] })
	return c.rep, nil
}

var kindOrder = map[string]int{"superblock": 0, "device": 1, "chunk": 2, "node": 3, "block-group": 4, "extent": 5, "fs": 6, "data": 7}

func (c *checker) add(p Problem) { c.rep.Problems = append(c.rep.Problems, p) }

func (c *checker) checkSupers() {
	for _, d := range c.vol.Devices() {
		copies := volume.ReadSuperCopies(d.Dev)
		current := false
		for _, sc := range copies {
			current = current || (sc.Err == nil && sc.SB.FSID == c.sb.FSID && sc.SB.DevID == d.ID && sc.SB.Generation == c.sb.Generation)
		}
		for _, sc := range copies {
			p := Problem{Kind: "superblock", DevID: d.ID, Device: d.Path, Offset: sc.Offset}
			switch {
			case sc.Err != nil:
				p.Message = sc.Err.Error()
			case sc.SB.FSID != c.sb.FSID || sc.SB.DevID != d.ID:
				p.Message = "copy belongs to another filesystem or device"
			case sc.SB.Generation != c.sb.Generation:
				p.Generation = sc.SB.Generation
				p.Message = fmt.Sprintf("generation %d, the set is at %d", sc.SB.Generation, c.sb.Generation)
			default:
				continue
			}
			// With a current copy on the device, the others are the trace of
			// an interrupted superblock write. So is a copy exactly one
			// generation behind on a device with none: a commit writes the
			// superblocks device by device after flushing every node, and a
			// crash in between leaves whole devices at the previous one.
			// Further behind, the device is stale.
			lagsOne := sc.Err == nil && sc.SB.FSID == c.sb.FSID && sc.SB.DevID == d.ID && sc.SB.Generation+1 == c.sb.Generation
			p.Warning = lagsOne || current && (sc.Err != nil || sc.SB.Generation < c.sb.Generation)
			c.add(p)
		}
	}
}

func (c *checker) checkDevices() {
	// Devices not found next to the first one may be named by path hints.
	for id, item := range c.devItems {
		if _, ok := c.vol.Device(id); !ok && item.Path != "" {
			hint := item.Path
			if !filepath.IsAbs(hint) {
				hint = filepath.Join(c.vol.Dir, hint)
			}
			_ = c.vol.AddDevice(hint, id, volume.Options{})
		}
	}
	if uint64(len(c.devItems)) != c.sb.NumDevices {
		c.add(Problem{Kind: "device", Message: fmt.Sprintf("superblock says %d devices, chunk tree has %d device items", c.sb.NumDevices, len(c.devItems))})
	}
	for _, d := range c.vol.Devices() {
		item, ok := c.devItems[d.ID]
		p := Problem{Kind: "device", DevID: d.ID, Device: d.Path}
		switch {
		case !ok:
			p.Message = "no device item in the chunk tree"
		case item.UUID != d.UUID:
			p.Message = fmt.Sprintf("device item uuid %x, superblock says %x", item.UUID, d.UUID)
		case item.TotalBytes > uint64(d.Dev.Size()):
			p.Message = fmt.Sprintf("device item says %d bytes, device has %d", item.TotalBytes, d.Dev.Size())
		default:
			continue
		}
		c.add(p)
	}
}

// missingDevices names devices with an item but no open device: a check
// of an incomplete set is an operational error, not damage.
func (c *checker) missingDevices() error {
	var missing []string
	for _, id := range sortedIDs(c.devItems) {
		if _, ok := c.vol.Device(id); !ok {
			missing = append(missing, fmt.Sprintf("device %d (%s)", id, c.devItems[id].Path))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("%s not found (give it with --device): %w", strings.Join(missing, ", "), volume.ErrMissingDevice)
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
			p := Problem{Kind: "chunk", Logical: ch.Logical, DevID: s.DevID, Offset: s.Offset}
			if d, ok := c.devItems[s.DevID]; !ok {
				p.Message = "stripe on a device with no device item"
				c.add(p)
				continue
			} else if end > d.TotalBytes {
				p.Message = fmt.Sprintf("stripe ends at %d, past the device's %d bytes", end, d.TotalBytes)
				c.add(p)
			}
			for _, off := range format.SuperblockOffsets {
				if s.Offset < off+format.SuperblockSize && off < end {
					p.Message = fmt.Sprintf("stripe covers the superblock at %d", off)
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
				c.add(Problem{Kind: "chunk", Logical: e.ChunkLogical, DevID: id, Offset: e.Physical, Message: fmt.Sprintf("stripe overlaps chunk %d", ext[i-1].ChunkLogical)})
			}
		}
		if d := c.devItems[id]; d.BytesUsed != sum {
			c.add(Problem{Kind: "device", DevID: id, Device: d.Path, Message: fmt.Sprintf("device item says %d bytes used, chunks use %d", d.BytesUsed, sum)})
		}
	}
	for _, sc := range c.sb.SysChunks {
		ch, ok := c.vol.Chunks.Lookup(sc.Logical)
		if !ok || ch.Logical != sc.Logical || ch.Length != sc.Chunk.Length {
			c.add(Problem{Kind: "chunk", Logical: sc.Logical, Message: "system chunk of the superblock is not in the chunk tree"})
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
