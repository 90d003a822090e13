package check

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

type snapshot map[format.Key]string

// TestCrashReplay records every write and flush of mkfs plus a series of
// transactions, then rebuilds the devices as a crash would leave them
// after every operation (in order), and at random points with a random
// subset of the unflushed writes applied and the last one torn. Each
// state must open, check clean, and hold exactly the contents of some
// committed generation.
func TestCrashReplay(t *testing.T) {
	for _, l := range []layout{
		{1, format.ProfileSingle, format.ProfileDup},
		{2, format.ProfileRaid0, format.ProfileRaid1},
		{4, format.ProfileRaid10, format.ProfileRaid10},
	} {
		t.Run(fmt.Sprintf("%d-%v-%v", l.devs, l.data, l.meta), func(t *testing.T) {
			const size = 160 << 20
			log := device.NewLog()
			p := store.CreateParams{FSID: [16]byte{3}, Csum: format.CsumCRC32C, NodeSize: 4096, SectorSize: 4096, Data: l.data, Metadata: l.meta}
			for i := 0; i < l.devs; i++ {
				d := device.NewMemDevice(fmt.Sprintf("d%d", i), size)
				p.Devices = append(p.Devices, store.NewDevice{Dev: log.Wrap(d, i), Path: d.Name()})
			}
			// Generation 1 holds the root directory; the transactions
			// then put and delete xattrs of it.
			fs, tx, err := store.CreateTx(p)
			if err != nil {
				t.Fatal(err)
			}
			rootKey := format.Key{ObjectID: format.RootDirIno, Type: format.InodeItemKey}
			rootItem := format.MarshalInodeItem(&format.InodeItem{Generation: 1, Nlink: 2, Mode: format.ModeDir | 0o755, Seq: 2})
			if err := tx.Tree(format.FSTree).Insert(rootKey, rootItem); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			made := len(log.Ops()) // a crash inside mkfs promises nothing
			models := map[uint64]snapshot{1: {rootKey: string(rootItem)}}
			cur := snapshot{rootKey: string(rootItem)}
			r := rand.New(rand.NewPCG(11, uint64(l.devs)))
			for g := 0; g < 6; g++ {
				tx, err := fs.Begin()
				if err != nil {
					t.Fatal(err)
				}
				for i := 0; i < 120; i++ {
					name := fmt.Sprintf("user.k%d", r.IntN(300))
					k := format.Key{ObjectID: format.RootDirIno, Type: format.XattrItemKey, Offset: format.NameHash([]byte(name))}
					if _, ok := cur[k]; ok && r.IntN(3) == 0 {
						if err := tx.Tree(format.FSTree).Delete(k); err != nil {
							t.Fatal(err)
						}
						delete(cur, k)
						continue
					}
					v := fmt.Sprintf("gen %d item %d %s", g, i, bytes.Repeat([]byte("x"), r.IntN(200)))
					b := format.MarshalXattrs([]format.Xattr{{Name: name, Value: []byte(v)}})
					if err := tx.Tree(format.FSTree).Put(k, b); err != nil {
						t.Fatal(err)
					}
					cur[k] = string(b)
				}
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
				snap := snapshot{}
				for k, v := range cur {
					snap[k] = v
				}
				models[tx.Generation()] = snap
			}
			ops := log.Ops()
			points := 0
			for upto := made; upto <= len(ops); upto++ {
				devs := fresh(l.devs, size)
				if err := device.Replay(ops, upto, devs); err != nil {
					t.Fatal(err)
				}
				if verifyCrashState(t, devs, models, fmt.Sprintf("prefix %d/%d", upto, len(ops))) {
					points++
				}
			}
			// Crashes with unflushed writes: per device, what it had before
			// its own last flush and a random subset of the rest.
			for trial := 0; trial < 200; trial++ {
				upto := made + 1 + r.IntN(len(ops)-made)
				devs := fresh(l.devs, size)
				if err := device.ReplayCrash(ops, upto, devs, r); err != nil {
					t.Fatal(err)
				}
				if verifyCrashState(t, devs, models, fmt.Sprintf("crash with unflushed writes after op %d", upto)) {
					points++
				}
			}
			if points < len(ops)/2 {
				t.Fatalf("only %d of %d crash points held a filesystem", points, len(ops))
			}
			t.Logf("%d crash points verified (%d ops)", points, len(ops))
		})
	}
}

func fresh(n int, size int64) []*device.MemDevice {
	var out []*device.MemDevice
	for i := 0; i < n; i++ {
		out = append(out, device.NewMemDevice(fmt.Sprintf("d%d", i), size))
	}
	return out
}

// verifyCrashState reports false when no superblock was durable yet (the
// crash hit mkfs itself), and fails the test on any other problem.
func verifyCrashState(t *testing.T, devs []*device.MemDevice, models map[uint64]snapshot, where string) bool {
	t.Helper()
	var ds []device.Device
	for _, d := range devs {
		ds = append(ds, d)
	}
	vol, err := volume.FromDevices(ds, false)
	if errors.Is(err, volume.ErrNoSuperblock) {
		return false
	}
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	fs, err := store.OpenVolume(vol)
	if err != nil {
		t.Fatalf("%s: open: %v", where, err)
	}
	gen := fs.Super().Generation
	want, ok := models[gen]
	if !ok {
		t.Fatalf("%s: generation %d was never committed", where, gen)
	}
	n := 0
	for it := fs.Tree(format.FSTree).First(); it.Valid(); it.Next() {
		if want[it.Key()] != string(it.Item().Data) {
			t.Fatalf("%s: generation %d: item %v differs from the model", where, gen, it.Key())
		}
		n++
	}
	if n != len(want) {
		t.Fatalf("%s: generation %d: %d items, model has %d", where, gen, n, len(want))
	}
	rep, err := CheckVolume(vol)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		// A superblock copy one generation behind is expected mid-commit;
		// everything else must be clean.
		if !CrashTrace(p, rep.Generation) {
			t.Fatalf("%s: generation %d: %v", where, gen, p)
		}
	}
	return true
}
