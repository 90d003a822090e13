package mkfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/transfer"
)

// MinDeviceSize is the smallest device mkfs accepts: room for the
// reserved first MiB and one chunk of each type.
const MinDeviceSize = 48 << 20

// Options are everything mkfs.ddfs can be told.
type Options struct {
	Devices     []DeviceSpec
	ByteCount   uint64 // size of image files that do not exist yet
	Force       bool
	Label       string
	UUID        [16]byte // zero: random
	Data        *format.Profile
	Metadata    *format.Profile
	SectorSize  uint32
	NodeSize    uint32
	Csum        format.CsumType
	AllocPolicy format.AllocPolicy
	// Time stamps the root directory and everything mkfs creates
	// (SOURCE_DATE_EPOCH for reproducible images); zero: now.
	Time time.Time
	// RootUID and RootGID own the root directory.
	RootUID, RootGID uint32
	// RootDir populates the filesystem from a host directory (as cp -a
	// DIR/. /), Tar from a tar stream; at most one of them.
	RootDir string
	Tar     io.Reader
	// ForceUID/ForceGID normalise every owner (--all-root sets both to 0).
	ForceUID, ForceGID *uint32
	// Progress is told the data bytes copied.
	Progress func(int64)
	// Shrink truncates image files to what the populated filesystem needs.
	Shrink bool
	// Settings: dedupe and compression.
	Settings format.Settings
	// NoDiscard keeps the devices' old blocks allocated (mkfs -K); by
	// default the whole device is discarded first, as mkfs.btrfs and
	// mke2fs do, so a reused image file gives its old blocks back.
	NoDiscard bool
	// Created, if set, is told each image file Make creates (the caller
	// removes them if it is interrupted, as Make does when it fails).
	Created func(path string)
}

// ErrExists: a device holds a filesystem and Force was not given.
var ErrExists = errors.New("refusing to overwrite it without -f")

// DefaultProfiles are mkfs.btrfs's: data single; metadata dup on one
// device, raid1 on more.
func DefaultProfiles(ndev int) (data, meta format.Profile) {
	if ndev > 1 {
		return format.ProfileSingle, format.ProfileRaid1
	}
	return format.ProfileSingle, format.ProfileDup
}

