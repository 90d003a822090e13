package crashtest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"syscall"

	"github.com/ddfs/ddfs/pkg/device"
)

// Fault kinds RunFault can inject.
const (
	FaultWriteEIO   = "write-eio" // a device write fails with EIO
	FaultWriteNoSpc = "write-enospc"
	FaultShortWrite = "short-write" // a write lands half and fails
	FaultFlush      = "flush"       // a flush fails
	FaultReadEIO    = "read-eio"    // a device read fails
	FaultVanish     = "vanish"      // a device stops answering (pulled)
)

// FaultKinds lists every kind.
var FaultKinds = []string{FaultWriteEIO, FaultWriteNoSpc, FaultShortWrite, FaultFlush, FaultReadEIO, FaultVanish}

// FaultResult tells what happened.
type FaultResult struct {
	Failed     bool   // the workload saw the fault as an error
	Err        string // that error
	Generation uint64 // generation found after the power cycle
	Committed  uint64 // last generation whose commit returned success
}

// RunFault runs the workload on a set whose device dev starts failing
// (kind) after `after` operations of that kind. The first error aborts
// the transaction, as the tools do; then the power is cut (unflushed
// writes dropped), the fault removed, and the set must open clean at a
// committed generation no older than the last successful commit.
func RunFault(cfg Config, kind string, dev, after int) (FaultResult, error) {
	var faulty []*device.Faulty
	wrap := func(d device.Device, i int) device.Device {
		f := device.NewFaulty(d, nil)
		faulty = append(faulty, f)
		return f
	}
	rec := &recorder{states: map[uint64]string{}, pending: map[uint64]string{}}
	f, mems, err := create(cfg, wrap, rec)
	if err != nil {
		return FaultResult{}, err
	}
	rec.f = f
	rec.snap()
	rule, err := faultRule(kind, after)
	if err != nil {
		return FaultResult{}, err
	}
	target := faulty[dev%len(faulty)]
	target.SetRule(rule)
	rec.around = func(take func()) {
		target.SetRule(nil)
		take()
		target.SetRule(rule)
	}
	res := FaultResult{}
	r := rand.New(rand.NewPCG(cfg.Seed, 3))
	for i := 0; i < cfg.Ops && !res.Failed; i++ {
		_, err := step(f, r, i)
		if err == nil {
			if r.IntN(6) == 0 {
				err = f.Sync()
			} else {
				err = f.MaybeCommit()
			}
		}
		if err == nil && rec.err != nil && !isInjected(rec.err) {
			return res, rec.err
		}
		if err != nil {
			if !isInjected(err) {
				return res, fmt.Errorf("%v: %s fault: op %d failed with a non-injected error: %w", cfg, kind, i, err)
			}
			res.Failed, res.Err = true, err.Error()
			f.Abort()
		}
	}
	res.Committed = f.Store().Super().Generation // last successful commit
	states := rec.states
	// A commit that failed may still have become durable on the devices
	// it reached: its generation is an acceptable state too.
	if s, ok := rec.pending[res.Committed+1]; ok {
		states[res.Committed+1] = s
	}
	// Power cut, device back.
	for i, m := range mems {
		m.Crash()
		faulty[i].SetRule(nil)
	}
	gen, err := verifyAfterFault(mems, states, res.Committed)
	res.Generation = gen
	if err != nil {
		return res, fmt.Errorf("%v: %s fault after %d ops on device %d: %w", cfg, kind, after, dev, err)
	}
	return res, nil
}

func faultRule(kind string, after int) (device.Rule, error) {
	switch kind {
	case FaultWriteEIO:
		return device.FailAfter(after, device.OpWrite, syscall.EIO), nil
	case FaultWriteNoSpc:
		return device.FailAfter(after, device.OpWrite, syscall.ENOSPC), nil
	case FaultShortWrite:
		return device.ShortWrite(after), nil
	case FaultFlush:
		return device.FailAfter(after, device.OpFlush, syscall.EIO), nil
	case FaultReadEIO:
		return device.FailAfter(after, device.OpRead, syscall.EIO), nil
	case FaultVanish:
		return func(op device.OpKind, _, _ int64, count int) error {
			if count >= after {
				return syscall.ENXIO
			}
			return nil
		}, nil
	}
	return nil, fmt.Errorf("unknown fault %q", kind)
}

// isInjected reports errors the faults cause (as opposed to bugs).
func isInjected(err error) bool {
	for _, e := range []error{syscall.EIO, syscall.ENOSPC, syscall.ENXIO} {
		if errors.Is(err, e) {
			return true
		}
	}
	return errors.Is(err, errShort)
}

var errShort = shortWriteErr()

func verifyAfterFault(mems []*device.MemDevice, states map[uint64]string, committed uint64) (uint64, error) {
	ok, err := verify(mems, states)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("no superblock left")
	}
	var ds []device.Device
	for _, m := range mems {
		ds = append(ds, m)
	}
	gen, err := generationOf(ds)
	if err != nil {
		return 0, err
	}
	if gen < committed {
		return gen, fmt.Errorf("generation %d found, but generation %d had committed: committed data lost", gen, committed)
	}
	return gen, nil
}
