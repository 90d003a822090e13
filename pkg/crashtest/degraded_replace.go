package crashtest

import (
	"errors"
	"fmt"

	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// RunDegradedReplace fills a set with cfg's workload, loses its last lost
// members, and replaces the first of them (devid Devices-lost+1) with a
// spare on an open of the survivors, degraded; then it replays a crash
// after every Stride-th write of the replace and cfg.Reordered states
// with reordered, torn writes after a flush. Every state must open
// degraded on the devices that carry a superblock, hold the workload's
// tree, and check clean but for lost-1 to lost missing members: a
// replace that stops leaves the set readable and resumable.
func RunDegradedReplace(cfg Config, lost int) (DeviceResult, error) {
	base, want, err := lostSet(cfg, lost)
	if err != nil {
		return DeviceResult{}, err
	}
	ops, res, err := recordReplace(base, uint64(cfg.Devices-lost+1))
	if err != nil {
		return res, fmt.Errorf("%v: %w", cfg, err)
	}
	states := map[uint64]string{}
	for g := range res.Generations {
		states[g] = want // a replace changes no file
	}
	check := func(devs []*device.MemDevice, what string) error {
		if err := verifyMissing(withSuper(devs), states, lost-1, lost); err != nil {
			return fmt.Errorf("%v: %s: %w", cfg, what, err)
		}
		res.Points++
		return nil
	}
	for upto := 0; upto <= len(ops); upto += max(cfg.Stride, 1) {
		devs := survivors(base)
		if err := device.Replay(ops, upto, devs); err != nil {
			return res, err
		}
		if err := check(devs, fmt.Sprintf("crash after write %d of %d", upto, len(ops))); err != nil {
			return res, err
		}
	}
	again := func(devs []*device.MemDevice) (bool, error) {
		return false, check(devs, "reordered writes after a flush")
	}
	_, err = replayReordered(ops, 0, cfg.Seed, cfg.Reordered, func() []*device.MemDevice { return survivors(base) }, again)
	return res, err
}

// lostSet is the durable state of cfg's workload on the members left
// after losing the last lost, plus a blank spare; and the workload's tree.
func lostSet(cfg Config, lost int) ([]*device.MemDevice, string, error) {
	f, mems, err := create(cfg, func(d device.Device, _ int) device.Device { return d }, &recorder{states: map[uint64]string{}})
	if err != nil {
		return nil, "", err
	}
	if _, err := workload(cfg, f); err != nil {
		return nil, "", err
	}
	want, err := treeState(f)
	if err != nil {
		return nil, "", err
	}
	if err := f.Close(); err != nil {
		return nil, "", err
	}
	n := cfg.Devices - lost
	return survivors(append(mems[:n:n], device.NewMemDevice("spare0", cfg.DevSize))), want, nil
}

// recordReplace opens copies of base but its last device (the spare)
// degraded, replaces devid old with the spare and returns the recorded
// writes, the commits and the generations from the open's to the last.
func recordReplace(base []*device.MemDevice, old uint64) ([]device.Op, DeviceResult, error) {
	log := device.NewLog()
	var ds []device.Device
	for i, m := range survivors(base) {
		ds = append(ds, log.Wrap(m, i))
	}
	res := DeviceResult{Members: map[int]int{}, Generations: map[uint64]bool{}}
	vol, err := volume.FromDevices(ds[:len(ds)-1], true)
	if err != nil {
		return nil, res, err
	}
	st, err := store.OpenDegraded(vol)
	if err != nil {
		return nil, res, err
	}
	gen0 := st.Super().Generation
	if _, err := st.ReplaceDevice(old, store.NewDevice{Dev: ds[len(ds)-1], Path: "spare0"}, nil); err != nil {
		return nil, res, fmt.Errorf("replace device %d: %w", old, err)
	}
	for g := gen0; g <= st.Super().Generation; g++ {
		res.Generations[g] = true
	}
	res.Commits = int(st.Super().Generation - gen0)
	ops := log.Ops()
	res.Writes = len(ops)
	return ops, res, st.Close()
}

// withSuper is the devices discovery would take: those with a ddfs
// superblock (a spare before it joined has none).
func withSuper(mems []*device.MemDevice) []*device.MemDevice {
	var out []*device.MemDevice
	for _, m := range mems {
		if _, err := volume.BestSuper(volume.ReadSuperCopies(m)); !errors.Is(err, volume.ErrNoSuperblock) {
			out = append(out, m)
		}
	}
	return out
}
