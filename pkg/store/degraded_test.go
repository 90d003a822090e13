package store

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"syscall"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/volume"
)

// fillTree puts n items into the fs tree in one commit and records them.
func fillTree(t *testing.T, fs *FS, r *rand.Rand, n int, model map[format.Key][]byte) {
	t.Helper()
	tx, err := fs.Begin()
	if err != nil {
		t.Fatal(err)
	}
	tree := tx.Tree(format.FSTree)
	for i := 0; i < n; i++ {
		k := format.Key{ObjectID: uint64(r.IntN(100000)), Type: format.InodeItemKey}
		v := bytes.Repeat([]byte{byte(i)}, 1+r.IntN(300))
		if err := tree.Put(k, v); err != nil {
			t.Fatal(err)
		}
		model[k] = v
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

func openSome(t *testing.T, devs []*device.MemDevice, keep []int, write, degraded bool) (*FS, error) {
	t.Helper()
	var ds []device.Device
	for _, i := range keep {
		ds = append(ds, devs[i])
	}
	vol, err := volume.FromDevices(ds, write)
	if err != nil {
		t.Fatal(err)
	}
	open := OpenVolume
	if degraded {
		open = OpenDegraded
	}
	fs, err := open(vol)
	if err != nil {
		vol.Close()
	}
	return fs, err
}

// A mirrored set with one member gone: refused without Degraded (the
// error names the member), readable and writable with it, every new
// write on present devices only, and whole again once the member is back.
func TestDegradedReadWrite(t *testing.T) {
	for _, tc := range []struct {
		devs       int
		data, meta format.Profile
		want       format.Profile // metadata profile of new chunks
	}{
		{2, format.ProfileRaid1, format.ProfileRaid1, format.ProfileDup},
		{3, format.ProfileRaid1C3, format.ProfileRaid1C3, format.ProfileRaid1},
		{4, format.ProfileRaid10, format.ProfileRaid10, format.ProfileRaid1},
		{3, format.ProfileRaid1, format.ProfileRaid1C3, format.ProfileRaid1},
	} {
		t.Run(fmt.Sprintf("%d-%v-%v", tc.devs, tc.data, tc.meta), func(t *testing.T) {
			devs := memDevs(tc.devs, 1<<30)
			fs := create(t, devs, tc.data, tc.meta)
			r := rand.New(rand.NewPCG(uint64(tc.devs), 11))
			model := map[format.Key][]byte{}
			fillTree(t, fs, r, 3000, model)
			fs.Close()
			gone := tc.devs - 1 // devid tc.devs
			var keep []int
			for i := 0; i < tc.devs; i++ {
				if i != gone {
					keep = append(keep, i)
				}
			}
			_, err := openSome(t, devs, keep, true, false)
			var me *volume.MissingDeviceError
			if !errors.As(err, &me) || me.DevID != uint64(tc.devs) || me.Err != nil || !errors.Is(err, volume.ErrNeedDegraded) {
				t.Fatalf("open without a member: %v, want MissingDeviceError for devid %d and ErrNeedDegraded", err, tc.devs)
			}
			fs, err = openSome(t, devs, keep, true, true)
			if err != nil {
				t.Fatal(err)
			}
			if m := fs.Missing(); len(m) != 1 || m[0].DevID != uint64(tc.devs) {
				t.Fatalf("missing %v", m)
			}
			checkModel(t, fs, model)
			fillTree(t, fs, r, 3000, model)
			checkModel(t, fs, model)
			for _, bg := range fs.BlockGroups() {
				if bg.isNew || bg.Chunk.Type == format.ChunkData {
					continue
				}
				if fs.Vol.ChunkDegraded(bg.Chunk) == (bg.Chunk.Profile == tc.want && bg.Fallback()) {
					t.Fatalf("chunk %d %v on %v fallback %v: degraded chunks must be the old ones, new ones %v", bg.Chunk.Logical, bg.Chunk.Profile, chunkDevs(bg), bg.Fallback(), tc.want)
				}
			}
			fs.Close()
			fs, err = openSome(t, devs, keep, false, true)
			if err != nil {
				t.Fatal(err)
			}
			checkModel(t, fs, model)
			fs.Close()
			all := append(keep, gone)
			fs, err = openSome(t, devs, all, false, false)
			if err != nil {
				t.Fatal(err)
			}
			checkModel(t, fs, model)
			// Whole again: new chunks get the set's profiles back.
			if fs.profileFor(format.ChunkMetadata) != tc.meta || fs.profileFor(format.ChunkData) != tc.data {
				t.Fatalf("profiles of new chunks %v/%v, want %v/%v", fs.profileFor(format.ChunkData), fs.profileFor(format.ChunkMetadata), tc.data, tc.meta)
			}
			fs.Close()
		})
	}
}

// With every copy of a node gone (raid0 metadata, one member missing),
// reading it fails with EIO, never "not found".
func TestDegradedNoCopyIsEIO(t *testing.T) {
	devs := memDevs(2, 1<<30)
	fs := create(t, devs, format.ProfileRaid0, format.ProfileRaid0)
	model := map[format.Key][]byte{}
	fillTree(t, fs, rand.New(rand.NewPCG(1, 2)), 3000, model)
	fs.Close()
	_, err := openSome(t, devs, []int{0}, false, true)
	if !errors.Is(err, syscall.EIO) || !errors.Is(err, volume.ErrMissingDevice) || errors.Is(err, btree.ErrNotFound) {
		t.Fatalf("open with raid0 metadata half missing: %v, want EIO", err)
	}
}

// The first write to a degraded set of small devices makes a data, a
// metadata and a system chunk at once, all on the present devices:
// sized from those devices at the fallback profile they fit (review: on
// 2×256 MiB raid1 the chunks were sized from the whole set, and the
// system chunk found no room with 146 MiB unallocated).
func TestDegradedFirstWriteSmallDevices(t *testing.T) {
	for _, tc := range []struct {
		devs    int
		profile format.Profile
	}{{2, format.ProfileRaid1}, {3, format.ProfileRaid1C3}, {4, format.ProfileRaid10}} {
		t.Run(tc.profile.String(), func(t *testing.T) {
			devs := memDevs(tc.devs, 256<<20)
			fs := create(t, devs, tc.profile, tc.profile)
			model := map[format.Key][]byte{}
			r := rand.New(rand.NewPCG(uint64(tc.devs), 3))
			fillTree(t, fs, r, 200, model)
			fs.Close()
			keep := make([]int, tc.devs-1)
			for i := range keep {
				keep[i] = i
			}
			fs, err := openSome(t, devs, keep, true, true)
			if err != nil {
				t.Fatal(err)
			}
			defer fs.Close()
			tx, err := fs.Begin()
			if err != nil {
				t.Fatal(err)
			}
			at, err := tx.AllocData(100 << 10)
			if err != nil {
				t.Fatalf("degraded data allocation: %v", err)
			}
			if err := tx.FreeData(at, 100<<10, true); err != nil {
				t.Fatal(err)
			}
			// A node in the same transaction, as a file copy writes.
			k, v := format.Key{ObjectID: 1 << 20, Type: format.InodeItemKey}, []byte("x")
			if err := tx.Tree(format.FSTree).Put(k, v); err != nil {
				t.Fatal(err)
			}
			model[k] = v
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			fillTree(t, fs, r, 200, model)
			checkModel(t, fs, model)
			kinds := map[format.ChunkType]bool{}
			for _, bg := range fs.BlockGroups() {
				if !fs.Vol.ChunkDegraded(bg.Chunk) {
					kinds[bg.Chunk.Type] = true
				}
			}
			if len(kinds) != 3 {
				t.Fatalf("chunks on present devices only: %v, want data, metadata and system", kinds)
			}
		})
	}
}

// Balance at a profile the devices meet clears the fallback mark of the
// chunks a degraded set made below its profiles: those it converts, and
// those already at the wanted profile, which keep their stripes (raid1
// chunks of a degraded raid1c3 set, balanced to raid1). The mark is gone
// after a reopen too, and every copy holds what was written.
func TestBalanceClearsDegradedFallback(t *testing.T) {
	devs := memDevs(3, 1<<30)
	fs := create(t, devs, format.ProfileRaid1C3, format.ProfileRaid1C3)
	m := fillModel(t, fs, 5, 3)
	fs.Close()
	fs, err := openSome(t, devs, []int{0, 1}, true, true)
	if err != nil {
		t.Fatal(err)
	}
	m.fill(t, fs, 6, 3) // data chunks too: their use stays as it is during balance
	fs.Close()
	fs = reopen(t, devs, false)
	kept := map[uint64][]format.Stripe{}
	for _, bg := range fs.BlockGroups() {
		if bg.Fallback() {
			kept[bg.Chunk.Logical] = append([]format.Stripe(nil), bg.Chunk.Stripes...)
		}
	}
	if len(kept) == 0 {
		t.Fatal("no fallback chunks after degraded writes")
	}
	raid1 := format.ProfileRaid1
	if _, err := fs.Balance(&raid1, &raid1, nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		for _, bg := range fs.BlockGroups() {
			if bg.Fallback() || bg.Chunk.Profile != raid1 {
				t.Fatalf("pass %d: chunk %d %v fallback %v after balance to raid1", i, bg.Chunk.Logical, bg.Chunk.Profile, bg.Fallback())
			}
			if s, ok := kept[bg.Chunk.Logical]; ok && !reflect.DeepEqual(s, bg.Chunk.Stripes) {
				t.Fatalf("chunk %d already raid1 moved: %v -> %v", bg.Chunk.Logical, s, bg.Chunk.Stripes)
			}
		}
		m.check(t, fs)
		fs.Close()
		fs = reopen(t, devs, true)
	}
	fs.Close()
}
