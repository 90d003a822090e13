package store

import (
	"fmt"
	"sort"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
)

// tieredSet creates a filesystem on nSSD image-like and nHDD rotational
// memory devices of size bytes each (SSDs first, devids from 1).
func tieredSet(t *testing.T, nSSD, nHDD int, size int64, data, meta format.Profile, s format.Settings) (*FS, []*device.MemDevice) {
	return tieredSizes(t, nSSD, nHDD, size, size, data, meta, s)
}

func tieredSizes(t *testing.T, nSSD, nHDD int, ssdSize, hddSize int64, data, meta format.Profile, s format.Settings) (*FS, []*device.MemDevice) {
	t.Helper()
	devs := append(memDevs(nSSD, ssdSize), memDevs(nHDD, hddSize)...)
	for i, d := range devs {
		devs[i] = device.NewMemDevice(fmt.Sprintf("dev%d", i+1), d.Size())
	}
	p := CreateParams{FSID: [16]byte{6}, Label: "tiers", Csum: format.CsumCRC32C, NodeSize: 4096, SectorSize: 4096,
		Data: data, Metadata: meta, AllocPolicy: s.AllocPolicy, Settings: s}
	for i, d := range devs {
		p.Devices = append(p.Devices, NewDevice{Dev: d, Path: d.Name(), Rotational: i >= nSSD})
	}
	fs, err := Create(p)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	return fs, devs
}

