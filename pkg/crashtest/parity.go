package crashtest

import (
	"fmt"

	"github.com/ddfs/ddfs/pkg/device"
)

// RunParityLoss is the write-hole test of raid5/raid6 (FORMAT.md §4.4 "No
// write hole"): it records a workload of partial-stripe writes, and for
// every Stride-th write prefix and every set of lost devices the profile
// survives (each device for raid5, each pair for raid6) it replays the
// prefix, drops those devices, and checks that the set opens degraded as
// one committed generation whose every file reads back identical and
// that fsck --check-data finds nothing but the missing devices. Reordered,
// torn states lose devices the same way.
func RunParityLoss(cfg Config, lose int) (Result, error) {
	log := device.NewLog()
	_, rec, made, succeeded, err := recordWorkload(cfg, log)
	if err != nil {
		return Result{}, err
	}
	ops := log.Ops()
	res := Result{Generations: len(rec.states), Writes: len(ops), Succeeded: succeeded}
	sets := lossSets(cfg.Devices, lose)
	verifyAll := func(devs []*device.MemDevice) (bool, error) {
		if _, err := verify(snapshots(devs), rec.states); err != nil { // whole: no superblock yet is fine
			return false, err
		}
		for _, gone := range sets {
			if err := verifyMissing(without(devs, gone), rec.states, lose, lose); err != nil {
				return false, fmt.Errorf("devices %v lost: %w", gone, err)
			}
		}
		return true, nil
	}
	for upto := made; upto <= len(ops); upto += max(cfg.Stride, 1) {
		devs := fresh(cfg)
		if err := device.Replay(ops, upto, devs); err != nil {
			return res, err
		}
		if _, err := verifyAll(devs); err != nil {
			return res, fmt.Errorf("%v: crash after write %d of %d: %w", cfg, upto, len(ops), err)
		}
		res.Points++
	}
	n, err := replayReordered(ops, made, cfg.Seed, cfg.Reordered, func() []*device.MemDevice { return fresh(cfg) }, verifyAll)
	res.Points += n
	if err != nil {
		return res, fmt.Errorf("%v: %w", cfg, err)
	}
	return res, nil
}

// lossSets lists every set of lose device indexes among n.
func lossSets(n, lose int) [][]int {
	var out [][]int
	for m := 1; m < 1<<n; m++ {
		var s []int
		for i := range n {
			if m&(1<<i) != 0 {
				s = append(s, i)
			}
		}
		if len(s) == lose {
			out = append(out, s)
		}
	}
	return out
}

// without copies devs less the indexes in gone.
func without(devs []*device.MemDevice, gone []int) []*device.MemDevice {
	var out []*device.MemDevice
	for i, d := range devs {
		lost := false
		for _, g := range gone {
			lost = lost || g == i
		}
		if !lost {
			out = append(out, d.Snapshot())
		}
	}
	return out
}
