package fsys

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/check"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// fsyncFile makes /f of size bytes of random data, committed.
func fsyncFile(t *testing.T, f *FS, rng *rand.Rand, size int) (*Inode, []byte) {
	t.Helper()
	in, err := f.Create("/f", Attr{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	model := make([]byte, size)
	for i := range model {
		model[i] = byte(rng.Uint32())
	}
	if err := f.WriteAt(in, model, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	return in, model
}

// overwrite writes a random 4 KiB block at a random 4K offset, in the
// file and in the model.
func overwrite(t *testing.T, f *FS, in *Inode, model []byte, rng *rand.Rand) {
	t.Helper()
	off := rng.IntN(len(model)/4096) * 4096
	p := make([]byte, 4096)
	for i := range p {
		p[i] = byte(rng.Uint32())
	}
	if rng.IntN(2) == 0 { // a block seen before, compressible; or zeros: a hole
		p = bytes.Repeat([]byte{byte(rng.IntN(3))}, 4096)
	}
	if err := f.WriteAt(in, p, uint64(off)); err != nil {
		t.Fatal(err)
	}
	copy(model[off:], p)
}

// TestFsyncLogSurvivesCrash: fsyncs of random overwrites write log blocks,
// not commits; after a crash the first open (read-only: in memory) shows
// the fsynced data, the first writable open replays it in one commit,
// and fsck finds the result clean.
func TestFsyncLogSurvivesCrash(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings func(*format.Settings)
	}{
		{"plain", nil},
		// Shared blocks (committed and of this transaction) and compressed
		// extents, clipped by later overwrites.
		{"dedupe+s2", func(s *format.Settings) { s.Dedupe, s.Compression = true, format.CompressS2 }},
	} {
		t.Run(tc.name, func(t *testing.T) { fsyncSurvives(t, tc.settings) })
	}
}

func fsyncSurvives(t *testing.T, settings func(*format.Settings)) {
	rng := rand.New(rand.NewPCG(37, 1))
	f, devs := newTestFS(t, 256<<20, 1)
	if settings != nil {
		if err := f.st.UpdateSettings(func(s *format.Settings) error { settings(s); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	in, model := fsyncFile(t, f, rng, 1<<20)
	gen := f.st.Super().Generation
	for i := 0; i < 40; i++ {
		overwrite(t, f, in, model, rng)
		if i%9 == 5 { // grow the file: the size comes from the log
			p := bytes.Repeat([]byte{byte(i)}, 4096)
			if err := f.WriteAt(in, p, uint64(len(model))); err != nil {
				t.Fatal(err)
			}
			model = append(model, p...)
		}
		if i%7 == 3 {
			if err := f.Truncate(in, uint64(len(model))-4096); err != nil {
				t.Fatal(err)
			}
			if err := f.Truncate(in, uint64(len(model))); err != nil {
				t.Fatal(err)
			}
			clear(model[len(model)-4096:])
		}
		if err := f.Fsync(in); err != nil {
			t.Fatal(err)
		}
	}
	if g := f.st.Super().Generation; g != gen {
		t.Fatalf("fsyncs committed: generation %d -> %d", gen, g)
	}
	if n := f.st.LogBlocks; n != 40 {
		t.Fatalf("log blocks written: %d, want 40", n)
	}
	devs[0].Crash()
	if rep := checkVol(t, devs[0]); len(rep.Problems) > 0 || rep.FsyncLog == nil || rep.FsyncLog.Blocks != 40 || rep.FsyncLog.Records != 40 {
		t.Fatalf("fsck -n of a set with a pending log: problems %v, log %+v", rep.Problems, rep.FsyncLog)
	}

	ro := openReadOnly(t, devs[0])
	if got := readAll(t, ro, "/f"); !bytes.Equal(got, model) {
		t.Fatal("read-only open after the crash: the fsynced data is not there")
	}
	if !ro.st.LogPending() {
		t.Fatal("read-only open cleared the log")
	}
	g := reopenFS(t, devs)
	if g.st.LogPending() || g.st.Super().Generation != gen+1 {
		t.Fatalf("writable open: log pending %v, generation %d (want %d)", g.st.LogPending(), g.st.Super().Generation, gen+1)
	}
	if got := readAll(t, g, "/f"); !bytes.Equal(got, model) {
		t.Fatal("after the replay: the fsynced data is not there")
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	checkClean(t, devs[0])
}

func openReadOnly(t *testing.T, d *device.MemDevice) *FS {
	t.Helper()
	return openWith(t, []device.Device{d}, false, Options{Now: func() time.Time { return epoch }})
}

func checkVol(t *testing.T, d *device.MemDevice) *check.Report {
	t.Helper()
	vol, err := volume.FromDevices([]device.Device{d}, false)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := check.CheckVolume(vol, check.Options{CheckData: true})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func checkClean(t *testing.T, d *device.MemDevice) {
	t.Helper()
	if rep := checkVol(t, d); len(rep.Problems) > 0 || rep.FsyncLog != nil {
		t.Fatalf("fsck: %v, log %+v", rep.Problems, rep.FsyncLog)
	}
}

// countingDev counts the bytes written to a device.
type countingDev struct {
	device.Device
	n *atomic.Int64
}

func (c countingDev) WriteAt(p []byte, off int64) (int, error) {
	c.n.Add(int64(len(p)))
	return c.Device.WriteAt(p, off)
}

// TestFsyncLogWritesLittle: an fsync after a 4 KiB overwrite writes a log
// block, its data and the superblocks, far less than a commit.
func TestFsyncLogWritesLittle(t *testing.T) {
	for _, log := range []bool{true, false} {
		rng := rand.New(rand.NewPCG(37, 2))
		f, devs := newTestFS(t, 256<<20, 1)
		fsyncFile(t, f, rng, 8<<20)
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		var n atomic.Int64
		g := openWith(t, []device.Device{countingDev{devs[0], &n}}, true, Options{NoFsyncLog: !log})
		in, err := g.Resolve("/f", true)
		if err != nil {
			t.Fatal(err)
		}
		model := readAll(t, g, "/f")
		const writes = 50
		for i := 0; i < writes; i++ {
			overwrite(t, g, in, model, rng)
			if err := g.Fsync(in); err != nil {
				t.Fatal(err)
			}
		}
		perByte := float64(n.Load()) / (writes * 4096)
		t.Logf("log %v: %.1f bytes written per byte", log, perByte)
		// Data, a 4K block twice (DUP), 2 superblocks: 5; a commit
		// rewrites a path in four trees, every 16K node twice.
		if log && perByte > 6 || !log && perByte < 20 {
			t.Fatalf("log %v: %.1f bytes written per byte", log, perByte)
		}
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFsyncLogKeepsLoggedSpace: a data extent a log block names stays
// taken when the running transaction drops it, so nothing written after
// the fsync can land where a replay will look for the fsynced data.
func TestFsyncLogKeepsLoggedSpace(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 5))
	f, _ := newTestFS(t, 256<<20, 1)
	in, model := fsyncFile(t, f, rng, 1<<20)
	overwrite(t, f, in, model, rng)
	if err := f.Fsync(in); err != nil {
		t.Fatal(err)
	}
	var logged uint64
	for l := range f.loggedData {
		logged = l
	}
	if logged == 0 {
		t.Fatal("the fsync logged no new data extent")
	}
	// Overwrite everything: the logged extent loses its last reference.
	if err := f.WriteAt(in, make([]byte, len(model)), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.tx.ClaimData(logged, 4096); err == nil {
		t.Fatal("the logged extent's space is free again before the commit")
	}
}

// TestFsyncLogFallsBack: what a record cannot say commits instead: a file
// created since the commit, an xattr, a directory.
func TestFsyncLogFallsBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 3))
	f, _ := newTestFS(t, 256<<20, 1)
	in, err := f.Create("/new", Attr{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.WriteAt(in, []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	gen := f.st.Super().Generation
	if err := f.Fsync(in); err != nil || f.st.Super().Generation != gen+1 {
		t.Fatalf("fsync of a new file: %v, generation %d, want a commit", err, f.st.Super().Generation)
	}
	old, _ := fsyncFile(t, f, rng, 64<<10)
	if err := f.SetXattr(old, "user.a", []byte("b")); err != nil {
		t.Fatal(err)
	}
	gen = f.st.Super().Generation
	if err := f.Fsync(old); err != nil || f.st.Super().Generation != gen+1 {
		t.Fatalf("fsync after an xattr: %v, want a commit", err)
	}
	if err := f.Fsync(old); err != nil || f.st.LogBlocks != 0 {
		t.Fatalf("fsync with nothing changed: %v, %d log blocks", err, f.st.LogBlocks)
	}
}

// TestFsyncLogRefusesBadRecords: a log whose record names data space the
// trees use is refused (replay and read-only open), never applied.
func TestFsyncLogRefusesBadRecords(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 4))
	f, devs := newTestFS(t, 256<<20, 1)
	in, model := fsyncFile(t, f, rng, 1<<20)
	xs, err := f.extents(in.Ino, 0, 1)
	if err != nil || len(xs) != 1 {
		t.Fatal(xs, err)
	}
	used := xs[0].DiskLogical
	overwrite(t, f, in, model, rng)
	// A record whose new data claims the file's own committed extent.
	rec := &format.LogRecord{Ino: in.Ino, Inode: in.InodeItem, Ranges: []format.LogRange{{Start: 0, End: 4096}},
		Extents: []format.LogExtent{{Off: 0, Item: format.FileExtentItem{Type: format.FileExtentRegular, DiskLogical: used, DiskLen: 4096, NumBytes: 4096, RAMBytes: 4096}}},
		New:     []format.LogData{{Logical: used, DiskLen: 4096, Item: format.ExtentItem{Refs: 1, RAMBytes: 4096}, Csums: make([]byte, 4)}}}
	if err := f.tx.WriteLog(format.MarshalLogRecord(nil, rec)); err != nil {
		t.Fatal(err)
	}
	devs[0].Crash()
	if rep := checkVol(t, devs[0]); len(rep.Problems) != 1 || rep.Problems[0].Code != check.LogBad {
		t.Fatalf("fsck: %v, want one LOG_BAD", rep.Problems)
	}
	vol, err := volume.FromDevices([]device.Device{devs[0]}, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.OpenVolume(vol); !errors.Is(err, format.ErrCorrupt) {
		t.Fatalf("writable open of a log claiming used space: %v, want ErrCorrupt", err)
	}
	vol, err = volume.FromDevices([]device.Device{devs[0]}, false)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenVolume(vol)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(st, Options{}); !errors.Is(err, format.ErrCorrupt) {
		t.Fatalf("read-only open: %v, want ErrCorrupt", err)
	}
}

// TestFsyncLogBadBlock: a log block that no copy reads is LOG_BAD to
// fsck, and writable opens refuse the set.
func TestFsyncLogBadBlock(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 6))
	f, devs := newTestFS(t, 256<<20, 1)
	in, model := fsyncFile(t, f, rng, 1<<20)
	overwrite(t, f, in, model, rng)
	if err := f.Fsync(in); err != nil {
		t.Fatal(err)
	}
	sb := f.st.Super()
	targets, err := f.st.Vol.Locate(sb.LogRoot)
	if err != nil || len(targets) == 0 {
		t.Fatal(targets, err)
	}
	for _, tg := range targets { // every copy: a bit flipped in the payload
		b := make([]byte, 1)
		devs[0].ReadAt(b, int64(tg.Physical)+100)
		b[0] ^= 1
		devs[0].WriteAt(b, int64(tg.Physical)+100)
	}
	devs[0].Flush()
	devs[0].Crash()
	rep := checkVol(t, devs[0])
	if len(rep.Problems) != 1 || rep.Problems[0].Code != check.LogBad {
		t.Fatalf("fsck: %v, want one LOG_BAD", rep.Problems)
	}
	vol, err := volume.FromDevices([]device.Device{devs[0]}, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.OpenVolume(vol); !errors.Is(err, format.ErrChecksum) {
		t.Fatalf("writable open: %v, want a checksum error", err)
	}
}

// TestFsyncLogRangesBounded: a file written in more disjoint pieces than
// a record holds stops collecting them (its fsync commits), so random
// writes do not re-sort an ever-growing list on every write.
func TestFsyncLogRangesBounded(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 11))
	f, _ := newTestFS(t, 256<<20, 1)
	in, _ := fsyncFile(t, f, rng, 4<<20)
	p := bytes.Repeat([]byte{9}, 4096)
	for i := 0; i <= 2*maxLogRanges; i += 2 {
		if err := f.WriteAt(in, p, uint64(i)*4096); err != nil {
			t.Fatal(err)
		}
		if s := f.logs[in.Ino]; len(s.ranges) > maxLogRanges+1 {
			t.Fatalf("write %d: %d ranges kept", i/2, len(s.ranges))
		}
	}
	if s := f.logs[in.Ino]; !s.unloggable || s.ranges != nil {
		t.Fatalf("after %d disjoint writes: unloggable %v, %d ranges", maxLogRanges+1, s.unloggable, len(s.ranges))
	}
	gen := f.st.Super().Generation
	if err := f.Fsync(in); err != nil {
		t.Fatal(err)
	}
	if f.st.Super().Generation != gen+1 {
		t.Fatal("the fsync of an unloggable file did not commit")
	}
}
