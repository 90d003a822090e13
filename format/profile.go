package format

import (
	"fmt"
	"strings"
)

// ChunkType says what a chunk holds (FORMAT.md §4.4 "Chunk item").
type ChunkType uint16

const (
	ChunkData     ChunkType = 1
	ChunkMetadata ChunkType = 2
	ChunkSystem   ChunkType = 4
)

func (t ChunkType) String() string {
	switch t {
	case ChunkData:
		return "data"
	case ChunkMetadata:
		return "metadata"
	case ChunkSystem:
		return "system"
	}
	return fmt.Sprintf("type(%d)", uint16(t))
}

// Profile is the redundancy profile of a chunk.
type Profile uint16

const (
	ProfileSingle  Profile = 0
	ProfileDup     Profile = 1
	ProfileRaid0   Profile = 2
	ProfileRaid1   Profile = 3
	ProfileRaid1C3 Profile = 4
	ProfileRaid10  Profile = 5
	ProfileRaid5   Profile = 6 // IncompatRaid56
	ProfileRaid6   Profile = 7 // IncompatRaid56
)

// ProfileInfo describes the geometry rules of a profile.
type ProfileInfo struct {
	Name       string
	MinDevices int // devices needed
	Copies     int // copies of each byte (dup: 2 on one device)
	SubStripes int // devices per mirror group (raid10: 2)
	Striped    bool
	Parity     int // raid5: 1, raid6: 2
}

var profiles = map[Profile]ProfileInfo{
	ProfileSingle:  {Name: "single", MinDevices: 1, Copies: 1, SubStripes: 1},
	ProfileDup:     {Name: "dup", MinDevices: 1, Copies: 2, SubStripes: 1},
	ProfileRaid0:   {Name: "raid0", MinDevices: 2, Copies: 1, SubStripes: 1, Striped: true},
	ProfileRaid1:   {Name: "raid1", MinDevices: 2, Copies: 2, SubStripes: 1},
	ProfileRaid1C3: {Name: "raid1c3", MinDevices: 3, Copies: 3, SubStripes: 1},
	ProfileRaid10:  {Name: "raid10", MinDevices: 4, Copies: 2, SubStripes: 2, Striped: true},
	ProfileRaid5:   {Name: "raid5", MinDevices: 2, Copies: 1, SubStripes: 1, Striped: true, Parity: 1},
	ProfileRaid6:   {Name: "raid6", MinDevices: 3, Copies: 1, SubStripes: 1, Striped: true, Parity: 2},
}

// DeviceFailures is how many devices the profile's chunks may lose and
// still read: copies on distinct devices less one (dup keeps both copies
// on one device: none), plus parity.
func (i ProfileInfo) DeviceFailures() int {
	if i.MinDevices < i.Copies {
		return i.Parity
	}
	return i.Copies - 1 + i.Parity
}

// Info returns the geometry rules; ok is false for unknown values.
func (p Profile) Info() (ProfileInfo, bool) { i, ok := profiles[p]; return i, ok }

func (p Profile) String() string {
	if i, ok := profiles[p]; ok {
		return i.Name
	}
	return fmt.Sprintf("profile(%d)", uint16(p))
}

// Supported reports whether this build can create and read chunks of p.
func (p Profile) Supported() bool { return p <= ProfileRaid6 }

// DataStripes is how many stripes of a striped chunk with n stripes hold
// distinct data in each row: n less the parity stripes, divided among the
// mirror groups (1 for a profile that is not striped).
func (i ProfileInfo) DataStripes(n int) int {
	if !i.Striped {
		return 1
	}
	return (n - i.Parity) / i.SubStripes
}

// ParseProfile maps a name to a supported profile.
func ParseProfile(name string) (Profile, error) {
	for p, i := range profiles {
		if i.Name == strings.ToLower(name) {
			if !p.Supported() {
				return 0, fmt.Errorf("profile %s is not supported yet", name)
			}
			return p, nil
		}
	}
	return 0, fmt.Errorf("unknown profile %q (want single, dup, raid0, raid1, raid1c3, raid10, raid5 or raid6)", name)
}

// ProfiledChunk is what the set's profile rule (FORMAT.md §4.5 "The
// set's profiles") reads of a chunk.
type ProfiledChunk struct {
	Type     ChunkType
	Profile  Profile
	Fallback bool // its block group item has BlockGroupFallback
}

// SetProfiles returns the set's profiles from its chunks in logical
// order: for data, and for metadata and system together, the profile of
// the last chunk of the kind without BlockGroupFallback, else of the
// last chunk of the kind (ok false: the set has no chunk of that kind).
// A chunk a degraded set made below the profile is marked, so it never
// lowers the profile of the chunks after it.
func SetProfiles(chunks []ProfiledChunk) (data, meta Profile, dataOK, metaOK bool) {
	var dataRegular, metaRegular bool
	for _, c := range chunks {
		if c.Type == ChunkData {
			if !c.Fallback || !dataRegular {
				data, dataOK, dataRegular = c.Profile, true, dataRegular || !c.Fallback
			}
			continue
		}
		if !c.Fallback || !metaRegular {
			meta, metaOK, metaRegular = c.Profile, true, metaRegular || !c.Fallback
		}
	}
	return data, meta, dataOK, metaOK
}

// BelowProfile reports whether a chunk is below the set's profile of its
// kind: marked BlockGroupFallback and at another profile (a chunk the
// allocation policy placed outside its preferred tier keeps the set's
// profile).
func (c ProfiledChunk) BelowProfile(data, meta Profile) bool {
	want := meta
	if c.Type == ChunkData {
		want = data
	}
	return c.Fallback && c.Profile != want
}