// chunkDevs lists the devids of a block group's stripes, sorted.
func chunkDevs(bg *BlockGroup) []uint64 {
	var out []uint64
	for _, s := range bg.Chunk.Stripes {
		out = append(out, s.DevID)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// layout describes every chunk: "type devids fallback".
func layout(fs *FS) []string {
	var out []string
	for _, bg := range fs.bgs {
		out = append(out, fmt.Sprintf("%v %v %v", bg.Chunk.Type, chunkDevs(bg), bg.Fallback()))
	}
	return out
}

// allocChunks allocates n-byte data extents with tier hint tier until a
// data chunk beyond the first `chunks` exists, then frees them so the
// commit has nothing to account (the chunks stay).
func allocUntil(t *testing.T, fs *FS, n uint64, tier uint8, chunks int) {
	t.Helper()
	tx, err := fs.Begin()
	if err != nil {
		t.Fatal(err)
	}
	var got []uint64
	for dataChunks(fs) < chunks {
		at, err := tx.AllocDataOn(n, tier)
		if err != nil {
			t.Fatalf("alloc after %d extents: %v (layout %v)", len(got), err, layout(fs))
		}
		got = append(got, at)
	}
	for _, at := range got {
		if err := tx.FreeData(at, n, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

func dataChunks(fs *FS) int {
	n := 0
	for _, bg := range fs.bgs {
		if bg.Chunk.Type == format.ChunkData {
			n++
		}
	}
	return n
}

// TestTieredRaid1Spill: 3 SSDs + 2 HDDs, raid1 data and metadata, tiered:
// metadata on SSDs, data on HDDs until they are full, then on SSDs marked
// as fallbacks (kept across a reopen).
func TestTieredRaid1Spill(t *testing.T) {
	for _, policy := range []format.AllocPolicy{format.AllocTiered, format.AllocSSDMetadata} {
		t.Run(policy.String(), func(t *testing.T) {
			fs, devs := tieredSet(t, 3, 2, 512<<20, format.ProfileRaid1, format.ProfileRaid1, format.Settings{AllocPolicy: policy})
			for _, bg := range fs.bgs {
				if bg.Chunk.Type != format.ChunkData && (chunkDevs(bg)[1] > 3 || bg.Fallback()) {
					t.Fatalf("metadata off the SSDs: %v", layout(fs))
				}
			}
			// Data goes to the HDDs until they are full; then it spills to
			// two SSDs, marked as a fallback.
			for spilled := false; !spilled; {
				allocUntil(t, fs, 1<<20, 0, dataChunks(fs)+1)
				if dataChunks(fs) > 8 {
					t.Fatalf("no spill: %v", layout(fs))
				}
				last := fs.bgs[len(fs.bgs)-1]
				d := chunkDevs(last)
				switch {
				case fmt.Sprint(d) == "[4 5]" && !last.Fallback():
				case d[0] <= 3 && d[1] <= 3 && d[0] != d[1] && last.Fallback():
					spilled = true
				default:
					t.Fatalf("data chunk on %v fallback %v: %v", d, last.Fallback(), layout(fs))
				}
			}
			if hdd := fs.devItems[4]; hdd.TotalBytes-hdd.BytesUsed > 70<<20 {
				t.Fatalf("spilled with %d bytes left on an HDD: %v", hdd.TotalBytes-hdd.BytesUsed, layout(fs))
			}
			before := layout(fs)
			fs.Close()
			fs = reopen(t, devs, false)
			defer fs.Close()
			if fmt.Sprint(layout(fs)) != fmt.Sprint(before) {
				t.Fatalf("after reopen %v, want %v", layout(fs), before)
			}
		})
	}
}

// TestDataTierHint: a data-tier hint puts new data chunks on that tier
// (no fallback); the default is the slowest tier.
func TestDataTierHint(t *testing.T) {
	fs, _ := tieredSet(t, 2, 2, 1<<30, format.ProfileSingle, format.ProfileRaid1, format.Settings{AllocPolicy: format.AllocTiered})
	defer fs.Close()
	if got := chunkDevs(firstData(fs)); fmt.Sprint(got) != "[3]" && fmt.Sprint(got) != "[4]" {
		t.Fatalf("mkfs data chunk on %v, want an HDD", got)
	}
	// Chunks counted from mkfs's one data chunk on an HDD.
	cases := []struct {
		tier   uint8
		onSSD  bool
		chunks int
	}{{1, true, 2}, {0, false, 2}, {2, false, 2}, {7, false, 2}, {1, true, 2}}
	for _, tc := range cases {
		tx, err := fs.Begin()
		if err != nil {
			t.Fatal(err)
		}
		at, err := tx.AllocDataOn(1<<20, tc.tier)
		if err != nil {
			t.Fatal(err)
		}
		bg := fs.blockGroup(at)
		devs := chunkDevs(bg)
		if (devs[0] <= 2) != tc.onSSD || bg.Fallback() || dataChunks(fs) != tc.chunks {
			t.Fatalf("tier %d: extent in chunk on %v fallback %v, %d data chunks; want on SSD %v, %d chunks", tc.tier, devs, bg.Fallback(), dataChunks(fs), tc.onSSD, tc.chunks)
		}
		if err := tx.FreeData(at, 1<<20, true); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSmallDataMax: extents up to small_data_max go to the metadata tier;
// bigger ones to the data tier; off (0) everything to the data tier.
func TestSmallDataMax(t *testing.T) {
	cases := []struct {
		policy  format.AllocPolicy
		max     uint64
		n       uint64
		wantSSD bool
	}{
		{format.AllocTiered, 64 << 10, 4 << 10, true},
		{format.AllocTiered, 64 << 10, 64 << 10, true},
		{format.AllocTiered, 64 << 10, 68 << 10, false},
		{format.AllocTiered, 0, 4 << 10, false},
		{format.AllocSSDMetadata, 64 << 10, 4 << 10, true},
		{format.AllocSSDMetadata, 64 << 10, 1 << 20, false},
		{format.AllocClassic, 64 << 10, 4 << 10, true}, // classic ignores it: the SSDs have most room
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%v-%d-%d", tc.policy, tc.max, tc.n), func(t *testing.T) {
			fs, _ := tieredSet(t, 2, 2, 1<<30, format.ProfileSingle, format.ProfileRaid1, format.Settings{AllocPolicy: tc.policy, SmallDataMax: tc.max})
			defer fs.Close()
			if tc.policy == format.AllocClassic {
				// mkfs made a data chunk already; classic keeps using it.
				tc.wantSSD = chunkDevs(firstData(fs))[0] <= 2
			}
			tx, err := fs.Begin()
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Abort()
			at, err := tx.AllocData(tc.n)
			if err != nil {
				t.Fatal(err)
			}
			bg := fs.blockGroup(at)
			if onSSD := chunkDevs(bg)[0] <= 2; onSSD != tc.wantSSD || bg.Fallback() {
				t.Fatalf("%d-byte extent on %v (fallback %v), want on SSD %v", tc.n, chunkDevs(bg), bg.Fallback(), tc.wantSSD)
			}
		})
	}
}

func firstData(fs *FS) *BlockGroup {
	for _, bg := range fs.bgs {
		if bg.Chunk.Type == format.ChunkData {
			return bg
		}
	}
	return nil
}

// TestPolicyChangeNewChunksOnly: switching classic to tiered leaves the
// existing chunks where they are (classic put data on the bigger SSDs);
// new data chunks go to the HDDs.
func TestPolicyChangeNewChunksOnly(t *testing.T) {
	fs, _ := tieredSizes(t, 2, 2, 2<<30, 1<<30, format.ProfileRaid1, format.ProfileRaid1, format.Settings{})
	defer fs.Close()
	before := layout(fs)
	if got := chunkDevs(firstData(fs)); fmt.Sprint(got) != "[1 2]" {
		t.Fatalf("classic data chunk on %v, want [1 2] (most room, then devid)", got)
	}
	if err := fs.UpdateSettings(func(s *format.Settings) error { s.AllocPolicy = format.AllocTiered; return nil }); err != nil {
		t.Fatal(err)
	}
	if got := layout(fs); fmt.Sprint(got[:len(before)]) != fmt.Sprint(before) {
		t.Fatalf("existing chunks changed: %v, were %v", got, before)
	}
	allocUntil(t, fs, 1<<20, 0, 2)
	last := fs.bgs[len(fs.bgs)-1]
	if fmt.Sprint(chunkDevs(last)) != "[3 4]" || last.Fallback() {
		t.Fatalf("new data chunk on %v fallback %v, want [3 4]", chunkDevs(last), last.Fallback())
	}
	if got := layout(fs); fmt.Sprint(got[:len(before)]) != fmt.Sprint(before) {
		t.Fatalf("existing chunks changed: %v, were %v", got, before)
	}
}

// TestDeviceAddUsed: a rotational device added to an all-SSD tiered set
// becomes the slowest tier, and the next data chunk goes to it.
func TestDeviceAddUsed(t *testing.T) {
	fs, _ := tieredSet(t, 2, 0, 1<<30, format.ProfileSingle, format.ProfileRaid1, format.Settings{AllocPolicy: format.AllocTiered})
	defer fs.Close()
	if got := fs.DeviceTiers(); fmt.Sprint(got) != "map[1:1 2:1]" {
		t.Fatalf("tiers %v", got)
	}
	hdd := device.NewMemDevice("hdd", 2<<30)
	id, err := fs.AddDevice(NewDevice{Dev: hdd, Path: "hdd", Rotational: true})
	if err != nil || id != 3 {
		t.Fatalf("add: %d %v", id, err)
	}
	if got := fs.DeviceTiers(); fmt.Sprint(got) != "map[1:1 2:1 3:2]" {
		t.Fatalf("tiers after add %v", got)
	}
	allocUntil(t, fs, 1<<20, 0, dataChunks(fs)+1)
	last := fs.bgs[len(fs.bgs)-1]
	if fmt.Sprint(chunkDevs(last)) != "[3]" || last.Fallback() {
		t.Fatalf("new data chunk on %v fallback %v, want [3]", chunkDevs(last), last.Fallback())
	}
}

// small_data_max must stop opening data chunks on the fastest tier before
// metadata has no room left there (a 25% reserve).
func TestSmallDataKeepsMetadataReserve(t *testing.T) {
	fs, _ := tieredSizes(t, 1, 1, 256<<20, 1<<30, format.ProfileSingle, format.ProfileSingle,
		format.Settings{AllocPolicy: format.AllocTiered, SmallDataMax: 64 << 10})
	tx, err := fs.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Abort()
	for {
		at, err := tx.AllocData(64 << 10)
		if err != nil {
			t.Fatal(err)
		}
		if chunkDevs(fs.blockGroup(at))[0] == 2 { // spilled to the HDD
			break
		}
	}
	bg, err := tx.newChunk(format.ChunkMetadata)
	if err != nil {
		t.Fatal(err)
	}
	if chunkDevs(bg)[0] != 1 {
		t.Fatalf("metadata chunk on %v (fallback %v) after small data filled the SSD: layout %v", chunkDevs(bg), bg.Fallback(), layout(fs))
	}
}
