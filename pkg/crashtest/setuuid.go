package crashtest

import (
	"fmt"
	"math/rand/v2"

	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/volume"
)

// RunSetUUID records a workload, then a fsid change to `to`, and verifies
// a crash after every write of the change and cfg.Reordered crashes that
// lose part of each device's unflushed writes: the set opens under the old
// or the new fsid, holds the workload's tree and fscks clean (FORMAT.md §3.8).
func RunSetUUID(cfg Config, to [16]byte) (Result, error) {
	log := device.NewLog()
	f, _, _, _, err := recordWorkload(cfg, log)
	if err != nil {
		return Result{}, err
	}
	if err := manyFiles(f, 300); err != nil {
		return Result{}, err
	}
	st := f.Store()
	old, gen0 := st.Super().FSID, st.Super().Generation
	before, err := treeState(f)
	if err != nil {
		return Result{}, err
	}
	start := len(log.Ops())
	change, err := st.ChangeFSID(to)
	if err != nil {
		return Result{}, fmt.Errorf("%v: set-uuid: %w", cfg, err)
	}
	if change.Copies == 0 || change.BadCopies != 0 {
		return Result{}, fmt.Errorf("%v: set-uuid rewrote %d copies, %d bad", cfg, change.Copies, change.BadCopies)
	}
	states := map[uint64]string{}
	for g := gen0; g <= st.Super().Generation; g++ {
		states[g] = before // the change commits, but never changes the tree
	}
	ops := log.Ops()
	res := Result{Generations: len(states), Writes: len(ops) - start}
	check := func(devs []*device.MemDevice, what string) error {
		ok, err := verify(devs, states)
		if err == nil && !ok {
			err = fmt.Errorf("no superblock")
		}
		if err == nil {
			err = identityIs(devs, old, to)
		}
		if err != nil {
			return fmt.Errorf("%v: %s: %w", cfg, what, err)
		}
		res.Points++
		return nil
	}
	for upto := start; upto <= len(ops); upto++ {
		devs := fresh(cfg)
		if err := device.Replay(ops, upto, devs); err != nil {
			return res, err
		}
		if err := check(devs, fmt.Sprintf("crash after write %d of %d", upto, len(ops))); err != nil {
			return res, err
		}
	}
	r := rand.New(rand.NewPCG(cfg.Seed, 3))
	for i := 0; i < cfg.Reordered; i++ {
		upto := start + r.IntN(len(ops)-start+1)
		devs := fresh(cfg)
		lossy(ops, start, upto, devs, r)
		if err := check(devs, fmt.Sprintf("lossy crash at write %d", upto)); err != nil {
			return res, err
		}
	}
	devs := fresh(cfg)
	if err := device.Replay(ops, len(ops), devs); err != nil {
		return res, err
	}
	return res, identityIs(devs, to, to)
}

// manyFiles grows the fs tree to many nodes, so the change has many
// node copies to rewrite and crash points between them.
func manyFiles(f *fsys.FS, n int) error {
	if _, err := f.Mkdir("/many", fsys.Attr{Mode: 0o755}); err != nil {
		return err
	}
	for i := range n {
		in, err := f.Create(fmt.Sprintf("/many/file-%04d", i), fsys.Attr{Mode: 0o644})
		if err != nil {
			return err
		}
		if err := f.WriteAt(in, []byte(fmt.Sprintf("contents of file %d", i)), 0); err != nil {
			return err
		}
	}
	return f.Sync()
}

// lossy rebuilds the devices as a crash at ops[upto] leaves them when each
// device keeps the writes up to its own last flush and a random subset of
// its later ones, the last kept one possibly torn to a prefix of sectors.
func lossy(ops []device.Op, start, upto int, devs []*device.MemDevice, r *rand.Rand) {
	device.Replay(ops, start, devs)
	lastFlush := map[int]int{}
	for i := start; i < upto; i++ {
		if ops[i].Kind == device.OpFlush {
			lastFlush[ops[i].Dev] = i
		}
	}
	for i := start; i < upto; i++ {
		op := ops[i]
		if op.Kind != device.OpWrite {
			continue
		}
		lf, flushed := lastFlush[op.Dev]
		if flushed && i < lf {
			devs[op.Dev].WriteAt(op.Data, op.Off)
			continue
		}
		if r.IntN(2) == 0 {
			data := op.Data
			if len(data) > 512 && r.IntN(4) == 0 {
				data = data[:512*(1+r.IntN(len(data)/512))]
			}
			devs[op.Dev].WriteAt(data, op.Off)
		}
	}
}

// identityIs checks that the set opens with fsid old or to, and that a
// set with fsid to has no change pending.
func identityIs(mems []*device.MemDevice, old, to [16]byte) error {
	var ds []device.Device
	for _, d := range mems {
		ds = append(ds, d)
	}
	vol, err := volume.FromDevices(ds, false)
	if err != nil {
		return err
	}
	defer vol.Close()
	sb := vol.Super
	switch {
	case sb.FSID == to && sb.NewFSID == [16]byte{}:
	case sb.FSID == old && (sb.NewFSID == to || sb.NewFSID == [16]byte{}):
	default:
		return fmt.Errorf("fsid %x new_fsid %x: neither the old identity %x nor the new %x", sb.FSID, sb.NewFSID, old, to)
	}
	return nil
}
