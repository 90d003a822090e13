package volume

// Exposure is what losing one more device would cost a set: the chunks
// that would then have some byte with no copy left (FORMAT.md §4.5 "The
// set's profiles"), among those whose profile is meant to survive it.
type Exposure struct {
	DevID  uint64 `json:"devid"`
	Path   string `json:"path"`
	Chunks int    `json:"chunks"`
	Size   uint64 `json:"size"` // logical bytes of those chunks
	Used   uint64 `json:"used"` // bytes in use inside them
}

// ExposureOf lists, for each of devids in order, the chunks losing it
// would lose on top of the devices already missing: only chunks that
// protected says the set's profile means to survive a lost device, and
// not those already lost. Devices whose loss costs nothing are left out.
func ExposureOf(chunks []*Chunk, devids []uint64, missing func(uint64) bool, protected func(*Chunk) bool, used func(*Chunk) uint64) []Exposure {
	out := []Exposure{}
	for _, id := range devids {
		if missing(id) {
			continue
		}
		e := Exposure{DevID: id}
		gone := func(d uint64) bool { return d == id || missing(d) }
		for _, c := range chunks {
			if protected(c) && !c.LostWithout(missing) && c.LostWithout(gone) {
				e.Chunks++
				e.Size += c.Length
				e.Used += used(c)
			}
		}
		if e.Chunks > 0 {
			out = append(out, e)
		}
	}
	return out
}

// PathOf is the path member id was opened by, else hint (its device
// item's path).
func (v *Volume) PathOf(id uint64, hint string) string {
	if d, ok := v.Device(id); ok {
		return d.Path
	}
	return hint
}
