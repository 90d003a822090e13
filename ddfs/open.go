package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/inspect"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// openFlags are the options every command that opens an image takes.
type openFlags struct {
	devices []string
	wait    bool
	// stats: "" off, "text" or "json" (--stats, --stats=json).
	stats cli.Stats
	// degraded opens a set with a member missing (--degraded).
	degraded bool
	// cmd names the command in heal lines ("ddfs: cat").
	cmd *cobra.Command
	// receiving opens an image to go on with its receive in progress
	// (receive --resume); any other writer undoes it.
	receiving bool
}

func (o *openFlags) add(fl *pflag.FlagSet) { o.addFlags(fl, true) }

// addFlags registers the open flags, --wait only with wait (batch
// commands have their own, with a duration).
func (o *openFlags) addFlags(fl *pflag.FlagSet, wait bool) {
	fl.StringArrayVar(&o.devices, "device", nil, "another device of the set (repeatable)")
	if wait {
		fl.BoolVar(&o.wait, "wait", false, "wait for a busy image instead of failing")
	}
	cli.StatsVar(fl, &o.stats, "per-device I/O (requests, bytes, seeks, modeled time)")
	fl.BoolVar(&o.degraded, "degraded", false, "open a mirrored set with a device missing or unusable (reads use the surviving copies; new chunks go to the present devices)")
}

func (o *openFlags) open(image string, write bool) (*store.FS, error) {
	// A read-only command on an image a writer holds reads its last
	// commit beside it (unless told to wait for the writer).
	fs, err := store.Open([]string{image}, volume.Options{Write: write, Wait: o.wait, Extra: o.devices, Degraded: o.degraded, Beside: !write && !o.wait})
	if err != nil {
		if ferr := foreignRefusal(image, write, o.cmd); ferr != nil {
			return nil, ferr
		}
		return nil, cli.NameImage(image, err)
	}
	inspect.ReportHeals(os.Stderr, cli.Prog(o.cmd), image, fs)
	if write && !fs.Degraded() && o.cmd != nil && o.cmd.Name() != "balance" && o.cmd.Name() != "scrub" { // they restore or report it
		noteBelowProfile(os.Stderr, cli.Prog(o.cmd), image, fs)
	}
	return fs, nil
}

// noteBelowProfile says, on a writable open with every member present,
// that chunks written while one was missing are below the set's
// profiles: the set is whole again but those chunks are not.
func noteBelowProfile(w io.Writer, prog, image string, fs *store.FS) {
	if n, dp, mp := fs.BelowProfile(); n > 0 {
		fmt.Fprintf(w, "%s: %s: %d chunks below the set's profiles (data %v, metadata %v), written while a device was missing; restore them: ddfs balance %s\n",
			prog, image, n, dp, mp, image)
	}
}

// openOnly opens the one IMAGE operand of a command read-only; done
// prints --stats and closes it.
func (o *openFlags) openOnly(args []string) (fs *store.FS, done func(), err error) {
	if len(args) != 1 {
		return nil, nil, usageErr("want exactly one IMAGE")
	}
	if fs, err = o.open(args[0], false); err != nil {
		return nil, nil, err
	}
	return fs, func() {
		printStats(o.stats, inspect.IOStats(fs), 0, "", fs.HealStats())
		fs.Close()
	}, nil
}

// printStats writes --stats output on stderr: lines, or one JSON object
// {"io": [...], "fallback_chunks": N, "heal": {...}} for scripts
// (bench/tiered.sh). fallbacks counts new chunks placed outside the
// policy's preference.
func printStats(format cli.Stats, io []inspect.DeviceIO, fallbacks int, policy string, heal store.HealStats) {
	inspect.PrintStats(os.Stderr, string(format), inspect.Stats{IO: io, Fallbacks: fallbacks, Heal: heal, Policy: policy})
}
