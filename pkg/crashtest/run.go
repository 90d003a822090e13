package crashtest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/check"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// Config is one crash test: a seeded workload on a device set.
type Config struct {
	Seed       uint64
	Devices    int
	Data, Meta format.Profile
	Ops        int   // workload operations
	BatchNodes int   // small batches mean many commits
	Stride     int   // replay every Stride-th write prefix (1: all)
	Reordered  int   // states with unflushed writes reordered and torn
	DevSize    int64 // bytes per device
	// Settings: dedupe and compression of the filesystem.
	Settings format.Settings
	// Tails turns strong dedupe tails on and makes every flush of the
	// recorded workload take a millisecond: commits made while memory
	// devices flush at once have no time to make any (fsys.Options).
	Tails bool
	// dropFlush, a test-only mutation, makes the flushes of the devices
	// it names do nothing: the crash model must catch it.
	dropFlush func(dev int) bool
}

func (c Config) String() string {
	return fmt.Sprintf("seed=%d devices=%d data=%v meta=%v ops=%d batch=%d", c.Seed, c.Devices, c.Data, c.Meta, c.Ops, c.BatchNodes)
}

// Result counts what was checked.
type Result struct {
	Points      int // crash states verified
	Generations int // commits of the workload
	Writes      int // recorded operations
	Succeeded   int // workload operations that did not fail a precondition
	Tails       int // strong dedupe tails in the workload's last state
}

var epoch = func() time.Time { return time.Unix(1700000000, 0) }

func create(cfg Config, wrap func(device.Device, int) device.Device, rec *recorder) (*fsys.FS, []*device.MemDevice, error) {
	p := store.CreateParams{FSID: [16]byte{0xc7, byte(cfg.Seed)}, Csum: format.CsumCRC32C, NodeSize: 4096, SectorSize: 4096, Data: cfg.Data, Metadata: cfg.Meta, Settings: cfg.Settings}
	var mems []*device.MemDevice
	for i := 0; i < cfg.Devices; i++ {
		m := device.NewMemDevice(fmt.Sprintf("d%d", i), cfg.DevSize)
		mems = append(mems, m)
		p.Devices = append(p.Devices, store.NewDevice{Dev: wrap(m, i), Path: m.Name()})
	}
	st, tx, err := store.CreateTx(p)
	if err != nil {
		return nil, nil, err
	}
	opt := fsys.Options{Now: epoch, BatchNodes: cfg.BatchNodes, OnCommit: rec.snap, StrongTails: cfg.Tails}
	if rec.pending != nil {
		opt.BeforeCommit = rec.before
	}
	f, err := fsys.New(st, opt)
	if err != nil {
		return nil, nil, err
	}
	f.Adopt(tx)
	if err := f.InitRoot(fsys.Attr{Mode: 0o755}); err != nil {
		return nil, nil, err
	}
	return f, mems, f.Sync()
}

// Run records the workload, then verifies every replayed crash state.
func Run(cfg Config) (Result, error) {
	log := device.NewLog()
	f, rec, made, succeeded, err := recordWorkload(cfg, log)
	if err != nil {
		return Result{}, err
	}
	states := rec.states
	ops := log.Ops()
	res := Result{Generations: len(states), Writes: len(ops), Succeeded: succeeded}
	if res.Tails, err = countTails(f); err != nil {
		return res, err
	}
	stride := max(cfg.Stride, 1)
	copt := check.Options{CheckData: cfg.Tails}
	for upto := made; upto <= len(ops); upto += stride {
		devs := fresh(cfg)
		if err := device.Replay(ops, upto, devs); err != nil {
			return res, err
		}
		ok, err := verifyWith(devs, states, copt)
		if err != nil {
			return res, fmt.Errorf("%v: crash after write %d of %d: %w", cfg, upto, len(ops), err)
		}
		if ok {
			res.Points++
		}
	}
	n, err := replayReordered(ops, made, cfg.Seed, cfg.Reordered, func() []*device.MemDevice { return fresh(cfg) },
		func(devs []*device.MemDevice) (bool, error) { return verifyWith(devs, states, copt) })
	res.Points += n
	if err != nil {
		return res, fmt.Errorf("%v: %w", cfg, err)
	}
	return res, nil
}

// replayReordered verifies n crash states with unflushed writes: a power
// cut after a random op past from, where each device keeps what it had
// before its own last flush and a random subset of the rest, the last one
// possibly torn (device.ReplayCrash); devs makes the starting devices. It
// returns the states verified.
func replayReordered(ops []device.Op, from int, seed uint64, n int, devs func() []*device.MemDevice, verify func([]*device.MemDevice) (bool, error)) (int, error) {
	r := rand.New(rand.NewPCG(seed, 1))
	points := 0
	for i := 0; i < n && len(ops) > from; i++ {
		upto := from + 1 + r.IntN(len(ops)-from)
		ds := devs()
		if err := device.ReplayCrash(ops, upto, ds, r); err != nil {
			return points, err
		}
		ok, err := verify(ds)
		if err != nil {
			return points, fmt.Errorf("crash with unflushed writes after op %d of %d: %w", upto, len(ops), err)
		}
		if ok {
			points++
		}
	}
	return points, nil
}

