package store

import (
	"errors"
	"fmt"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/alloc"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/volume"
)

// Sentinels of device management, for errors.Is.
var (
	// ErrNoDevice: the devid or path names no device of the set.
	ErrNoDevice = errors.New("no such device in this filesystem")
	// ErrCannotRelocate: the devices left cannot hold the chunks at their
	// profiles (too few devices, or too little room); nothing was changed.
	ErrCannotRelocate = errors.New("the devices cannot hold the chunks at the profiles wanted")
)

// Progress is told after each relocated chunk how many of total are done.
type Progress func(done, total int)

// needFunc says whether a block group must move and to which profile.
type needFunc func(*BlockGroup) (format.Profile, bool)

func (fs *FS) matching(need needFunc) []*BlockGroup {
	var out []*BlockGroup
	for _, bg := range fs.bgs {
		if _, ok := need(bg); ok {
			out = append(out, bg)
		}
	}
	return out
}

// planMoves places every relocation on a model of the present devices
// (a degraded set's missing members take no new stripe) before anything
// is written, so a relocation that cannot finish is refused
// instead of stopping half-way.
func (fs *FS) planMoves(bgs []*BlockGroup, need needFunc, o relocOpts) error {
	return fs.planOn(fs.presentSpace(), bgs, need, o)
}

// planOn is planMoves on a given model of the devices.
func (fs *FS) planOn(devs []alloc.DeviceSpace, bgs []*BlockGroup, need needFunc, o relocOpts) error {
	for _, bg := range bgs {
		p, _ := need(bg)
		old := bg.Chunk.ChunkItem
		sl := format.RestripeStripeLen(old, p, fs.sb.NodeSize)
		stripes, err := alloc.PlaceRestripe(devs, alloc.Restripe{Chunk: old, Profile: p, Prefer: o.prefer, Rank: fs.tierRank(bg), Stay: o.stay, StripeLen: sl})
		if err != nil {
			return fmt.Errorf("chunk %d (%v %v -> %v): %w: %w", bg.Chunk.Logical, old.Type, old.Profile, p, ErrCannotRelocate, err)
		}
		pi, _ := p.Info()
		devLen := (&format.ChunkItem{Length: old.Length, Profile: p, StripeLen: sl, SubStripes: uint16(pi.SubStripes), Stripes: stripes}).StripeLength()
		for _, s := range stripes {
			for i := range devs {
				if devs[i].DevID == s.DevID {
					devs[i].Used = append(devs[i].Used, alloc.Range{Start: s.Offset, Len: devLen})
				}
			}
		}
	}
	return nil
}

// relocOpts tune relocateAll: prefer is a devid new stripes go to first
// (0 none); start runs first in the first transaction; planned says the
// caller planned the moves already (on a model of the devices start adds).
type relocOpts struct {
	prefer   uint64
	progress Progress
	start    func(*Txn) error
	planned  bool
	// unflag says whether a chunk loses its fallback flag with the move.
	unflag func(*BlockGroup) bool
	// stay lists missing members whose stripes keep their place
	// (replace: see missingOthers).
	stay map[uint64]bool
}

