package crashtest

import (
	"errors"
	"fmt"

	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// DeviceOp is a device management operation (remove, replace, resize,
// balance) run on a filled filesystem; spares are recorded devices that
// are not members yet (replace's new device).
type DeviceOp func(st *store.FS, spares []device.Device) error

// DeviceResult counts what RunDeviceOp checked.
type DeviceResult struct {
	Points      int // crash states verified
	Commits     int // commits of the operation
	Writes      int // recorded operations of the operation
	Members     map[int]int
	Generations map[uint64]bool
}

// RunDeviceOp fills a set with cfg's workload, runs op on it, and replays
// a crash after every single write and flush of op (plus cfg.Reordered
// states with the unflushed writes after a flush applied in random order,
// the last torn). Every state must open the way discovery would (devices
// without a valid superblock are skipped, as a wiped removed device is),
// hold the tree the workload committed, pass fsck, and list between the
// device counts before and after op (plus spares); Members counts the
// states of each device count, for the caller to check.
func RunDeviceOp(cfg Config, spares int, op DeviceOp) (DeviceResult, error) {
	log := device.NewLog()
	rec := &recorder{states: map[uint64]string{}}
	f, _, err := create(cfg, log.Wrap, rec)
	if err != nil {
		return DeviceResult{}, err
	}
	rec.f = f
	rec.snap()
	if _, err := workload(cfg, f); err != nil {
		return DeviceResult{}, err
	}
	if rec.err != nil {
		return DeviceResult{}, rec.err
	}
	want, err := treeState(f)
	if err != nil {
		return DeviceResult{}, err
	}
	st := f.Store()
	gen0, before := st.Super().Generation, len(st.DevItems())
	var spareDevs []device.Device
	for i := 0; i < spares; i++ {
		m := device.NewMemDevice(fmt.Sprintf("spare%d", i), cfg.DevSize)
		spareDevs = append(spareDevs, log.Wrap(m, cfg.Devices+i))
	}
	start := len(log.Ops())
	if err := op(st, spareDevs); err != nil {
		return DeviceResult{}, fmt.Errorf("%v: device operation: %w", cfg, err)
	}
	after := len(st.DevItems())
	// The operation changes no file: every generation it commits holds
	// the workload's tree.
	states := map[uint64]string{gen0: want}
	for g := gen0 + 1; g <= st.Super().Generation; g++ {
		states[g] = want
	}
	ops := log.Ops()
	res := DeviceResult{Commits: int(st.Super().Generation - gen0), Writes: len(ops) - start, Members: map[int]int{}, Generations: map[uint64]bool{}}
	base := freshN(cfg, cfg.Devices+spares)
	if err := device.Replay(ops, start, base); err != nil {
		return res, err
	}
	check := func(devs []*device.MemDevice, what string) error {
		n, gen, err := verifyFound(devs, states)
		if err != nil {
			return fmt.Errorf("%v: %s: %w", cfg, what, err)
		}
		if n < min(before, after) || n > max(before, after)+spares {
			return fmt.Errorf("%v: %s: %d devices, want %d to %d", cfg, what, n, min(before, after), max(before, after)+spares)
		}
		res.Points++
		res.Members[n]++
		res.Generations[gen] = true
		return nil
	}
	for upto := 0; upto <= len(ops)-start; upto++ {
		devs := snapshots(base)
		if err := device.Replay(ops[start:], upto, devs); err != nil {
			return res, err
		}
		if err := check(devs, fmt.Sprintf("crash after write %d of %d", upto, len(ops)-start)); err != nil {
			return res, err
		}
	}
	_, err = replayReordered(ops[start:], 0, cfg.Seed, cfg.Reordered, func() []*device.MemDevice { return snapshots(base) },
		func(ds []*device.MemDevice) (bool, error) {
			return false, check(ds, "reordered writes after a flush") // check counts the point
		})
	if err != nil {
		return res, err
	}
	return res, nil
}

func freshN(cfg Config, n int) []*device.MemDevice {
	c := cfg
	c.Devices = n
	return fresh(c)
}

func snapshots(devs []*device.MemDevice) []*device.MemDevice {
	out := make([]*device.MemDevice, len(devs))
	for i, d := range devs {
		out[i] = d.Snapshot()
	}
	return out
}

// verifyFound opens the devices discovery would take (a valid ddfs
// superblock) and verifies the state; it returns the number of member
// devices and the generation.
func verifyFound(mems []*device.MemDevice, states map[uint64]string) (int, uint64, error) {
	var found []*device.MemDevice
	for _, m := range mems {
		_, err := volume.BestSuper(volume.ReadSuperCopies(m))
		if errors.Is(err, volume.ErrNoSuperblock) {
			continue
		}
		found = append(found, m)
	}
	ok, err := verify(found, states)
	if err != nil {
		return 0, 0, err
	}
	if !ok {
		return 0, 0, errors.New("no superblock found")
	}
	var ds []device.Device
	for _, m := range found {
		ds = append(ds, m)
	}
	vol, err := volume.FromDevices(ds, false)
	if err != nil {
		return 0, 0, err
	}
	st, err := store.OpenVolume(vol)
	if err != nil {
		return 0, 0, err
	}
	defer st.Close()
	return len(st.DevItems()), st.Super().Generation, nil
}