// recordWorkload creates the filesystem on devices recording into log and
// runs the workload, keeping the tree of every committed generation.
// made is the op count once mkfs's commit is durable (a crash inside mkfs
// promises nothing: mkfs never reported success); succeeded counts the
// workload's operations that succeeded.
func recordWorkload(cfg Config, log *device.Log) (f *fsys.FS, rec *recorder, made, succeeded int, err error) {
	rec = &recorder{states: map[uint64]string{}}
	wrap := func(d device.Device, i int) device.Device {
		d = log.Wrap(d, i)
		switch {
		case cfg.dropFlush != nil && cfg.dropFlush(i):
			return noFlush{d}
		case cfg.Tails:
			return slowFlush{d}
		}
		return d
	}
	if f, _, err = create(cfg, wrap, rec); err != nil {
		return nil, nil, 0, 0, err
	}
	rec.f = f
	rec.snap()
	made = len(log.Ops())
	if succeeded, err = workload(cfg, f); err != nil {
		return nil, nil, 0, 0, err
	}
	return f, rec, made, succeeded, rec.err
}

// recorder keeps the tree of every committed generation (fsys calls
// snap after each commit, also those inside multi-step operations).
type recorder struct {
	f      *fsys.FS
	states map[uint64]string
	err    error
	// around, if set, wraps the snapshot (fault tests lift the faults
	// while reading what was committed).
	around func(func())
	// pending, if set, collects the state each commit is about to make
	// durable, for commits that fail after reaching some devices.
	pending map[uint64]string
}

func (r *recorder) before(gen uint64) {
	if r.f == nil {
		return
	}
	take := func() {
		s, err := treeState(r.f)
		if err == nil {
			r.pending[gen] = s
		}
	}
	if r.around != nil {
		r.around(take)
		return
	}
	take()
}

func (r *recorder) snap() {
	if r.f == nil {
		return // mkfs's own commit: recorded once the FS is known
	}
	if r.around != nil {
		r.around(r.take)
		return
	}
	r.take()
}

func (r *recorder) take() {
	s, err := treeState(r.f)
	if err != nil && r.err == nil {
		r.err = err
	}
	r.states[r.f.Store().Super().Generation] = s
}

// workload runs the operations, committing between them as the tools
// do, and returns how many succeeded.
func workload(cfg Config, f *fsys.FS) (int, error) {
	r := rand.New(rand.NewPCG(cfg.Seed, 2))
	succeeded := 0
	for i := 0; i < cfg.Ops; i++ {
		ok, err := step(f, r, i)
		if err != nil {
			return succeeded, fmt.Errorf("%v: op %d: %w", cfg, i, err)
		}
		if ok {
			succeeded++
		}
		if r.IntN(8) == 0 {
			err = f.Sync()
		} else {
			err = f.MaybeCommit()
		}
		if err != nil {
			return succeeded, err
		}
	}
	return succeeded, f.Sync()
}

func fresh(cfg Config) []*device.MemDevice {
	var out []*device.MemDevice
	for i := 0; i < cfg.Devices; i++ {
		out = append(out, device.NewMemDevice(fmt.Sprintf("d%d", i), cfg.DevSize))
	}
	return out
}

// verify opens a crash state and checks it: false when no superblock was
// durable yet (the crash hit mkfs).
func verify(mems []*device.MemDevice, states map[uint64]string) (bool, error) {
	return verifyWith(mems, states, check.Options{})
}

// verifyWith is verify with fsck's options: with CheckData it reads every
// data block and recomputes every strong tail.
func verifyWith(mems []*device.MemDevice, states map[uint64]string, copt check.Options) (bool, error) {
	var ds []device.Device
	for _, d := range mems {
		ds = append(ds, d)
	}
	vol, err := volume.FromDevices(ds, false)
	if errors.Is(err, volume.ErrNoSuperblock) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	st, err := store.OpenVolume(vol)
	if err != nil {
		return false, fmt.Errorf("open: %w", err)
	}
	gen := st.Super().Generation
	want, ok := states[gen]
	if !ok {
		return false, fmt.Errorf("generation %d was never committed", gen)
	}
	f, err := fsys.New(st, fsys.Options{})
	if err != nil {
		return false, err
	}
	got, err := treeState(f)
	if err != nil {
		return false, fmt.Errorf("generation %d: read tree: %w", gen, err)
	}
	if got != want {
		return false, fmt.Errorf("generation %d: tree differs from the committed one:\n%s\n--- want ---\n%s", gen, got, want)
	}
	rep, err := check.CheckVolume(vol, copt)
	if err != nil {
		return false, err
	}
	for _, p := range rep.Problems {
		// Mid-commit, a superblock copy may still hold the previous
		// generation; anything else is damage.
		if !check.CrashTrace(p, rep.Generation) {
			return false, fmt.Errorf("generation %d: fsck: %v", gen, p)
		}
	}
	return true, nil
}

// noFlush is a device whose Flush does nothing (the dropFlush mutation).
type noFlush struct{ device.Device }

func (noFlush) Flush() error { return nil }

// slowFlush is a device whose Flush takes a millisecond (Config.Tails).
type slowFlush struct{ device.Device }

func (d slowFlush) Flush() error {
	time.Sleep(time.Millisecond)
	return d.Device.Flush()
}

// countTails counts the dedupe entries of f's committed tree that carry a
// strong tail.
func countTails(f *fsys.FS) (int, error) {
	n := 0
	err := f.Store().Tree(format.DedupeTree).Scan(format.Key{}, format.MaxKey, func(it format.Item) (bool, error) {
		if len(it.Data) == format.DedupeItemStrongSize {
			n++
		}
		return true, nil
	})
	return n, err
}
