package check

import (
	"fmt"
	"strings"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/units"
	"github.com/ddfs/ddfs/pkg/volume"
)

// checkProfiles reports the chunks below the set's profiles (FORMAT.md
// §4.5 "The set's profiles": written while a member was missing) and
// what losing each device would cost. A repair restores the profiles by
// moving those chunks (restoreProfiles), as `ddfs balance` does.
func (c *checker) checkProfiles() {
	chunks := c.vol.Chunks.All()
	pcs := make([]format.ProfiledChunk, len(chunks))
	for i, ch := range chunks {
		pcs[i] = format.ProfiledChunk{Type: ch.Type, Profile: ch.Profile}
		if g := c.bgItems[ch.Logical]; g != nil {
			pcs[i].Fallback = g.Flags&format.BlockGroupFallback != 0
		}
	}
	data, meta, _, _ := format.SetProfiles(pcs)
	want := func(t format.ChunkType) format.Profile {
		if t == format.ChunkData {
			return data
		}
		return meta
	}
	missing := func(id uint64) bool { _, ok := c.vol.Device(id); return !ok }
	protected := func(ch *volume.Chunk) bool {
		pi, _ := want(ch.Type).Info()
		return pi.DeviceFailures() > 0
	}
	away := hasCode(c.rep.Problems, DevMissing)
	for i, ch := range chunks {
		// With a member missing, DEV_MISSING is the problem (the chunks
		// can move back only once it is back or replaced); the exposure
		// below still says what the next loss would cost.
		if away || !pcs[i].BelowProfile(data, meta) {
			continue
		}
		c.add(Problem{Code: ChunkBelowProfile, Logical: ch.Logical, Message: fmt.Sprintf(
			"%v chunk of %s at %v, below the set's %v (made while a device was missing)%s",
			ch.Type, units.Human(ch.Length), ch.Profile, want(ch.Type), c.lostWith(ch, missing))})
	}
	c.rep.Exposure = volume.ExposureOf(chunks, sortedIDs(c.devItems), missing, protected, func(ch *volume.Chunk) uint64 {
		if g := c.bgItems[ch.Logical]; g != nil {
			return g.Used
		}
		return ch.Length // unknown: count it all
	})
	for i := range c.rep.Exposure {
		id := c.rep.Exposure[i].DevID
		c.rep.Exposure[i].Path = c.vol.PathOf(id, c.devItems[id].Path)
	}
}

// lostWith names the devices whose loss alone would lose ch now.
func (c *checker) lostWith(ch *volume.Chunk, missing func(uint64) bool) string {
	var ids []string
	for _, id := range sortedIDs(c.devItems) {
		if !missing(id) && ch.LostWithout(func(d uint64) bool { return d == id || missing(d) }) {
			ids = append(ids, fmt.Sprint(id))
		}
	}
	if len(ids) == 0 {
		return ""
	}
	return ": losing devid " + strings.Join(ids, " or ") + " loses it"
}

// restoreProfiles moves the chunks below the set's profiles to them
// (store.RestoreProfiles). Repair does it only when nothing else is
// wrong: a move reads every byte of a chunk and rewrites it, which on a
// damaged set would carry on what the other fixes have not yet settled.
func restoreProfiles(vol *volume.Volume, opt Options) error {
	st, err := store.OpenForRepair(vol)
	if err != nil {
		return err
	}
	_, err = st.RestoreProfiles(func(done, total int) { opt.progress("profiles", uint64(done), uint64(total), false) })
	return err
}

// onlyBelowProfile reports whether the chunks below the profiles are all
// that is wrong (warnings aside).
func onlyBelowProfile(ps []Problem) bool {
	found := false
	for _, p := range ps {
		switch {
		case p.Code == ChunkBelowProfile:
			found = true
		case !p.Warning:
			return false
		}
	}
	return found
}
