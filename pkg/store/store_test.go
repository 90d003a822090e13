package store

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/volume"
)

func memDevs(n int, size int64) []*device.MemDevice {
	var out []*device.MemDevice
	for i := 0; i < n; i++ {
		out = append(out, device.NewMemDevice(fmt.Sprintf("mem%d", i), size))
	}
	return out
}

func create(t *testing.T, devs []*device.MemDevice, data, meta format.Profile) *FS {
	t.Helper()
	p := CreateParams{FSID: [16]byte{9, 9, 9}, Label: "t", Csum: format.CsumCRC32C, NodeSize: 4096, SectorSize: 4096, Data: data, Metadata: meta}
	for _, d := range devs {
		p.Devices = append(p.Devices, NewDevice{Dev: d, Path: d.Name()})
	}
	fs, err := Create(p)
	if err != nil {
		t.Fatalf("create %v/%v on %d devices: %v", data, meta, len(devs), err)
	}
	return fs
}

func reopen(t *testing.T, devs []*device.MemDevice, crash bool) *FS {
	t.Helper()
	var ds []device.Device
	for _, d := range devs {
		if crash {
			d.Crash()
		}
		ds = append(ds, d)
	}
	return openOn(t, ds, true)
}

// openOn opens the set on ds as they are, writable or not; the tests'
// and benchmarks' one way to open without healing on.
func openOn(tb testing.TB, ds []device.Device, write bool) *FS {
	tb.Helper()
	vol, err := volume.FromDevices(ds, write)
	if err != nil {
		tb.Fatal(err)
	}
	fs, err := OpenVolume(vol)
	if err != nil {
		tb.Fatal(err)
	}
	return fs
}

// TestCommitReopen drives random tree changes through real transactions
// on every profile, commits, crashes the devices (dropping anything not
// flushed) and reopens, checking contents, space accounting and every
// tree's invariants.
func TestCommitReopen(t *testing.T) {
	for _, tc := range []struct {
		devs       int
		data, meta format.Profile
	}{
		{1, format.ProfileSingle, format.ProfileDup},
		{1, format.ProfileDup, format.ProfileSingle},
		{2, format.ProfileRaid0, format.ProfileRaid1},
		{3, format.ProfileRaid1C3, format.ProfileRaid1C3},
		{4, format.ProfileRaid10, format.ProfileRaid10},
	} {
		t.Run(fmt.Sprintf("%d-%v-%v", tc.devs, tc.data, tc.meta), func(t *testing.T) {
			devs := memDevs(tc.devs, 1<<30)
			fs := create(t, devs, tc.data, tc.meta)
			r := rand.New(rand.NewPCG(uint64(tc.devs), 7))
			model := map[format.Key][]byte{}
			for round := 0; round < 6; round++ {
				tx, err := fs.Begin()
				if err != nil {
					t.Fatal(err)
				}
				tree := tx.Tree(format.FSTree)
				for i := 0; i < 400; i++ {
					k := format.Key{ObjectID: uint64(r.IntN(2000)), Type: format.InodeItemKey}
					if r.IntN(3) == 0 {
						if _, ok := model[k]; ok {
							if err := tree.Delete(k); err != nil {
								t.Fatal(err)
							}
							delete(model, k)
						}
						continue
					}
					v := bytes.Repeat([]byte{byte(i)}, r.IntN(300))
					if err := tree.Put(k, v); err != nil {
						t.Fatal(err)
					}
					model[k] = v
				}
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
				fs = reopen(t, devs, true)
				checkModel(t, fs, model)
				checkSpace(t, fs)
			}
		})
	}
}

func checkModel(t *testing.T, fs *FS, model map[format.Key][]byte) {
	t.Helper()
	n := 0
	tree := fs.Tree(format.FSTree)
	for it := tree.First(); it.Valid(); it.Next() {
		want, ok := model[it.Key()]
		if !ok || !bytes.Equal(want, it.Item().Data) {
			t.Fatalf("item %v: not in model or different", it.Key())
		}
		n++
	}
	if n != len(model) {
		t.Fatalf("tree has %d items, model %d", n, len(model))
	}
	for id := format.TreeID(1); id <= format.NumTrees; id++ {
		if err := fs.Tree(id).Verify(); err != nil {
			t.Fatal(err)
		}
	}
}

