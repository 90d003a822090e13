// Package volume maps ddfs's logical address space onto the devices of a
// set: it finds and opens the devices, reads and writes superblocks, and
// turns logical reads and writes into stripe I/O on every copy.
package volume

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/google/uuid"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
)

// Dev is one opened device of the set.
type Dev struct {
	ID   uint64
	UUID [16]byte
	Path string
	Dev  device.Device
	// Super is the newest valid superblock copy found on this device.
	Super *format.Superblock
	// Copies are all superblock copies read from it (the cross-check).
	Copies []SuperCopy
}

// Volume is an opened device set and its chunk map.
type Volume struct {
	devs   map[uint64]*Dev
	Chunks ChunkMap
	// Super is the newest superblock of the set: the committed state.
	Super *format.Superblock
	// Dir is the folder of the first device, for resolving path hints;
	// "" when that is a network device, which has no folder to scan.
	Dir      string
	writable bool
	// superFrom is the path of the device Super was read from.
	superFrom string
	findings  []SuperFinding
	// unusable holds why members found by the folder scan could not be
	// opened (degraded.go).
	unusable map[uint64]error
	// named counts the devices the caller named (operands, --device).
	named int
	// unread are the files the folder scan could not read.
	unread []string
	// rows serialises parity read-modify-writes (parity.go).
	rows rowLocks
}

// Options control how a set is opened.
type Options struct {
	Write bool     // take exclusive locks and allow writes
	Wait  bool     // wait for locks instead of failing with device.ErrBusy
	Extra []string // more device specs to consider (--device)
	// NoScan disables looking for the other devices in the first device's folder.
	NoScan bool
	// Degraded opens a set with members missing or unusable (--degraded):
	// reads use the surviving copies, writes go to chunks on the present
	// devices only.
	Degraded bool
	// Beside: a read-only open of a set a writer holds reads its last
	// commit instead of failing or waiting (beside.go).
	Beside bool
}

// ErrMissingDevice: a device of the set was not found.
var ErrMissingDevice = errors.New("missing device")

func (o Options) devOpts() device.OpenOptions {
	m := device.ReadOnly
	if o.Write {
		m = device.ReadWrite
	}
	return device.OpenOptions{Mode: m, Wait: o.Wait, Beside: o.Beside && !o.Write}
}

// New wraps already opened devices (mkfs, tests). Super may be nil until
// the first commit.
func New(devs []*Dev, super *format.Superblock, writable bool) *Volume {
	v := &Volume{devs: map[uint64]*Dev{}, Super: super, writable: writable}
	for _, d := range devs {
		v.AttachDevice(d)
	}
	if len(devs) > 0 {
		v.Dir = folderOf(devs[0].Path)
	}
	return v
}

// Open opens the set that specs[0] belongs to. The other devices come from
// specs, opt.Extra, and (unless NoScan, and only while devices are missing)
// regular files in specs[0]'s folder that belong to the same set. It refuses
// an ambiguous or diverged set (FORMAT.md §3.7). The chunk map holds the
// bootstrap (system) chunks only; the caller loads the chunk tree and calls
// AddChunk.
func Open(specs []string, opt Options) (*Volume, error) {
	for try := 1; ; try++ {
		v, err := openOnce(specs, opt)
		if err != nil || !v.Beside() {
			return v, err
		}
		if err = v.markBeside(); err == nil {
			return v, nil
		}
		v.Close()
		if !errors.Is(err, errMoved) || try == besideTries {
			return nil, fmt.Errorf("%s: open beside its writer: %w", specs[0], err)
		}
	}
}

func openOnce(specs []string, opt Options) (*Volume, error) {
	if len(specs) == 0 {
		return nil, errors.New("no device given")
	}
	v := &Volume{devs: map[uint64]*Dev{}, Dir: folderOf(specs[0]), writable: opt.Write}
	ok := false
	defer func() {
		if !ok {
			v.Close()
		}
	}()
	var first *format.Superblock
	for _, spec := range append(append([]string{}, specs...), opt.Extra...) {
		if v.hasFile(spec) {
			continue // the same file named twice (IMAGE and --device IMAGE)
		}
		d, err := openDev(spec, opt.devOpts())
		if err != nil {
			return nil, err
		}
		if first == nil {
			first = d.Super
		} else if !SameSet(first, d.Super) {
			d.Dev.Close()
			return nil, fmt.Errorf("%s: belongs to another filesystem (%s, not %s)", spec, uuid.UUID(d.Super.FSID), uuid.UUID(first.FSID))
		}
		if err := v.add(d); err != nil {
			return nil, err
		}
	}
	v.named = len(v.devs)
	if !opt.NoScan && v.Dir != "" && uint64(len(v.devs)) < maxNumDevices(v) {
		if err := v.scanDir(v.Dir, first, opt); err != nil {
			return nil, err
		}
	}
	if err := v.settle(); err != nil {
		return nil, err
	}
	for _, sc := range v.Super.SysChunks {
		if err := v.Chunks.Add(sc.Logical, sc.Chunk); err != nil {
			return nil, err
		}
	}
	ok = true
	return v, nil
}

// folderOf is the folder a device spec's file lives in, "" for a
// network device.
func folderOf(spec string) string {
	if device.IsRemote(spec) {
		return ""
	}
	return filepath.Dir(spec)
}

