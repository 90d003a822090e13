package main

import (
	"io"

	"github.com/spf13/pflag"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/inspect"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// degradedFlag adds --degraded to a command that opens a set.
func degradedFlag(fl *pflag.FlagSet) *bool {
	return fl.Bool("degraded", false, "open a mirrored set with a device missing or unusable (reads use surviving copies)")
}

// openFS opens an image for namespace work; batch bounds a writer's
// transactions (0: the default); degraded opens it without missing
// members (--degraded).
func openFS(image string, write bool, batch uint64, degraded bool) (*fsys.FS, error) {
	return openFSNodes(image, write, batch, cli.BatchNodes(), degraded)
}

// openFSNodes is openFS with a bound on a transaction's dirty nodes too
// (0: the default; DDFS_BATCH_NODES still wins when set).
func openFSNodes(image string, write bool, batch uint64, nodes int, degraded bool) (*fsys.FS, error) {
	if n := cli.BatchNodes(); n > 0 {
		nodes = n
	}
	st, err := store.Open([]string{image}, volume.Options{Write: write, Degraded: degraded, Extra: extraDevices})
	if err != nil {
		return nil, cli.NameImage(image, err)
	}
	f, err := fsys.New(st, fsys.Options{BatchBytes: batch, BatchNodes: nodes, StrongTails: true})
	if err != nil {
		st.Close()
		return nil, err
	}
	return f, nil
}

// finish ends a command on f: after an error the running transaction is
// dropped (the image keeps its last commit), else it commits; then
// --stats and close.
func finish(f *fsys.FS, err error, stderr io.Writer, stats string) error {
	if err != nil {
		f.Abort()
	}
	// The devices are gone from the volume after Close, which may still
	// write: take them before, count after.
	st := f.Store()
	devs, items := st.Vol.Devices(), st.DevItems()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	inspect.PrintStats(stderr, stats, inspect.Stats{IO: inspect.DevicesIO(devs, items), Fallbacks: st.FallbackChunks(),
		Heal: st.HealStats(), Policy: st.Super().Settings.AllocPolicy.String()})
	return err
}
