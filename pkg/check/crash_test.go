package check

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
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
			r := rand.New(rand.NewPCG(11, uint64(l.devs)))
			models, made := recordXattrGenerations(t, log, l, size, r)
			ops := log.Ops()
			points := replayEveryPrefix(t, ops, made, l.devs, size, models)
			points += replayUnflushed(t, ops, made, l.devs, size, models, r)
			if points < len(ops)/2 {
				t.Fatalf("only %d of %d crash points held a filesystem", points, len(ops))
			}
			t.Logf("%d crash points verified (%d ops)", points, len(ops))
		})
	}
}

// loggedParams are mkfs parameters for l.devs memory devices of size
// bytes, each wrapped so that log records its writes and flushes.
func loggedParams(log *device.Log, fsid byte, l layout, size int64) store.CreateParams {
	p := store.CreateParams{FSID: [16]byte{fsid}, Csum: format.CsumCRC32C, NodeSize: 4096, SectorSize: 4096, Data: l.data, Metadata: l.meta}
	for i := 0; i < l.devs; i++ {
		d := device.NewMemDevice(fmt.Sprintf("d%d", i), size)
		p.Devices = append(p.Devices, store.NewDevice{Dev: log.Wrap(d, i), Path: d.Name()})
	}
	return p
}

// recordXattrGenerations makes a filesystem on logged devices and commits
// generations of xattr puts and deletes on its root directory: it returns
// the FS tree of every committed generation and how many of the log's
// operations mkfs made.
func recordXattrGenerations(t *testing.T, log *device.Log, l layout, size int64, r *rand.Rand) (map[uint64]snapshot, int) {
	t.Helper()
	// Generation 1 holds the root directory; the transactions
	// then put and delete xattrs of it.
	fs, tx, err := store.CreateTx(loggedParams(log, 3, l, size))
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
	for g := 0; g < 6; g++ {
		gen := commitXattrs(t, fs, g, cur, r)
		models[gen] = maps.Clone(cur)
	}
	return models, made
}

// commitXattrs commits one transaction (the g-th) of 120 random xattr
// puts and deletes on the root directory, applies them to cur, and
// returns the transaction's generation.
func commitXattrs(t *testing.T, fs *store.FS, g int, cur snapshot, r *rand.Rand) uint64 {
	t.Helper()
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
	return tx.Generation()
}

// replayEveryPrefix rebuilds the devices after every operation past mkfs
// (in order) and verifies each state; it returns how many held a
// filesystem.
func replayEveryPrefix(t *testing.T, ops []device.Op, made, n int, size int64, models map[uint64]snapshot) int {
	t.Helper()
	points := 0
	for upto := made; upto <= len(ops); upto++ {
		devs := fresh(n, size)
		if err := device.Replay(ops, upto, devs); err != nil {
			t.Fatal(err)
		}
		if verifyCrashState(t, devs, models, fmt.Sprintf("prefix %d/%d", upto, len(ops))) {
			points++
		}
	}
	return points
}

// replayUnflushed verifies crashes with unflushed writes: per device,
// what it had before its own last flush and a random subset of the rest.
// It returns how many states held a filesystem.
func replayUnflushed(t *testing.T, ops []device.Op, made, n int, size int64, models map[uint64]snapshot, r *rand.Rand) int {
	t.Helper()
	points := 0
	for trial := 0; trial < 200; trial++ {
		upto := made + 1 + r.IntN(len(ops)-made)
		devs := fresh(n, size)
		if err := device.ReplayCrash(ops, upto, devs, r); err != nil {
			t.Fatal(err)
		}
		if verifyCrashState(t, devs, models, fmt.Sprintf("crash with unflushed writes after op %d", upto)) {
			points++
		}
	}
	return points
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
	vol, err := volume.FromDevices(asDevices(devs), false)
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
	checkCrashClean(t, vol, fmt.Sprintf("%s: generation %d", where, gen))
	return true
}

// checkCrashClean checks vol and fails the test, naming where, on any
// problem but the traces a crash may leave.
func checkCrashClean(t *testing.T, vol *volume.Volume, where string) {
	t.Helper()
	rep, err := CheckVolume(vol)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Problems {
		// A superblock copy one generation behind is expected mid-commit;
		// everything else must be clean.
		if !CrashTrace(p, rep.Generation) {
			t.Fatalf("%s: %v", where, p)
		}
	}
}
