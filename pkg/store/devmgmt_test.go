package store

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/volume"
)

// relocModel is what a test wrote, independent of the code under test:
// fs tree items and data extents (logical -> bytes).
type relocModel struct {
	items map[format.Key][]byte
	data  map[uint64][]byte
}

// fillModel commits rounds of tree items and data extents with their
// extent items, so relocation must carry both metadata and data.
func fillModel(t *testing.T, fs *FS, seed uint64, rounds int) *relocModel {
	t.Helper()
	m := &relocModel{items: map[format.Key][]byte{}, data: map[uint64][]byte{}}
	m.fill(t, fs, seed, rounds)
	return m
}

// fill adds rounds of items and extents to the model and the filesystem.
func (m *relocModel) fill(t *testing.T, fs *FS, seed uint64, rounds int) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 11))
	for round := 0; round < rounds; round++ {
		tx, err := fs.Begin()
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 300; i++ {
			k := format.Key{ObjectID: uint64(r.IntN(3000)), Type: format.InodeItemKey}
			v := bytes.Repeat([]byte{byte(r.IntN(256))}, r.IntN(200))
			if err := tx.Tree(format.FSTree).Put(k, v); err != nil {
				t.Fatal(err)
			}
			m.items[k] = v
		}
		for i := 0; i < 8; i++ {
			n := uint64(4096 * (1 + r.IntN(64)))
			at, err := tx.AllocData(n)
			if err != nil {
				t.Fatal(err)
			}
			b := make([]byte, n)
			for j := range b {
				b[j] = byte(r.Uint32())
			}
			if err := fs.Vol.Write(at, b); err != nil {
				t.Fatal(err)
			}
			ei := format.MarshalExtentItem(&format.ExtentItem{Refs: 1, Generation: tx.Generation(), RAMBytes: n})
			if err := tx.Tree(format.ExtentTree).Insert(format.Key{ObjectID: at, Type: format.ExtentItemKey, Offset: n}, ei); err != nil {
				t.Fatal(err)
			}
			m.data[at] = b
			var sums []byte
			for j := 0; j < len(b); j += 4096 {
				sum := format.Checksum(fs.sb.CsumType, b[j:j+4096])
				sums = append(sums, sum[:fs.sb.CsumType.Len()]...)
			}
			if err := tx.Tree(format.CsumTree).Insert(format.Key{ObjectID: format.CsumObjectID, Type: format.CsumItemKey, Offset: at}, sums); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// checkAllCopies reads every data extent from every copy and compares it
// with the model (a read that tries copies in turn would hide a copy that
// relocation never wrote), then checks the tree items and space.
func (m *relocModel) check(t *testing.T, fs *FS) {
	t.Helper()
	checkModel(t, fs, m.items)
	checkUsed(t, fs)
	for at, want := range m.data {
		for c := 0; c < fs.Vol.Copies(at); c++ {
			got := make([]byte, len(want))
			if err := fs.Vol.ReadCopy(at, got, c); err != nil {
				t.Fatalf("data %d copy %d: %v", at, c, err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("data %d copy %d differs from what was written", at, c)
			}
		}
	}
	// Every node of every tree validates on every copy.
	for id := format.TreeID(1); id <= format.NumTrees; id++ {
		root := fs.sb.Roots.Root(id)
		if root.Logical == 0 {
			continue
		}
		var walk func(l, g uint64, level int)
		walk = func(l, g uint64, level int) {
			var n *format.Node
			for c := 0; c < fs.Vol.Copies(l); c++ {
				var err error
				n, err = fs.ReadNodeCopy(format.NodeExpect{FSID: fs.sb.FSID, Logical: l, Generation: g, Owner: id, Level: level}, c)
				if err != nil {
					t.Fatalf("%v node %d copy %d: %v", id, l, c, err)
				}
			}
			for _, p := range n.Ptrs {
				walk(p.Logical, p.Generation, level-1)
			}
		}
		walk(root.Logical, root.Generation, int(root.Level))
	}
}

// checkUsed recounts each block group's use from the extent tree (nodes
// and data extents).
func checkUsed(t *testing.T, fs *FS) {
	t.Helper()
	used := map[uint64]uint64{}
	err := fs.Tree(format.ExtentTree).Scan(format.Key{}, format.MaxKey, func(it format.Item) (bool, error) {
		switch it.Key.Type {
		case format.MetadataItemKey:
			used[fs.blockGroup(it.Key.ObjectID).Chunk.Logical] += uint64(fs.sb.NodeSize)
		case format.ExtentItemKey:
			used[fs.blockGroup(it.Key.ObjectID).Chunk.Logical] += it.Key.Offset
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, bg := range fs.bgs {
		if bg.Used != used[bg.Chunk.Logical] {
			t.Fatalf("block group %d: used %d, items say %d", bg.Chunk.Logical, bg.Used, used[bg.Chunk.Logical])
		}
	}
}

func stripesOn(fs *FS, devid uint64) int {
	return len(fs.Vol.Chunks.DevExtents(devid))
}

// TestRemoveDevice removes a device of each layout and checks that every
// chunk kept its profile, no stripe is left on the device, its
// superblocks are wiped, and every copy of every node and extent holds
// what was written.
func TestRemoveDevice(t *testing.T) {
	for _, tc := range []struct {
		devs       int
		data, meta format.Profile
		remove     uint64
		size       int64
	}{
		{3, format.ProfileRaid1, format.ProfileRaid1, 2, 1 << 30},
		{3, format.ProfileSingle, format.ProfileRaid1, 1, 1 << 30},
		{2, format.ProfileSingle, format.ProfileDup, 1, 1 << 30},
		{3, format.ProfileRaid0, format.ProfileRaid1, 3, 4 << 30},
		{4, format.ProfileRaid0, format.ProfileRaid1, 2, 4 << 30},
		{5, format.ProfileRaid10, format.ProfileRaid1C3, 4, 1 << 30},
	} {
		t.Run(fmt.Sprintf("%d-%v-%v-rm%d", tc.devs, tc.data, tc.meta, tc.remove), func(t *testing.T) {
			devs := memDevs(tc.devs, tc.size)
			fs := create(t, devs, tc.data, tc.meta)
			m := fillModel(t, fs, uint64(tc.devs), 4)
			profiles := map[uint64]format.Profile{}
			for _, c := range fs.Vol.Chunks.All() {
				profiles[c.Logical] = c.Profile
			}
			if stripesOn(fs, tc.remove) == 0 {
				t.Fatalf("device %d holds no chunk: nothing to test", tc.remove)
			}
			calls := 0
			if err := fs.RemoveDevice(tc.remove, func(done, total int) { calls++ }); err != nil {
				t.Fatal(err)
			}
			if calls == 0 {
				t.Fatal("progress never called")
			}
			if st := fs.RelocStats(); st.Bytes == 0 || st.Repaired != 0 || st.Unrecovered != 0 {
				t.Fatalf("relocation stats %+v on a healthy set", st)
			}
			gone := devs[tc.remove-1]
			for _, sc := range volume.ReadSuperCopies(gone) {
				if sc.Err == nil {
					t.Fatalf("removed device keeps a valid superblock at %d", sc.Offset)
				}
			}
			rest := append(append([]*device.MemDevice{}, devs[:tc.remove-1]...), devs[tc.remove:]...)
			fs = reopen(t, rest, false)
			defer fs.Close()
			if got := fs.Super().NumDevices; got != uint64(tc.devs-1) {
				t.Fatalf("num_devices %d, want %d", got, tc.devs-1)
			}
			if _, ok := fs.devItems[tc.remove]; ok {
				t.Fatal("device item still there")
			}
			var total uint64
			for _, d := range fs.DevItems() {
				total += d.TotalBytes
			}
			if fs.Super().TotalBytes != total {
				t.Fatalf("total_bytes %d, devices sum to %d", fs.Super().TotalBytes, total)
			}
			for _, c := range fs.Vol.Chunks.All() {
				if p, ok := profiles[c.Logical]; ok && p != c.Profile {
					t.Fatalf("chunk %d: profile %v became %v", c.Logical, p, c.Profile)
				}
				for _, s := range c.Stripes {
					if s.DevID == tc.remove {
						t.Fatalf("chunk %d still has a stripe on the removed device", c.Logical)
					}
				}
			}
			m.check(t, fs)
		})
	}
}

// TestRemoveRefused: the other devices cannot hold the chunks at their
// profiles; nothing is written.
func TestRemoveRefused(t *testing.T) {
	t.Run("raid1-on-2", func(t *testing.T) {
		devs := memDevs(2, 1<<30)
		fs := create(t, devs, format.ProfileRaid1, format.ProfileRaid1)
		fillModel(t, fs, 1, 1)
		gen := fs.Super().Generation
		err := fs.RemoveDevice(2, nil)
		if !errors.Is(err, ErrCannotRelocate) {
			t.Fatalf("got %v, want ErrCannotRelocate", err)
		}
		if fs.Super().Generation != gen {
			t.Fatal("a refused remove committed")
		}
	})
	t.Run("too-small", func(t *testing.T) {
		devs := []*device.MemDevice{device.NewMemDevice("big", 1<<30), device.NewMemDevice("small", 64<<20)}
		fs := create(t, devs, format.ProfileSingle, format.ProfileDup)
		fillModel(t, fs, 2, 2)
		if stripesOn(fs, 1) == 0 {
			t.Fatal("device 1 holds nothing")
		}
		gen := fs.Super().Generation
		err := fs.RemoveDevice(1, nil)
		if !errors.Is(err, ErrCannotRelocate) || !errors.Is(err, ErrNoSpace) {
			t.Fatalf("got %v, want ErrCannotRelocate and ErrNoSpace", err)
		}
		if fs.Super().Generation != gen {
			t.Fatal("a refused remove committed")
		}
	})
	t.Run("unknown", func(t *testing.T) {
		fs := create(t, memDevs(2, 1<<30), format.ProfileSingle, format.ProfileRaid1)
		if err := fs.RemoveDevice(7, nil); !errors.Is(err, ErrNoDevice) {
			t.Fatalf("got %v, want ErrNoDevice", err)
		}
	})
}

// TestBalanceConvert converts single/dup to raid1/raid1 after a device
// was added, and back to single/dup.
func TestBalanceConvert(t *testing.T) {
	devs := memDevs(2, 1<<30)
	fs := create(t, devs[:1], format.ProfileSingle, format.ProfileDup)
	m := fillModel(t, fs, 5, 3)
	if _, err := fs.AddDevice(NewDevice{Dev: devs[1], Path: devs[1].Name()}); err != nil {
		t.Fatal(err)
	}
	for _, want := range [][2]format.Profile{{format.ProfileRaid1, format.ProfileRaid1}, {format.ProfileSingle, format.ProfileDup}} {
		n, err := fs.Balance(&want[0], &want[1], nil)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Fatal("nothing converted")
		}
		fs = reopen(t, devs, false)
		for _, c := range fs.Vol.Chunks.All() {
			w := want[1]
			if c.Type == format.ChunkData {
				w = want[0]
			}
			if c.Profile != w {
				t.Fatalf("chunk %d (%v) is %v, want %v", c.Logical, c.Type, c.Profile, w)
			}
		}
		m.check(t, fs)
		m.fill(t, fs, 6, 1) // new chunks take the new profiles
		m.check(t, fs)
	}
	if _, err := fs.Balance(ptr(format.ProfileRaid1C3), nil, nil); !errors.Is(err, ErrCannotRelocate) {
		t.Fatalf("raid1c3 on 2 devices: got %v", err)
	}
	fs.Close()
}

func ptr(p format.Profile) *format.Profile { return &p }

// TestResizeDevice shrinks a single device below its dup metadata's
// second copy (placed at the device's end), then grows it back.
func TestResizeDevice(t *testing.T) {
	devs := memDevs(1, 1<<30)
	fs := create(t, devs, format.ProfileSingle, format.ProfileDup)
	m := fillModel(t, fs, 9, 3)
	end := uint64(0)
	for _, e := range fs.Vol.Chunks.DevExtents(1) {
		end = max(end, e.Physical+e.Length)
	}
	if end <= 600<<20 {
		t.Fatalf("last stripe ends at %d: nothing to move", end)
	}
	if err := fs.ResizeDevice(1, 600<<20, nil); err != nil {
		t.Fatal(err)
	}
	if devs[0].Size() != 600<<20 {
		t.Fatalf("device size %d after shrink", devs[0].Size())
	}
	fs = reopen(t, devs, false)
	if got := fs.DevItems()[0].TotalBytes; got != 600<<20 {
		t.Fatalf("total_bytes %d", got)
	}
	for _, e := range fs.Vol.Chunks.DevExtents(1) {
		if e.Physical+e.Length > 600<<20 {
			t.Fatalf("chunk %d ends past the new size", e.ChunkLogical)
		}
	}
	m.check(t, fs)
	if err := fs.ResizeDevice(1, 2<<30, nil); err != nil {
		t.Fatal(err)
	}
	fs = reopen(t, devs, false)
	if got := fs.Super().TotalBytes; got != 2<<30 {
		t.Fatalf("total_bytes %d after grow", got)
	}
	m.check(t, fs)
	fs.Close()
}

// TestReplaceReadsAroundBadCopy: every stripe of the device being replaced
// is garbage; the new device gets the good copies (nodes and data
// sectors verified against their checksums) and the counters say so.
func TestReplaceReadsAroundBadCopy(t *testing.T) {
	devs := memDevs(3, 1<<30)
	fs := create(t, devs[:2], format.ProfileRaid1, format.ProfileRaid1)
	m := fillModel(t, fs, 3, 3)
	junk := bytes.Repeat([]byte{0xa5}, 1<<20)
	for _, e := range fs.Vol.Chunks.DevExtents(2) {
		// The used bytes lie at the start of each stripe.
		for off := uint64(0); off < min(e.Length, 16<<20); off += uint64(len(junk)) {
			if _, err := devs[1].WriteAt(junk[:min(uint64(len(junk)), e.Length-off)], int64(e.Physical+off)); err != nil {
				t.Fatal(err)
			}
		}
	}
	fs.cache = newNodeCache(cacheNodes) // nothing read before the damage may hide it
	if _, err := fs.ReplaceDevice(2, NewDevice{Dev: devs[2], Path: devs[2].Name()}, nil); err != nil {
		t.Fatal(err)
	}
	st := fs.RelocStats()
	if st.Repaired < len(m.data) || st.Unrecovered != 0 {
		t.Fatalf("relocation stats %+v: want at least %d repaired, none unrecovered", st, len(m.data))
	}
	fs = reopen(t, []*device.MemDevice{devs[0], devs[2]}, false)
	defer fs.Close()
	m.check(t, fs)
}

// TestRemoveKeepsTier: with ssd-metadata, metadata of a removed SSD moves
// to the other SSDs although the HDDs have more free space.
func TestRemoveKeepsTier(t *testing.T) {
	fs, devs := tieredSizes(t, 3, 2, 1<<30, 4<<30, format.ProfileSingle, format.ProfileRaid1, format.Settings{AllocPolicy: format.AllocSSDMetadata})
	m := fillModel(t, fs, 4, 2)
	if err := fs.RemoveDevice(1, nil); err != nil {
		t.Fatal(err)
	}
	for _, bg := range fs.bgs {
		if bg.Chunk.Type == format.ChunkData {
			continue
		}
		for _, id := range chunkDevs(bg) {
			if id > 3 {
				t.Fatalf("%v chunk %d moved to HDD %d: %v", bg.Chunk.Type, bg.Chunk.Logical, id, layout(fs))
			}
		}
	}
	fs = reopen(t, devs[1:], false)
	defer fs.Close()
	m.check(t, fs)
}

// TestBalanceStriped converts to and between striped profiles on four
// devices; every chunk is as wide as the devices allow.
func TestBalanceStriped(t *testing.T) {
	devs := memDevs(4, 2<<30)
	fs := create(t, devs, format.ProfileSingle, format.ProfileRaid1)
	m := fillModel(t, fs, 8, 3)
	for _, want := range [][2]format.Profile{{format.ProfileRaid10, format.ProfileRaid10}, {format.ProfileRaid0, format.ProfileRaid1C3}} {
		if _, err := fs.Balance(&want[0], &want[1], nil); err != nil {
			t.Fatal(err)
		}
		fs = reopen(t, devs, false)
		for _, c := range fs.Vol.Chunks.All() {
			w := want[1]
			if c.Type == format.ChunkData {
				w = want[0]
			}
			if pi, _ := w.Info(); c.Profile != w || (pi.Striped && len(c.Stripes) != 4) {
				t.Fatalf("chunk %d (%v) is %v on %d stripes, want %v on 4", c.Logical, c.Type, c.Profile, len(c.Stripes), w)
			}
		}
		m.check(t, fs)
	}
	fs.Close()
}

// TestReplaceRefusedBeforeAdding: a new device too small for what the old
// one holds (planned with its stripes' sizes) is refused before it joins.
func TestReplaceRefusedBeforeAdding(t *testing.T) {
	devs := memDevs(2, 1<<30)
	fs := create(t, devs, format.ProfileRaid1, format.ProfileRaid1)
	fillModel(t, fs, 12, 1)
	gen := fs.Super().Generation
	used := fs.devItems[2].BytesUsed
	// Too small in total, and big enough in total but split by the
	// superblock copy at 64 MiB so the largest stripe does not fit.
	for _, size := range []int64{int64(used) / 2, int64(used) + 2<<20} {
		small := device.NewMemDevice("small", size)
		_, err := fs.ReplaceDevice(2, NewDevice{Dev: small, Path: small.Name()}, nil)
		if !errors.Is(err, ErrCannotRelocate) || !errors.Is(err, ErrNoSpace) {
			t.Fatalf("new device of %d bytes for %d used: got %v, want ErrCannotRelocate", size, used, err)
		}
		if fs.Super().Generation != gen || len(fs.DevItems()) != 2 {
			t.Fatal("a refused replace changed the set")
		}
	}
}

// TestReplaceAbsentDevice: with the old device missing (a degraded open),
// replace reads every chunk from its mirrors and the set is whole again.
func TestReplaceAbsentDevice(t *testing.T) {
	devs := memDevs(4, 1<<30)
	fs := create(t, devs[:3], format.ProfileRaid1, format.ProfileRaid1C3)
	m := fillModel(t, fs, 13, 3)
	if stripesOn(fs, 2) == 0 {
		t.Fatal("device 2 holds nothing")
	}
	fs.Close()
	vol, err := volume.FromDevices([]device.Device{devs[0], devs[2]}, true)
	if err != nil {
		t.Fatal(err)
	}
	if fs, err = OpenDegraded(vol); err != nil {
		t.Fatal(err)
	}
	if !fs.Degraded() {
		t.Fatal("set opened whole without device 2")
	}
	if _, err := fs.ReplaceDevice(2, NewDevice{Dev: devs[3], Path: devs[3].Name()}, nil); err != nil {
		t.Fatal(err)
	}
	fs = reopen(t, []*device.MemDevice{devs[0], devs[2], devs[3]}, false)
	defer fs.Close()
	if len(fs.DevItems()) != 3 || stripesOn(fs, 2) != 0 {
		t.Fatalf("devices %d, stripes left on device 2: %d", len(fs.DevItems()), stripesOn(fs, 2))
	}
	m.check(t, fs)
}