// HintPath resolves a member's recorded path hint against the set's
// folder. It declines (false) a network spec: an image is hostile input
// and must not make a tool connect to an address it recorded (nor guess
// that the server is still there), so network members are named with
// --device. It also declines a relative hint when the set was opened from
// a network device, which has no folder to anchor it.
//
// With as many devices named as the set has, no hint is used at all
// (FORMAT.md §3.7 step 1): the caller chose every member, and a copied
// set spread over folders carries hints naming its original.
func (v *Volume) HintPath(hint string) (string, bool) {
	switch {
	case hint == "" || device.IsRemote(hint):
		return "", false
	case v.Super != nil && v.named > 0 && uint64(v.named) >= v.Super.NumDevices:
		return "", false
	case filepath.IsAbs(hint):
		return hint, true
	case v.Dir == "":
		return "", false
	}
	return filepath.Join(v.Dir, hint), true
}

// maxNumDevices is the largest device count a given member claims: the
// scan runs while any member may be missing.
func maxNumDevices(v *Volume) uint64 {
	var n uint64
	for _, d := range v.devs {
		n = max(n, d.Super.NumDevices)
	}
	return n
}

// add makes d a member. The same file given twice is one member; two
// files claiming one devid are refused, never chosen between.
func (v *Volume) add(d *Dev) error {
	if old, dup := v.devs[d.ID]; dup {
		same := filepath.Clean(old.Path) == filepath.Clean(d.Path) || v.hasFile(d.Path)
		d.Dev.Close()
		if same {
			return nil
		}
		return &AmbiguousError{FSID: old.Super.FSID, DevID: d.ID, Paths: []string{old.Path, d.Path}}
	}
	v.devs[d.ID] = d
	return nil
}

func openDev(spec string, o device.OpenOptions) (*Dev, error) {
	raw, err := device.Open(spec, o)
	if err != nil {
		return nil, err
	}
	dev := device.NewCounting(raw)
	copies := ReadSuperCopies(dev)
	sb, err := BestSuper(copies)
	if err != nil {
		dev.Close()
		return nil, fmt.Errorf("%s: %w", spec, err)
	}
	return &Dev{ID: sb.DevID, UUID: sb.DevUUID, Path: spec, Dev: dev, Super: sb, Copies: copies}, nil
}

// AddDevice opens spec as a member of this set (path hints); it must carry
// the set's fsid and the expected devid, and pass the cross-check (§3.7).
func (v *Volume) AddDevice(spec string, devid uint64, opt Options) error {
	if v.hasFile(spec) {
		// A stale hint (files renamed since) is no claim: not found.
		return fmt.Errorf("%s: already open as another device of the set", spec)
	}
	d, err := openDev(spec, opt.devOpts())
	if err != nil {
		return err
	}
	if !SameSet(v.Super, d.Super) || d.ID != devid {
		d.Dev.Close()
		return fmt.Errorf("%s: not device %d of this filesystem", spec, devid)
	}
	if err := v.verifyMember(d); err != nil {
		d.Dev.Close()
		return err
	}
	return v.add(d)
}

// AttachDevice adds an opened device (mkfs, device add).
// Every device is counted (--stats), however it was opened.
func (v *Volume) AttachDevice(d *Dev) {
	if _, ok := d.Dev.(*device.Counting); !ok {
		d.Dev = device.NewCounting(d.Dev)
	}
	v.devs[d.ID] = d
}

// AddChunk makes a chunk's logical range addressable.
func (v *Volume) AddChunk(logical uint64, c *format.ChunkItem) error { return v.Chunks.Add(logical, c) }

// Device returns device devid, if open.
func (v *Volume) Device(devid uint64) (*Dev, bool) { d, ok := v.devs[devid]; return d, ok }

// Devices returns the open devices sorted by devid.
func (v *Volume) Devices() []*Dev {
	out := make([]*Dev, 0, len(v.devs))
	for _, d := range v.devs {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Writable reports whether the set was opened for writing.
func (v *Volume) Writable() bool { return v.writable }

// Flush flushes every device.
func (v *Volume) Flush() error {
	for _, d := range v.Devices() {
		if err := d.Dev.Flush(); err != nil {
			return fmt.Errorf("flush %s: %w", d.Path, err)
		}
	}
	return nil
}

// Close closes every device.
func (v *Volume) Close() error {
	var first error
	for id, d := range v.devs {
		if err := d.Dev.Close(); err != nil && first == nil {
			first = err
		}
		delete(v.devs, id)
	}
	return first
}

// FromDevices builds a volume from already opened devices (tests, crash
// replay): each must carry a valid superblock of the same set, and the set
// passes the cross-check of FORMAT.md §3.7.
func FromDevices(devs []device.Device, write bool) (*Volume, error) {
	v := &Volume{devs: map[uint64]*Dev{}, writable: write}
	var first *format.Superblock
	for _, raw := range devs {
		dev := device.NewCounting(raw)
		copies := ReadSuperCopies(dev)
		sb, err := BestSuper(copies)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dev.Name(), err)
		}
		if first == nil {
			first = sb
		} else if !SameSet(first, sb) {
			return nil, fmt.Errorf("%s: belongs to another filesystem", dev.Name())
		}
		if err := v.add(&Dev{ID: sb.DevID, UUID: sb.DevUUID, Path: dev.Name(), Dev: dev, Super: sb, Copies: copies}); err != nil {
			return nil, err
		}
	}
	if err := v.settle(); err != nil {
		return nil, err
	}
	for _, sc := range v.Super.SysChunks {
		if err := v.Chunks.Add(sc.Logical, sc.Chunk); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// Stats returns the I/O accounting of the device (zero if not counted).
func (d *Dev) Stats() device.Stats {
	if c, ok := d.Dev.(*device.Counting); ok {
		return c.Stats()
	}
	return device.Stats{}
}
