package format

import "testing"

// TestSetProfiles pins FORMAT.md §4.5 "The set's profiles": the last
// regular chunk of a kind sets its profile; fallback chunks only when
// the kind has no other; a chunk is below the profile only when it is
// marked and at another profile (an interrupted balance leaves regular
// chunks at the old profile, which are not below it).
func TestSetProfiles(t *testing.T) {
	d, m, s := ChunkData, ChunkMetadata, ChunkSystem
	cases := []struct {
		name       string
		chunks     []ProfiledChunk
		data, meta Profile
		below      []bool
	}{
		{"regular", []ProfiledChunk{{d, ProfileRaid1, false}, {m, ProfileRaid1, false}}, ProfileRaid1, ProfileRaid1, []bool{false, false}},
		{"degraded after", []ProfiledChunk{{d, ProfileRaid1, false}, {m, ProfileRaid1, false}, {d, ProfileSingle, true}, {m, ProfileDup, true}, {s, ProfileDup, true}},
			ProfileRaid1, ProfileRaid1, []bool{false, false, true, true, true}},
		{"only fallbacks", []ProfiledChunk{{d, ProfileSingle, true}, {s, ProfileDup, true}}, ProfileSingle, ProfileDup, []bool{false, false}},
		{"interrupted balance", []ProfiledChunk{{d, ProfileRaid1, false}, {d, ProfileSingle, false}, {m, ProfileDup, false}, {m, ProfileRaid1, false}},
			ProfileSingle, ProfileRaid1, []bool{false, false, false, false}},
		{"tier fallback keeps the profile", []ProfiledChunk{{d, ProfileRaid1, false}, {d, ProfileRaid1, true}}, ProfileRaid1, 0, []bool{false, false}},
	}
	for _, c := range cases {
		data, meta, _, _ := SetProfiles(c.chunks)
		if data != c.data || meta != c.meta {
			t.Errorf("%s: profiles %v/%v, want %v/%v", c.name, data, meta, c.data, c.meta)
		}
		for i, ch := range c.chunks {
			if got := ch.BelowProfile(data, meta); got != c.below[i] {
				t.Errorf("%s: chunk %d below %v, want %v", c.name, i, got, c.below[i])
			}
		}
	}
}