// Make creates the filesystem with an empty root directory and returns it
// open for writing.
func Make(o Options) (*fsys.FS, error) {
	if len(o.Devices) == 0 {
		return nil, errors.New("no device given")
	}
	if o.SectorSize == 0 {
		o.SectorSize = 4096
	}
	if o.NodeSize == 0 {
		o.NodeSize = 16384
	}
	if err := checkSizes(o.SectorSize, o.NodeSize); err != nil {
		return nil, err
	}
	data, meta := DefaultProfiles(len(o.Devices))
	if o.Data != nil {
		data = *o.Data
	}
	if o.Metadata != nil {
		meta = *o.Metadata
	}
	for _, p := range []format.Profile{data, meta} {
		pi, _ := p.Info()
		if len(o.Devices) < pi.MinDevices {
			return nil, fmt.Errorf("profile %v needs at least %d devices, %d given", p, pi.MinDevices, len(o.Devices))
		}
	}
	if len(o.Label) >= format.LabelSize {
		return nil, fmt.Errorf("label is %d bytes, at most %d", len(o.Label), format.LabelSize-1)
	}
	if o.UUID == ([16]byte{}) {
		o.UUID = uuid.New()
	}
	seen := map[string]bool{}
	for _, s := range o.Devices {
		abs, _ := filepath.Abs(s.Path)
		if seen[abs] {
			return nil, fmt.Errorf("%s: given twice", s.Path)
		}
		seen[abs] = true
	}

	var opened []device.Device
	var created []string
	ok := false
	defer func() {
		if ok {
			return
		}
		for _, d := range opened {
			d.Close()
		}
		for _, p := range created {
			os.Remove(p)
		}
	}()
	p := store.CreateParams{
		FSID: o.UUID, Label: o.Label, Csum: o.Csum, NodeSize: o.NodeSize, SectorSize: o.SectorSize,
		Data: data, Metadata: meta, AllocPolicy: o.AllocPolicy, Compact: o.Shrink, Settings: o.Settings,
	}
	baseDir := filepath.Dir(o.Devices[0].Path)
	for _, s := range o.Devices {
		dev, isNew, err := openTarget(s.Path, o.ByteCount)
		if err != nil {
			return nil, err
		}
		opened = append(opened, dev)
		if isNew {
			created = append(created, s.Path)
			if o.Created != nil {
				o.Created(s.Path)
			}
		} else if err := checkExisting(dev, s.Path, o.Force); err != nil {
			return nil, err
		}
		if dev.Size() < MinDeviceSize {
			return nil, fmt.Errorf("%s: %d bytes is too small (at least %d MiB)", s.Path, dev.Size(), MinDeviceSize>>20)
		}
		if !o.NoDiscard && !isNew {
			// Advisory, as in mkfs.btrfs: a device that cannot discard
			// (or an error doing it) leaves the old blocks, nothing else.
			_ = dev.Discard(0, dev.Size())
		}
		p.Devices = append(p.Devices, newDevice(dev, s, baseDir))
	}
	hintEveryDevice(p.Devices)
	st, tx, err := store.CreateTx(p)
	if err != nil {
		return nil, err
	}
	now := time.Now
	if !o.Time.IsZero() {
		now = func() time.Time { return o.Time }
	}
	f, err := fsys.New(st, fsys.Options{Now: now})
	if err == nil {
		f.Adopt(tx)
		err = f.InitRoot(fsys.Attr{Mode: 0o755, UID: o.RootUID, GID: o.RootGID})
	}
	if err == nil {
		err = populate(f, o)
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil && o.Shrink {
		err = shrink(st, p.Devices)
	}
	if err != nil {
		f.Abort()
		st.Close()
		return nil, err
	}
	ok = true
	return f, nil
}

func checkSizes(sector, node uint32) error {
	pow2 := func(v uint32) bool { return v&(v-1) == 0 }
	if !pow2(sector) || sector < 4096 || sector > 64<<10 {
		return fmt.Errorf("sector size %d: want a power of two from 4096 to 65536", sector)
	}
	if !pow2(node) || node < sector || node > 64<<10 {
		return fmt.Errorf("node size %d: want a power of two from the sector size (%d) to 65536", node, sector)
	}
	return nil
}

// openTarget opens an existing device or creates a sparse image file.
func openTarget(path string, size uint64) (device.Device, bool, error) {
	if device.IsRemote(path) {
		// An export has the size its server gives it, like a block device.
		dev, err := device.Open(path, device.OpenOptions{Mode: device.ReadWrite})
		return dev, false, err
	}
	_, statErr := os.Stat(path)
	if _, _, part := device.PartitionOf(path); errors.Is(statErr, os.ErrNotExist) && !part {
		if size == 0 {
			return nil, false, fmt.Errorf("%s: does not exist (give -b SIZE to create an image file)", path)
		}
		dev, err := device.Open(path, device.OpenOptions{Mode: device.ReadWrite, Create: true, CreateSize: int64(size)})
		return dev, true, err
	}
	if statErr == nil && size > 0 {
		if fi, _ := os.Stat(path); fi.Mode().IsRegular() && uint64(fi.Size()) < size {
			// Grow an existing image file (sparse), as truncate -s would.
			if err := os.Truncate(path, int64(size)); err != nil {
				return nil, false, fmt.Errorf("%s: %w", path, err)
			}
		}
	}
	dev, err := device.Open(path, device.OpenOptions{Mode: device.ReadWrite})
	return dev, false, err
}

// checkExisting refuses to overwrite a known filesystem without force and
// wipes old signatures with it, so no tool mistakes the device later.
func checkExisting(dev device.Device, path string, force bool) error {
	found := Detect(dev, dev.Size())
	if found == "" {
		return nil
	}
	if !force {
		return fmt.Errorf("%s: contains %s %s: %w", path, article(found), found, ErrExists)
	}
	return wipeSignatures(dev)
}

func wipeSignatures(dev device.Device) error {
	for _, s := range signatures {
		if s.off+int64(len(s.magic)) <= dev.Size() {
			b := make([]byte, len(s.magic))
			if n, _ := dev.ReadAt(b, s.off); n == len(b) && string(b) == string(s.magic) {
				if _, err := dev.WriteAt(make([]byte, len(b)), s.off); err != nil {
					return fmt.Errorf("%s: wipe %s signature: %w", dev.Name(), s.name, err)
				}
			}
		}
	}
	return nil
}

func newDevice(dev device.Device, s DeviceSpec, baseDir string) store.NewDevice {
	props := device.PropsOf(dev)
	nd := store.NewDevice{Dev: dev, Path: s.Path, PathHint: pathHint(s.Path, baseDir), Rotational: props.Rotational}
	if s.Rotational != nil {
		nd.Rotational = *s.Rotational
	}
	nd.SeekSpeed, nd.Bandwidth = props.SeekSpeed, props.Bandwidth
	if nd.SeekSpeed == 0 {
		nd.SeekSpeed = SSDSeekSpeed
		if nd.Rotational {
			nd.SeekSpeed = HDDSeekSpeed
		}
	}
	if nd.Bandwidth == 0 {
		nd.Bandwidth = SSDBandwidth
		if nd.Rotational {
			nd.Bandwidth = HDDBandwidth
		}
	}
	if s.SeekSpeed != nil {
		nd.SeekSpeed = *s.SeekSpeed
	}
	if s.Bandwidth != nil {
		nd.Bandwidth = *s.Bandwidth
	}
	if s.Tier != nil {
		nd.Tier = *s.Tier
	}
	return nd
}

// pathHint records a device outside the first device's folder, relative
// to that folder when below it. A device in the folder gets no hint: the
// folder scan finds it, and an image must not depend on its own file name
// (reproducible images, FORMAT.md §4.3).
func pathHint(path, baseDir string) string {
	if device.IsRemote(path) {
		return path // shown in messages, never followed (volume.HintPath)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	base, err := filepath.Abs(baseDir)
	if err != nil {
		return abs
	}
	rel, err := filepath.Rel(base, abs)
	switch {
	case err != nil || strings.HasPrefix(rel, ".."):
		return abs
	case filepath.Dir(rel) == ".":
		return ""
	}
	return rel
}

// hintEveryDevice: a set spread over folders records every member's path,
// the first one's too, so that a copy of one member made elsewhere finds
// its original named by its own hint and is refused (volume.CheckOwnHint)
// instead of following the others' hints into the original set. A set in
// one folder records none and stays independent of its file names.
func hintEveryDevice(devs []store.NewDevice) {
	spread := false
	for _, d := range devs {
		spread = spread || d.PathHint != ""
	}
	for i := range devs {
		if spread && devs[i].PathHint == "" {
			if abs, err := filepath.Abs(devs[i].Path); err == nil {
				devs[i].PathHint = abs
			}
		}
	}
}

func article(word string) string {
	if strings.ContainsRune("aeiouAEIOU", rune(word[0])) {
		return "an"
	}
	return "a"
}

// populate fills a new filesystem from --rootdir or --tar.
func populate(f *fsys.FS, o Options) error {
	to := transfer.Options{Recursive: true, Archive: true, ForceUID: o.ForceUID, ForceGID: o.ForceGID, Progress: o.Progress}
	if !o.Time.IsZero() {
		t := fsys.TimespecOf(o.Time)
		to.Clamp = &t
	}
	switch {
	case o.RootDir != "":
		st, err := os.Stat(o.RootDir)
		if err != nil {
			return err
		}
		if !st.IsDir() {
			return fmt.Errorf("--rootdir %s: not a directory", o.RootDir)
		}
		// The root takes the directory's mode and owner, as mkfs.btrfs -r does.
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			root, err := f.Resolve("/", false)
			if err != nil {
				return err
			}
			mode, uid, gid := sys.Mode&0o7777, sys.Uid, sys.Gid
			if o.ForceUID != nil {
				uid = *o.ForceUID
			}
			if o.ForceGID != nil {
				gid = *o.ForceGID
			}
			if err := f.SetattrInode(root, fsys.SetAttr{Mode: &mode, UID: &uid, GID: &gid}); err != nil {
				return err
			}
		}
		return transfer.CopyIn(f, o.RootDir, "/", to, true)
	case o.Tar != nil:
		return transfer.TarIn(f, o.Tar, "/", to)
	}
	return nil
}

// shrink cuts the chunks to their contents and truncates image files to
// the new device sizes (block devices and partitions keep their size).
func shrink(st *store.FS, devs []store.NewDevice) error {
	sizes, err := st.Shrink()
	if err != nil {
		return err
	}
	for i, d := range devs {
		fi, err := os.Stat(d.Path)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if err := os.Truncate(d.Path, int64(sizes[uint64(i+1)])); err != nil {
			return fmt.Errorf("shrink %s: %w", d.Path, err)
		}
	}
	return nil
}

// PrepareDevice opens (or creates, sparse, with size) one device for a
// set, refusing one that holds a filesystem unless force, and fills its
// properties (device add uses it; baseDir anchors the path hint).
func PrepareDevice(s DeviceSpec, size uint64, force bool, baseDir string) (store.NewDevice, bool, error) {
	dev, isNew, err := openTarget(s.Path, size)
	if err != nil {
		return store.NewDevice{}, false, err
	}
	if !isNew {
		if err := checkExisting(dev, s.Path, force); err != nil {
			dev.Close()
			return store.NewDevice{}, false, err
		}
	}
	if dev.Size() < MinDeviceSize {
		dev.Close()
		if isNew {
			os.Remove(s.Path)
		}
		return store.NewDevice{}, false, fmt.Errorf("%s: %d bytes is too small (at least %d MiB)", s.Path, dev.Size(), MinDeviceSize>>20)
	}
	return newDevice(dev, s, baseDir), isNew, nil
}
