package store

import (
	"errors"
	"fmt"
	"os"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/alloc"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/volume"
)

// missingDevice describes member d that could not be opened; err is why
// (nil or "does not exist": not found).
func missingDevice(d *format.DevItem, err error) *volume.MissingDeviceError {
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	// The message names the device itself; a bare path error would be
	// shortened by the tools to "b.img: Permission denied" and lose the
	// device and the --degraded hint.
	if err != nil {
		err = volume.Cause(err)
	}
	return &volume.MissingDeviceError{DevID: d.DevID, UUID: d.UUID, Path: d.Path, Err: err}
}

// acceptMissing decides whether the set opens without the members in
// missing: only with opt.Degraded, and never past a member another
// process holds (that one is busy, not gone).
func (fs *FS) acceptMissing(missing []*volume.MissingDeviceError, opt volume.Options) error {
	if len(missing) == 0 {
		return nil
	}
	errs := make([]error, len(missing))
	for i, m := range missing {
		if errors.Is(m.Err, device.ErrBusy) {
			return m
		}
		errs[i] = m
	}
	if !opt.Degraded {
		return fmt.Errorf("%w (give it with --device, or %w)", errors.Join(errs...), volume.ErrNeedDegraded)
	}
	fs.missing = missing
	return nil
}

// Missing lists the members a degraded open went without, by devid.
func (fs *FS) Missing() []*volume.MissingDeviceError { return fs.missing }

// Degraded reports whether the set is open without some member.
func (fs *FS) Degraded() bool { return len(fs.missing) > 0 }

// writableGroup reports whether new data or nodes may go into bg: on a
// degraded set only chunks with every copy on a present device, so no
// write ever lands on fewer copies than its chunk promises.
func (fs *FS) writableGroup(bg *BlockGroup) bool {
	return !fs.Degraded() || !fs.Vol.ChunkDegraded(bg.Chunk)
}

// presentSpace is deviceSpace without the missing members: where a new
// chunk may go.
func (fs *FS) presentSpace() []alloc.DeviceSpace {
	all := fs.deviceSpace()
	if !fs.Degraded() {
		return all
	}
	out := all[:0]
	for _, d := range all {
		if !fs.Vol.IsMissing(d.DevID) {
			out = append(out, d)
		}
	}
	return out
}

// degradedProfile is the profile of a new chunk of type t on a degraded
// set when the set's profile needs more devices than are present (as
// btrfs does): raid1 while two devices remain, else dup for metadata and
// single for data; raid5/raid6 go on at their profile while their minimum
// is present. (ok false: the profile can still be met.)
func degradedProfile(t format.ChunkType, p format.Profile, present int) (format.Profile, bool) {
	pi, _ := p.Info()
	if present >= pi.MinDevices {
		return p, false
	}
	redundant := pi.Copies >= 2 || pi.Parity > 0
	switch {
	case present >= 2 && redundant:
		return format.ProfileRaid1, true
	case t != format.ChunkData && redundant:
		return format.ProfileDup, true
	}
	return format.ProfileSingle, true
}

// OpenDegraded opens the filesystem on an already opened volume that may
// lack members (tests, crash replay), as Open with Options.Degraded.
func OpenDegraded(vol *volume.Volume) (*FS, error) {
	return openVolume(vol, volume.Options{Write: vol.Writable(), NoScan: true, Degraded: true})
}

// setProfiles takes the profiles of new chunks from the set's chunks by
// FORMAT.md's rule (format.SetProfiles): a chunk a degraded set made
// below its profile must not lower the profile of every chunk after it
// once the set is whole again.
func (fs *FS) setProfiles() {
	data, meta, dok, mok := format.SetProfiles(fs.profiledChunks())
	if dok {
		fs.dataProfile = data
	}
	if mok {
		fs.metaProfile = meta
	}
}

func (fs *FS) profiledChunks() []format.ProfiledChunk {
	out := make([]format.ProfiledChunk, len(fs.bgs))
	for i, bg := range fs.bgs {
		out[i] = bg.profiled()
	}
	return out
}

func (bg *BlockGroup) profiled() format.ProfiledChunk {
	return format.ProfiledChunk{Type: bg.Chunk.Type, Profile: bg.Chunk.Profile, Fallback: bg.Fallback()}
}

// belowProfile lists the chunks a degraded set made below its profiles
// (format.ProfiledChunk.BelowProfile).
func (fs *FS) belowProfile() map[*BlockGroup]bool {
	out := map[*BlockGroup]bool{}
	for _, bg := range fs.bgs {
		if bg.profiled().BelowProfile(fs.dataProfile, fs.metaProfile) {
			out[bg] = true
		}
	}
	return out
}

// BelowProfile returns how many chunks a degraded set made below its
// profiles (they keep theirs through device replace, as in btrfs) and the
// profiles `ddfs balance` converts them to.
func (fs *FS) BelowProfile() (n int, data, meta format.Profile) {
	return len(fs.belowProfile()), fs.dataProfile, fs.metaProfile
}

// ErrMembersMissing is returned when restoring the profiles is asked of
// a set opened without some member: the profiles need them all.
var ErrMembersMissing = errors.New("members missing: restoring the profiles needs every member")

// RestoreProfiles moves the chunks below the set's profiles (written
// while a member was missing) to those profiles and clears their
// fallback mark, as `ddfs balance IMAGE`, `fsck.ddfs -y` and `scrub
// --repair` do; metadata first in one transaction, then one data chunk
// per transaction (relocateAll). It returns how many chunks moved.
func (fs *FS) RestoreProfiles(progress Progress) (int, error) {
	need := func(bg *BlockGroup) (format.Profile, bool) {
		return fs.profileFor(bg.Chunk.Type), bg.profiled().BelowProfile(fs.dataProfile, fs.metaProfile)
	}
	n := len(fs.matching(need))
	if n == 0 {
		return 0, nil
	}
	if fs.Degraded() {
		return 0, fmt.Errorf("%d chunks below the set's profiles: %w", n, ErrMembersMissing)
	}
	unflag := func(bg *BlockGroup) bool { return true }
	return n, fs.relocateAll(need, relocOpts{progress: progress, unflag: unflag})
}

// Exposure is what losing each present member would cost: the chunks of
// a kind whose profile survives a lost device that it would lose, the
// missing members counted as lost (volume.ExposureOf).
func (fs *FS) Exposure() []volume.Exposure {
	used := make(map[uint64]uint64, len(fs.bgs))
	for _, bg := range fs.bgs {
		used[bg.Chunk.Logical] = bg.Used
	}
	items := fs.DevItems()
	ids := make([]uint64, len(items))
	for i, d := range items {
		ids[i] = d.DevID
	}
	protected := func(c *volume.Chunk) bool {
		pi, _ := fs.profileFor(c.Type).Info()
		return pi.DeviceFailures() > 0
	}
	out := volume.ExposureOf(fs.Vol.Chunks.All(), ids, fs.Vol.IsMissing, protected, func(c *volume.Chunk) uint64 { return used[c.Logical] })
	for i := range out {
		out[i].Path = fs.Vol.PathOf(out[i].DevID, fs.devItems[out[i].DevID].Path)
	}
	return out
}
