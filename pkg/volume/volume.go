// Package volume maps ddfs's logical address space onto the devices of a
// set: it finds and opens the devices, reads and writes superblocks, and
// turns logical reads and writes into stripe I/O on every copy.
package volume

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

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
}

// Volume is an opened device set and its chunk map.
type Volume struct {
	devs   map[uint64]*Dev
	Chunks ChunkMap
	// Super is the newest superblock of the set: the committed state.
	Super *format.Superblock
	// Dir is the folder of the first device, for resolving path hints.
	Dir      string
	writable bool
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
}

// ErrMissingDevice: a device of the set was not found.
var ErrMissingDevice = errors.New("missing device")

func (o Options) devOpts() device.OpenOptions {
	m := device.ReadOnly
	if o.Write {
		m = device.ReadWrite
	}
	return device.OpenOptions{Mode: m, Wait: o.Wait}
}

// New wraps already opened devices (mkfs, tests). Super may be nil until
// the first commit.
func New(devs []*Dev, super *format.Superblock, writable bool) *Volume {
	v := &Volume{devs: map[uint64]*Dev{}, Super: super, writable: writable}
	for _, d := range devs {
		v.AttachDevice(d)
	}
	if len(devs) > 0 {
		v.Dir = filepath.Dir(devs[0].Path)
	}
	return v
}

// Open opens the set that specs[0] belongs to. The other devices come from
// specs, opt.Extra, and (unless NoScan) regular files in specs[0]'s folder
// with the same filesystem UUID. The chunk map holds the bootstrap (system)
// chunks only; the caller loads the chunk tree and calls AddChunk.
func Open(specs []string, opt Options) (*Volume, error) {
	if len(specs) == 0 {
		return nil, errors.New("no device given")
	}
	v := &Volume{devs: map[uint64]*Dev{}, Dir: filepath.Dir(specs[0]), writable: opt.Write}
	ok := false
	defer func() {
		if !ok {
			v.Close()
		}
	}()
	var fsid [16]byte
	for i, spec := range append(append([]string{}, specs...), opt.Extra...) {
		d, err := openDev(spec, opt.devOpts())
		if err != nil {
			return nil, err
		}
		if i == 0 {
			fsid = d.Super.FSID
		} else if d.Super.FSID != fsid {
			d.Dev.Close()
			return nil, fmt.Errorf("%s: belongs to another filesystem (%x, not %x)", spec, d.Super.FSID, fsid)
		}
		if err := v.add(d); err != nil {
			return nil, err
		}
	}
	if !opt.NoScan && uint64(len(v.devs)) < v.newest().NumDevices {
		v.scanDir(v.Dir, fsid, opt)
	}
	v.Super = v.newest()
	for _, sc := range v.Super.SysChunks {
		if err := v.Chunks.Add(sc.Logical, sc.Chunk); err != nil {
			return nil, err
		}
	}
	ok = true
	return v, nil
}

func (v *Volume) newest() *format.Superblock {
	var best *format.Superblock
	for _, d := range v.devs {
		if best == nil || d.Super.Generation > best.Generation {
			best = d.Super
		}
	}
	return best
}

func (v *Volume) add(d *Dev) error {
	if old, dup := v.devs[d.ID]; dup {
		same := old.Path == d.Path
		d.Dev.Close()
		if same {
			return nil
		}
		return fmt.Errorf("%s and %s both claim to be device %d of the set", old.Path, d.Path, d.ID)
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
	sb, err := BestSuper(ReadSuperCopies(dev))
	if err != nil {
		dev.Close()
		return nil, fmt.Errorf("%s: %w", spec, err)
	}
	return &Dev{ID: sb.DevID, UUID: sb.DevUUID, Path: spec, Dev: dev, Super: sb}, nil
}

// scanDir looks for the other devices of the set among regular files of
// dir. It reads one superblock per candidate before locking anything.
func (v *Volume) scanDir(dir string, fsid [16]byte, opt Options) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	buf := make([]byte, format.SuperblockSize)
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if v.hasPath(p) || !peekFSID(p, fsid, buf) {
			continue
		}
		if d, err := openDev(p, opt.devOpts()); err == nil {
			if d.Super.FSID != fsid || v.add(d) != nil {
				d.Dev.Close()
			}
		}
	}
}

func (v *Volume) hasPath(p string) bool {
	for _, d := range v.devs {
		if a, b := filepath.Clean(d.Path), filepath.Clean(p); a == b {
			return true
		}
	}
	return false
}

// peekFSID reports whether the primary superblock of file p names fsid.
func peekFSID(p string, fsid [16]byte, buf []byte) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	if _, err := f.ReadAt(buf, int64(format.SuperblockOffsets[0])); err != nil {
		return false
	}
	sb, err := format.UnmarshalSuperblock(buf)
	return err == nil && bytes.Equal(sb.FSID[:], fsid[:])
}

// AddDevice opens spec as a member of this set (path hints); it must carry
// the set's fsid and the expected devid.
func (v *Volume) AddDevice(spec string, devid uint64, opt Options) error {
	d, err := openDev(spec, opt.devOpts())
	if err != nil {
		return err
	}
	if d.Super.FSID != v.Super.FSID || d.ID != devid {
		d.Dev.Close()
		return fmt.Errorf("%s: not device %d of this filesystem", spec, devid)
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
// replay): each must carry a valid superblock of the same filesystem.
func FromDevices(devs []device.Device, write bool) (*Volume, error) {
	v := &Volume{devs: map[uint64]*Dev{}, writable: write}
	for _, raw := range devs {
		dev := device.NewCounting(raw)
		sb, err := BestSuper(ReadSuperCopies(dev))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", dev.Name(), err)
		}
		if len(v.devs) > 0 && sb.FSID != v.newest().FSID {
			return nil, fmt.Errorf("%s: belongs to another filesystem", dev.Name())
		}
		if err := v.add(&Dev{ID: sb.DevID, UUID: sb.DevUUID, Path: dev.Name(), Dev: dev, Super: sb}); err != nil {
			return nil, err
		}
	}
	if len(v.devs) == 0 {
		return nil, errors.New("no device given")
	}
	v.Super = v.newest()
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
