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
// single for data. (ok false: the profile can still be met.)
func degradedProfile(t format.ChunkType, p format.Profile, present int) (format.Profile, bool) {
	pi, _ := p.Info()
	if present >= pi.MinDevices {
		return p, false
	}
	switch {
	case present >= 2 && pi.Copies >= 2:
		return format.ProfileRaid1, true
	case t != format.ChunkData && pi.Copies >= 2:
		return format.ProfileDup, true
	}
	return format.ProfileSingle, true
}

// OpenDegraded opens the filesystem on an already opened volume that may
// lack members (tests, crash replay), as Open with Options.Degraded.
func OpenDegraded(vol *volume.Volume) (*FS, error) {
	return openVolume(vol, volume.Options{Write: vol.Writable(), NoScan: true, Degraded: true})
}

// setProfiles takes the profiles of new chunks from the newest chunk of
// each kind, passing over fallback chunks while a regular one exists: a
// chunk a degraded set made below its profile must not lower the profile
// of every chunk after it once the set is whole again.
func (fs *FS) setProfiles() {
	var data, meta bool // a regular chunk of the kind was seen
	for _, bg := range fs.bgs {
		c := bg.Chunk
		isData := c.Type == format.ChunkData
		regular := !bg.Fallback()
		switch {
		case isData && (regular || !data):
			fs.dataProfile, data = c.Profile, data || regular
		case !isData && (regular || !meta):
			fs.metaProfile, meta = c.Profile, meta || regular
		}
	}
}

// belowProfile lists the chunks a degraded set made below its profiles:
// fallback chunks not at the profile of their kind (a chunk the policy
// placed outside its preferred tier has the set's profile).
func (fs *FS) belowProfile() map[*BlockGroup]bool {
	out := map[*BlockGroup]bool{}
	for _, bg := range fs.bgs {
		if bg.Fallback() && bg.Chunk.Profile != fs.profileFor(bg.Chunk.Type) {
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
