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
}

func (c Config) String() string {
	return fmt.Sprintf("seed=%d devices=%d data=%v meta=%v ops=%d batch=%d", c.Seed, c.Devices, c.Data, c.Meta, c.Ops, c.BatchNodes)
}

// Result counts what was checked.
type Result struct {
	Points      int // crash states verified
	Generations int // commits of the workload
	Writes      int // recorded operations
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
	opt := fsys.Options{Now: epoch, BatchNodes: cfg.BatchNodes, OnCommit: rec.snap}
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
	_, rec, err := recordWorkload(cfg, log)
	if err != nil {
		return Result{}, err
	}
	states := rec.states
	ops := log.Ops()
	res := Result{Generations: len(states), Writes: len(ops)}
	stride := max(cfg.Stride, 1)
	for upto := 0; upto <= len(ops); upto += stride {
		devs := fresh(cfg)
		if err := device.Replay(ops, upto, devs); err != nil {
			return res, err
		}
		ok, err := verify(devs, states)
		if err != nil {
			return res, fmt.Errorf("%v: crash after write %d of %d: %w", cfg, upto, len(ops), err)
		}
		if ok {
			res.Points++
		}
	}
	n, err := replayReordered(ops, cfg.Seed, cfg.Reordered, func() []*device.MemDevice { return fresh(cfg) },
		func(devs []*device.MemDevice) (bool, error) { return verify(devs, states) })
	res.Points += n
	if err != nil {
		return res, fmt.Errorf("%v: %w", cfg, err)
	}
	return res, nil
}

// replayReordered verifies n crash states that keep the writes up to a
// random flush and a random subset of the writes after it, applied in any
// order with the last one torn; devs makes the starting devices. It
// returns the states verified.
func replayReordered(ops []device.Op, seed uint64, n int, devs func() []*device.MemDevice, verify func([]*device.MemDevice) (bool, error)) (int, error) {
	r := rand.New(rand.NewPCG(seed, 1))
	flushes := device.FlushPoints(ops)
	points := 0
	for i := 0; i < n && len(flushes) > 0; i++ {
		fi := r.IntN(len(flushes))
		base, end := flushes[fi], len(ops)
		if fi+1 < len(flushes) {
			end = flushes[fi+1] - 1
		}
		ds := devs()
		if err := device.Replay(ops, base, ds); err != nil {
			return points, err
		}
		tornApply(r, ops[base:end], ds)
		ok, err := verify(ds)
		if err != nil {
			return points, fmt.Errorf("reordered writes after flush %d: %w", base, err)
		}
		if ok {
			points++
		}
	}
	return points, nil
}

// recordWorkload creates the filesystem on devices recording into log and
// runs the workload, keeping the tree of every committed generation.
func recordWorkload(cfg Config, log *device.Log) (*fsys.FS, *recorder, error) {
	rec := &recorder{states: map[uint64]string{}}
	f, _, err := create(cfg, log.Wrap, rec)
	if err != nil {
		return nil, nil, err
	}
	rec.f = f
	rec.snap()
	if err := workload(cfg, f); err != nil {
		return nil, nil, err
	}
	return f, rec, rec.err
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

// workload runs the operations, committing between them as the tools do.
func workload(cfg Config, f *fsys.FS) error {
	r := rand.New(rand.NewPCG(cfg.Seed, 2))
	for i := 0; i < cfg.Ops; i++ {
		if err := step(f, r, i); err != nil {
			return fmt.Errorf("%v: op %d: %w", cfg, i, err)
		}
		var err error
		if r.IntN(8) == 0 {
			err = f.Sync()
		} else {
			err = f.MaybeCommit()
		}
		if err != nil {
			return err
		}
	}
	return f.Sync()
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
	rep, err := check.CheckVolume(vol)
	if err != nil {
		return false, err
	}
	for _, p := range rep.Problems {
		// A superblock copy that lags or is torn is expected mid-commit.
		if p.Pass != check.PassSuper {
			return false, fmt.Errorf("generation %d: fsck: %v", gen, p)
		}
	}
	return true, nil
}