// checkSpace recounts every node of every tree and checks it against the
// metadata items and block group usage.
func checkSpace(t *testing.T, fs *FS) {
	t.Helper()
	nodes := map[uint64]bool{}
	for id := format.TreeID(1); id <= format.NumTrees; id++ {
		root := fs.sb.Roots.Root(id)
		if root.Logical == 0 {
			continue
		}
		var walk func(l, g uint64, level int)
		walk = func(l, g uint64, level int) {
			n, err := fs.readNode(id, l, g, level, nil)
			if err != nil {
				t.Fatal(err)
			}
			if nodes[l] {
				t.Fatalf("node %d referenced twice", l)
			}
			nodes[l] = true
			for _, p := range n.Ptrs {
				walk(p.Logical, p.Generation, level-1)
			}
		}
		walk(root.Logical, root.Generation, int(root.Level))
	}
	items := map[uint64]bool{}
	used := map[uint64]uint64{}
	err := fs.Tree(format.ExtentTree).Scan(format.Key{}, format.MaxKey, func(it format.Item) (bool, error) {
		if it.Key.Type == format.MetadataItemKey {
			items[it.Key.ObjectID] = true
			used[fs.blockGroup(it.Key.ObjectID).Chunk.Logical] += uint64(fs.sb.NodeSize)
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != len(nodes) {
		t.Fatalf("%d nodes reachable, %d metadata items", len(nodes), len(items))
	}
	for l := range nodes {
		if !items[l] {
			t.Fatalf("node %d has no metadata item", l)
		}
	}
	for _, bg := range fs.bgs {
		if bg.Used != used[bg.Chunk.Logical] {
			t.Fatalf("block group %d: used %d, items say %d", bg.Chunk.Logical, bg.Used, used[bg.Chunk.Logical])
		}
	}
}

// TestCrashBeforeSuper: a transaction whose superblocks never became
// durable leaves the previous state intact.
func TestCrashBeforeSuper(t *testing.T) {
	devs := memDevs(2, 256<<20)
	fs := create(t, devs, format.ProfileRaid1, format.ProfileRaid1)
	tx, _ := fs.Begin()
	k := format.Key{ObjectID: 300, Type: format.InodeItemKey}
	if err := tx.Tree(format.FSTree).Insert(k, []byte("old")); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	tx, _ = fs.Begin()
	if err := tx.Tree(format.FSTree).Put(k, []byte("new")); err != nil {
		t.Fatal(err)
	}
	// Write the nodes but "crash" before the superblocks: reopen from the
	// durable state only.
	if err := tx.writeNodes(); err != nil {
		t.Fatal(err)
	}
	fs2 := reopen(t, devs, true)
	v, err := fs2.Tree(format.FSTree).Get(k)
	if err != nil || string(v) != "old" {
		t.Fatalf("got %q, %v; want old", v, err)
	}
}

func TestReadOnlyRefusesWrites(t *testing.T) {
	devs := memDevs(1, 128<<20)
	create(t, devs, format.ProfileSingle, format.ProfileDup)
	vol, err := volume.FromDevices([]device.Device{devs[0]}, false)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := OpenVolume(vol)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Begin(); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("got %v", err)
	}
	if _, err := fs.Tree(format.FSTree).Get(format.Key{ObjectID: 1}); !errors.Is(err, btree.ErrNotFound) {
		t.Fatalf("got %v", err)
	}
}

// TestNoSpace: filling the metadata space fails with ErrNoSpace, and the
// last committed state is intact after reopening.
func TestNoSpace(t *testing.T) {
	devs := memDevs(1, 48<<20)
	fs := create(t, devs, format.ProfileSingle, format.ProfileDup)
	committed := 0
	var failure error
	for round := 0; round < 1000 && failure == nil; round++ {
		tx, err := fs.Begin()
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 50; i++ {
			k := format.Key{ObjectID: uint64(round*50 + i), Type: format.InodeItemKey}
			if err := tx.Tree(format.FSTree).Insert(k, make([]byte, 1500)); err != nil {
				failure = err
				break
			}
		}
		if failure == nil {
			failure = tx.Commit()
			if failure == nil {
				committed += 50
			}
		} else {
			tx.Abort()
		}
	}
	if !errors.Is(failure, ErrNoSpace) {
		t.Fatalf("filling up ended with %v", failure)
	}
	if _, err := fs.Begin(); err == nil {
		t.Fatal("a failed transaction must leave the handle unusable")
	}
	fs2 := reopen(t, devs, true)
	n := 0
	for it := fs2.Tree(format.FSTree).First(); it.Valid(); it.Next() {
		n++
	}
	if n != committed || committed == 0 {
		t.Fatalf("after ENOSPC: %d items, %d committed", n, committed)
	}
	checkSpace(t, fs2)
}
