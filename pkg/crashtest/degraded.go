package crashtest

import (
	"fmt"

	"github.com/ddfs/ddfs/pkg/check"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// RunDegraded is Run on a set that lost its last member: a first workload
// fills the whole set, then a second one runs opened degraded on the
// survivors (new chunks on the present devices only), and every prefix
// of its writes must open degraded as one committed generation and check
// clean but for the missing device; so must states with the writes after
// a flush reordered and torn.
func RunDegraded(cfg Config) (Result, error) {
	f, mems, err := create(cfg, func(d device.Device, _ int) device.Device { return d }, &recorder{states: map[uint64]string{}})
	if err != nil {
		return Result{}, err
	}
	if _, err := workload(cfg, f); err != nil {
		return Result{}, err
	}
	if err := f.Close(); err != nil {
		return Result{}, err
	}
	base := make([]*device.MemDevice, cfg.Devices-1)
	for i := range base {
		base[i] = mems[i].Snapshot()
	}
	log := device.NewLog()
	var ds []device.Device
	for i, m := range survivors(base) {
		ds = append(ds, log.Wrap(m, i))
	}
	vol, err := volume.FromDevices(ds, true)
	if err != nil {
		return Result{}, err
	}
	st, err := store.OpenDegraded(vol)
	if err != nil {
		return Result{}, err
	}
	rec := &recorder{states: map[uint64]string{}}
	if f, err = fsys.New(st, fsys.Options{Now: epoch, BatchNodes: cfg.BatchNodes, OnCommit: rec.snap}); err != nil {
		return Result{}, err
	}
	rec.f = f
	rec.snap()
	cfg.Seed += 1000 // another workload than the first
	if _, err := workload(cfg, f); err != nil {
		return Result{}, err
	}
	if err := f.Close(); err != nil {
		return Result{}, err
	}
	if rec.err != nil {
		return Result{}, rec.err
	}
	ops := log.Ops()
	res := Result{Generations: len(rec.states), Writes: len(ops)}
	for upto := 0; upto <= len(ops); upto += max(cfg.Stride, 1) {
		devs := survivors(base)
		if err := device.Replay(ops, upto, devs); err != nil {
			return res, err
		}
		if err := verifyDegraded(devs, rec.states); err != nil {
			return res, fmt.Errorf("%v degraded: crash after write %d of %d: %w", cfg, upto, len(ops), err)
		}
		res.Points++
	}
	n, err := replayReordered(ops, 0, cfg.Seed, cfg.Reordered, func() []*device.MemDevice { return survivors(base) },
		func(devs []*device.MemDevice) (bool, error) { return true, verifyDegraded(devs, rec.states) })
	res.Points += n
	if err != nil {
		return res, fmt.Errorf("%v degraded: %w", cfg, err)
	}
	return res, nil
}

// survivors copies the durable state of the surviving members.
func survivors(base []*device.MemDevice) []*device.MemDevice {
	out := make([]*device.MemDevice, len(base))
	for i, m := range base {
		out[i] = m.Snapshot()
	}
	return out
}

// verifyDegraded opens a crash state of a degraded set and checks that it
// is a committed generation and that fsck finds nothing but the missing
// member (and superblock copies a commit was writing).
func verifyDegraded(mems []*device.MemDevice, states map[uint64]string) error {
	return verifyMissing(mems, states, 1, 1)
}

// verifyMissing is verifyDegraded with lo to hi members missing.
func verifyMissing(mems []*device.MemDevice, states map[uint64]string, lo, hi int) error {
	var ds []device.Device
	for _, d := range mems {
		ds = append(ds, d)
	}
	vol, err := volume.FromDevices(ds, false)
	if err != nil {
		return err
	}
	st, err := store.OpenDegraded(vol)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	gen := st.Super().Generation
	want, ok := states[gen]
	if !ok {
		return fmt.Errorf("generation %d was never committed", gen)
	}
	f, err := fsys.New(st, fsys.Options{})
	if err != nil {
		return err
	}
	got, err := treeState(f)
	if err != nil {
		return fmt.Errorf("generation %d: read tree: %w", gen, err)
	}
	if got != want {
		return fmt.Errorf("generation %d: tree differs from the committed one", gen)
	}
	rep, err := check.CheckVolume(vol, check.Options{Degraded: true, CheckData: true})
	if err != nil {
		return err
	}
	var missing int
	for _, p := range rep.Problems {
		switch {
		case p.Code == check.DevMissing:
			missing++
		case p.Pass != check.PassSuper:
			return fmt.Errorf("generation %d: fsck: %v", gen, p)
		}
	}
	if missing < lo || missing > hi {
		return fmt.Errorf("generation %d: fsck reported %d missing members, want %d to %d", gen, missing, lo, hi)
	}
	return nil
}
