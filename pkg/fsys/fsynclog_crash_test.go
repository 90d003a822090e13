package fsys

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/ddfs/ddfs/pkg/check"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// cutDev is a device whose writes fail after budget of them (a power cut
// at that point; what was written but not flushed may or may not land).
type cutDev struct {
	*device.MemDevice
	budget *int
}

var errCut = errors.New("power cut")

func (c cutDev) WriteAt(p []byte, off int64) (int, error) {
	if *c.budget <= 0 {
		return 0, errCut
	}
	*c.budget--
	return c.MemDevice.WriteAt(p, off)
}

func (c cutDev) Flush() error {
	if *c.budget <= 0 {
		return errCut
	}
	return c.MemDevice.Flush()
}

const crashFsyncs = 5

// fsyncRun opens base (a committed 1 MiB /f) through a device cut after
// budget writes and fsyncs crashFsyncs random overwrites; models[i] is
// the file after fsync i (models[0]: as committed). It returns how many
// fsyncs returned success and the writes left.
func fsyncRun(t *testing.T, d *device.MemDevice, budget int) (models [][]byte, done, left int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(37, 7))
	f := openWith(t, []device.Device{cutDev{d, &budget}}, true, Options{})
	in, err := f.Resolve("/f", true)
	if err != nil {
		t.Fatal(err)
	}
	model := readAll(t, f, "/f")
	models = append(models, bytes.Clone(model))
	for i := 0; i < crashFsyncs; i++ {
		overwrite(t, f, in, model, rng)
		models = append(models, bytes.Clone(model))
		if err := f.Fsync(in); err != nil {
			if !errors.Is(err, errCut) {
				t.Fatalf("fsync %d: %v", i+1, err)
			}
			return models, done, budget
		}
		done++
	}
	return models, done, budget
}

// TestFsyncLogCrashMatrix cuts the power after every write of a run of
// fsyncs (a random subset of the unflushed writes lands, the last one
// maybe torn), then during the replay of a whole log: every fsync that
// returned is there after the next open, the file is one of the states
// the fsyncs left, and fsck finds the set clean.
func TestFsyncLogCrashMatrix(t *testing.T) {
	f, devs := newTestFS(t, 128<<20, 1)
	fsyncFile(t, f, rand.New(rand.NewPCG(37, 8)), 1<<20)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	base := devs[0].Snapshot()
	whole := base.Snapshot()
	models, done, left := fsyncRun(t, whole, 1<<30)
	if done != crashFsyncs {
		t.Fatalf("uncut run: %d fsyncs", done)
	}
	writes := 1<<30 - left
	t.Logf("%d writes for %d fsyncs", writes, done)
	for cut := 0; cut < writes; cut++ {
		d := base.Snapshot()
		_, done, _ := fsyncRun(t, d, cut)
		d.CrashPartial(rand.New(rand.NewPCG(uint64(cut), 9)))
		afterCrash(t, d, models, done, cut)
	}
	// Replay cut short: the log of the uncut run, then a cut in the
	// writable open that replays it.
	whole.Crash()
	for cut := 0; ; cut++ {
		d := whole.Snapshot()
		budget := cut
		vol, err := volume.FromDevices([]device.Device{cutDev{d, &budget}}, true)
		if err != nil {
			t.Fatal(err)
		}
		_, err = store.OpenVolume(vol)
		d.CrashPartial(rand.New(rand.NewPCG(uint64(cut), 10)))
		afterCrash(t, d, models, crashFsyncs, -cut)
		if err == nil {
			t.Logf("replay cut at each of its %d writes", cut)
			break
		}
		if !errors.Is(err, errCut) {
			t.Fatalf("replay cut at %d: %v", cut, err)
		}
	}
}

// afterCrash opens d after a crash and wants /f to be the state of fsync
// done or a later one, then a clean fsck.
func afterCrash(t *testing.T, d *device.MemDevice, models [][]byte, done, cut int) {
	t.Helper()
	g := openDevices(t, []device.Device{d})
	got := readAll(t, g, "/f")
	ok := false
	for _, m := range models[done:] {
		ok = ok || bytes.Equal(got, m)
	}
	if !ok {
		t.Fatalf("cut %d: /f is not the state of fsync %d or a later one", cut, done)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	// A cut between superblock writes leaves older copies: a warning
	// the next commit clears, like any crashed commit's.
	for _, p := range checkVol(t, d).Problems {
		if p.Code != check.SuperGeneration {
			t.Fatalf("cut %d: fsck: %v", cut, p)
		}
	}
}