// relocateAll moves every block group need selects. The first
// transaction runs start (nil: nothing) and moves every metadata and
// system chunk, so that the commits after it write nodes only to chunks
// already moved (a device being vacated may be absent); then each data
// chunk moves in a transaction of its own. A crash leaves each chunk in
// its old or its new layout.
func (fs *FS) relocateAll(need needFunc, o relocOpts) error {
	first := fs.matching(need)
	if !o.planned {
		if err := fs.planMoves(first, need, o); err != nil {
			return err
		}
	}
	total, done := len(first), 0
	prefer, progress, start := o.prefer, o.progress, o.start
	step := func(meta bool) error {
		tx, err := fs.Begin()
		if err != nil {
			return err
		}
		if start != nil {
			if err := start(tx); err != nil {
				tx.Abort()
				return err
			}
			start = nil
		}
		for _, bg := range fs.matching(need) {
			if (bg.Chunk.Type == format.ChunkData) == meta {
				continue
			}
			p, _ := need(bg)
			flags := bg.flags
			if o.unflag != nil && o.unflag(bg) {
				flags &^= format.BlockGroupFallback
			}
			if err := tx.restripe(bg, p, prefer, o.stay, flags); err != nil {
				tx.Abort()
				return err
			}
			if done++; !meta {
				break
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		if progress != nil {
			progress(min(done, total), total)
		}
		return nil
	}
	hasMeta := false
	for _, bg := range first {
		hasMeta = hasMeta || bg.Chunk.Type != format.ChunkData
	}
	if hasMeta || start != nil {
		if err := step(true); err != nil {
			return err
		}
	}
	for n := 0; len(fs.matching(need)) > 0; n++ {
		// Commits may add chunks (metadata for the trees); they are placed
		// by the same rules, so the list shrinks. Bound it anyway.
		if n > 2*total+16 {
			return fmt.Errorf("relocation did not finish after %d chunks", done)
		}
		meta := false
		for _, bg := range fs.matching(need) {
			meta = meta || bg.Chunk.Type != format.ChunkData
		}
		if err := step(meta); err != nil {
			return err
		}
	}
	return nil
}

func onDevice(devid uint64) needFunc {
	return func(bg *BlockGroup) (format.Profile, bool) {
		for _, s := range bg.Chunk.Stripes {
			if s.DevID == devid {
				return bg.Chunk.Profile, true
			}
		}
		return 0, false
	}
}

// checkProfiles refuses when n devices cannot hold chunks of the
// filesystem's current profiles (new chunks are made at them).
func (fs *FS) checkProfiles(n int) error {
	for _, p := range []format.Profile{fs.dataProfile, fs.metaProfile} {
		if pi, _ := p.Info(); n < pi.MinDevices {
			return fmt.Errorf("%v needs at least %d devices, %d would be left: %w", p, pi.MinDevices, n, ErrCannotRelocate)
		}
	}
	return nil
}

// RemoveDevice moves every chunk stripe off device devid (each chunk keeps
// its profile), then drops the device from the set and wipes its
// superblocks so discovery never takes it for a member again. It refuses,
// before changing anything, when the other devices cannot hold the chunks.
func (fs *FS) RemoveDevice(devid uint64, progress Progress) error {
	return fs.removeDevice(devid, relocOpts{progress: progress})
}

// removeDevice is RemoveDevice with relocation options (replace).
func (fs *FS) removeDevice(devid uint64, o relocOpts) error {
	if _, ok := fs.devItems[devid]; !ok {
		return fmt.Errorf("device %d: %w", devid, ErrNoDevice)
	}
	if !o.planned && len(fs.devItems) == 1 {
		return fmt.Errorf("device %d is the only device: %w", devid, ErrCannotRelocate)
	}
	if !o.planned {
		if err := fs.checkProfiles(len(fs.devItems) - 1); err != nil {
			return err
		}
	}
	fs.leaving = map[uint64]bool{devid: true}
	fs.tierCache = nil
	defer func() { fs.leaving, fs.tierCache = nil, nil }()
	if err := fs.relocateAll(onDevice(devid), o); err != nil {
		return err
	}
	return fs.dropDevice(devid)
}

// dropDevice deletes the device item of an empty device and commits
// without it; then it wipes the device's superblocks. A crash between the
// two leaves a device whose superblocks are older than the set and which
// the chunk tree does not list: findDevices ignores it.
func (fs *FS) dropDevice(devid uint64) error {
	tx, err := fs.Begin()
	if err != nil {
		return err
	}
	if len(fs.Vol.Chunks.DevExtents(devid)) > 0 {
		tx.Abort()
		return fmt.Errorf("device %d still holds chunks after relocation", devid)
	}
	k := format.Key{ObjectID: format.DevItemsObjectID, Type: format.DevItemKey, Offset: devid}
	if err := tx.trees[format.ChunkTree].Delete(k); err != nil {
		tx.Abort()
		return fmt.Errorf("drop device item %d: %w", devid, err)
	}
	delete(fs.devItems, devid)
	d := fs.Vol.DetachDevice(devid)
	tx.devDirty = true
	if err := tx.Commit(); err != nil {
		if d != nil {
			d.Dev.Close()
		}
		return err
	}
	if d == nil {
		return nil // removed while absent: nothing to wipe
	}
	return errors.Join(wipeSupers(d), d.Dev.Close())
}

// wipeSupers zeroes every superblock copy of a removed device.
func wipeSupers(d *volume.Dev) error {
	zero := make([]byte, format.SuperblockSize)
	for _, off := range volume.SuperOffsets(d.Dev.Size()) {
		if _, err := d.Dev.WriteAt(zero, int64(off)); err != nil {
			return fmt.Errorf("wipe superblock of removed device %s at %d: %w", d.Path, off, err)
		}
	}
	if err := d.Dev.Flush(); err != nil {
		return fmt.Errorf("wipe superblocks of removed device %s: %w", d.Path, err)
	}
	return nil
}

// ReplaceDevice makes nd a member (a new devid: a stale copy of the old
// device can then never pass for the new one), moves every stripe of
// device old onto it (reading each chunk from whichever copy reads, so a
// failing old device is read around where mirrors exist), and removes old.
// Each step commits: a crash leaves old and perhaps the new device as
// members, and `device remove OLD` finishes the job.
func (fs *FS) ReplaceDevice(old uint64, nd NewDevice, progress Progress) (uint64, error) {
	d, ok := fs.devItems[old]
	if !ok {
		return 0, fmt.Errorf("device %d: %w", old, ErrNoDevice)
	}
	if uint64(nd.Dev.Size()) < d.BytesUsed+mib {
		return 0, fmt.Errorf("new device of %d bytes cannot hold the %d bytes of device %d: %w: %w", nd.Dev.Size(), d.BytesUsed, old, ErrCannotRelocate, ErrNoSpace)
	}
	// Plan on a model with the new device before it joins the set, so a
	// replace that cannot finish changes nothing.
	fs.leaving = map[uint64]bool{old: true}
	devs := fs.presentSpace()
	fs.leaving = nil
	devs = append(devs, alloc.DeviceSpace{DevID: fs.nextDevID(), Size: uint64(nd.Dev.Size()), Rotational: nd.Rotational,
		SeekSpeed: nd.SeekSpeed, Bandwidth: nd.Bandwidth, Tier: nd.Tier})
	stay := fs.missingOthers(old)
	if err := fs.planOn(devs, fs.matching(onDevice(old)), onDevice(old), relocOpts{prefer: fs.nextDevID(), stay: stay}); err != nil {
		return 0, err
	}
	// The new device joins in the first relocation transaction, with the
	// metadata moves: no commit writes a node to a chunk on old.
	id := fs.nextDevID()
	add := func(tx *Txn) error {
		if got := tx.addDevice(nd); got != id {
			return fmt.Errorf("new device got devid %d, planned %d", got, id)
		}
		return nil
	}
	if err := fs.removeDevice(old, relocOpts{prefer: id, progress: progress, start: add, planned: true, stay: stay}); err != nil {
		if _, added := fs.devItems[id]; !added {
			return 0, err
		}
		return id, err
	}
	return id, nil
}

// FinishReplace completes a replace of old by nw that stopped after nw
// joined the set (a kill or an I/O error): what old still holds moves,
// preferably onto nw, and old is removed, as ReplaceDevice would have.
func (fs *FS) FinishReplace(old, nw uint64, progress Progress) error {
	if _, ok := fs.devItems[nw]; !ok || nw == old {
		return fmt.Errorf("device %d: %w", nw, ErrNoDevice)
	}
	return fs.removeDevice(old, relocOpts{prefer: nw, progress: progress, stay: fs.missingOthers(old)})
}

// missingOthers lists the missing members other than old. A replace
// leaves their stripes where they are: each chunk gets its copy on the
// new device from a surviving copy and stays degraded (readable, not
// written) until those members are replaced in turn, so a set missing
// more members than its profiles could be rebuilt without (raid1c3
// minus two) is mended one device at a time.
func (fs *FS) missingOthers(old uint64) map[uint64]bool {
	out := map[uint64]bool{}
	for id := range fs.devItems {
		if id != old && fs.Vol.IsMissing(id) {
			out[id] = true
		}
	}
	return out
}

// ResizeDevice sets the usable size of device devid. Growing needs the
// device to be that large (an image file is extended); shrinking first
// moves the chunk stripes that end past the new size (into free space
// below it or onto other devices, each chunk at its profile), then
// commits the new size, then cuts an image file to it.
func (fs *FS) ResizeDevice(devid, size uint64, progress Progress) error {
	item, ok := fs.devItems[devid]
	dev, open := fs.Vol.Device(devid)
	if !ok || !open {
		return fmt.Errorf("device %d: %w", devid, ErrNoDevice)
	}
	size = size / uint64(fs.sb.SectorSize) * uint64(fs.sb.SectorSize)
	if size < 2*mib {
		return fmt.Errorf("device %d: %d bytes is too small", devid, size)
	}
	if size > uint64(dev.Dev.Size()) {
		if err := device.Resize(dev.Dev, int64(size)); err != nil {
			return fmt.Errorf("device %d (%s) is %d bytes: %w", devid, dev.Path, dev.Dev.Size(), err)
		}
	}
	if size < item.TotalBytes {
		fs.sizeCap = map[uint64]uint64{devid: size}
		fs.tierCache = nil
		defer func() { fs.sizeCap, fs.tierCache = nil, nil }()
		past := func(bg *BlockGroup) (format.Profile, bool) {
			for _, s := range bg.Chunk.Stripes {
				if s.DevID == devid && s.Offset+bg.Chunk.StripeLength() > size {
					return bg.Chunk.Profile, true
				}
			}
			return 0, false
		}
		if err := fs.relocateAll(past, relocOpts{progress: progress}); err != nil {
			return err
		}
	}
	err := fs.UpdateDevice(devid, func(d *format.DevItem) error {
		d.TotalBytes = size
		return nil
	})
	if err != nil || size >= uint64(dev.Dev.Size()) {
		return err
	}
	// Committed: give the cut-off tail of an image file back to the host.
	if err := device.Resize(dev.Dev, int64(size)); err != nil && !errors.Is(err, device.ErrNotResizable) {
		return fmt.Errorf("device %d: %w", devid, err)
	}
	return nil
}

// Balance converts every data chunk to profile data and every metadata
// and system chunk to profile meta (nil: leave that kind as it is), one
// chunk per transaction; new chunks take the new profiles from the start.
// It returns the number of chunks converted.
func (fs *FS) Balance(data, meta *format.Profile, progress Progress) (int, error) {
	for _, p := range []*format.Profile{data, meta} {
		if p == nil {
			continue
		}
		pi, ok := p.Info()
		if !ok || !p.Supported() {
			return 0, fmt.Errorf("profile %v is not supported", *p)
		}
		if len(fs.devItems) < pi.MinDevices {
			return 0, fmt.Errorf("%v needs at least %d devices, the set has %d: %w", *p, pi.MinDevices, len(fs.devItems), ErrCannotRelocate)
		}
	}
	// A degraded set made these chunks below its profiles; once at the
	// wanted profile (placed on present devices, so met) they are
	// regular, whether balance moves them or finds them there.
	below := fs.belowProfile()
	unflag := func(bg *BlockGroup) bool { return below[bg] && bg.Fallback() }
	widen := fs.narrowParity()
	need := func(bg *BlockGroup) (format.Profile, bool) {
		want := meta
		if bg.Chunk.Type == format.ChunkData {
			want = data
		}
		if want == nil || (bg.Chunk.Profile == *want && !unflag(bg) && !widen[bg.Chunk.ChunkItem]) {
			return 0, false
		}
		return *want, true
	}
	n := len(fs.matching(need))
	if err := fs.planMoves(fs.matching(need), need, relocOpts{}); err != nil {
		return 0, err
	}
	if data != nil {
		fs.dataProfile = *data
	}
	if meta != nil {
		fs.metaProfile = *meta
	}
	return n, fs.relocateAll(need, relocOpts{progress: progress, planned: true, unflag: unflag})
}

// narrowParity lists the raid5/raid6 chunks narrower than the devices
// present: a balance to their own profile lays them out again as wide as
// the devices allow (after device add), once each (keyed by the item a
// move replaces).
func (fs *FS) narrowParity() map[*format.ChunkItem]bool {
	out := map[*format.ChunkItem]bool{}
	present := len(fs.presentSpace())
	for _, bg := range fs.bgs {
		if pi, _ := bg.Chunk.Profile.Info(); pi.Parity > 0 && len(bg.Chunk.Stripes) < present {
			out[bg.Chunk.ChunkItem] = true
		}
	}
	return out
}
