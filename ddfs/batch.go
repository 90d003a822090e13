package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/batch"
	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/inspect"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// newBatchCmd makes a read-only report command over any number of sets
// (info, df): the open flags, with the batch ones in place of a plain
// --wait.
func newBatchCmd(use, short, examples string) (*cobra.Command, *openFlags, *batch.Flags) {
	c := cli.NewCommand(use+"\n\n"+short+".\n\n"+batch.MemoryHelp, short, examples)
	c.ValidArgsFunction = completeOperand
	of, bf := &openFlags{cmd: c}, &batch.Flags{}
	of.addFlags(c.Flags(), false)
	bf.Add(c.Flags(), false)
	return c, of, bf
}

// report prints one set: w is stdout (in a batch run every line starts
// with the set's path); inBatch asks for JSON as one line with "path".
type report func(fs *store.FS, w io.Writer, path string, inBatch bool) error

// eachSet opens every set of the operands read-only, -j at a time, and
// runs fn on it; exit 1 when any set could not be shown.
func eachSet(c *cobra.Command, of *openFlags, bf *batch.Flags, args []string, asJSON bool, fn report) error {
	plan, err := bf.Plan(args, c.InOrStdin())
	if err != nil {
		return err
	}
	prog := cli.Prog(c)
	cfg := batch.Config{Jobs: bf.Jobs, Wait: bf.Wait, Stdout: c.OutOrStdout(), Stderr: c.ErrOrStderr()}
	tool := batch.Tool{Prog: prog, JSON: asJSON, Failed: "shown"}
	_, err = tool.Each(plan, cfg, func(_ context.Context, s *batch.Set, stdout, stderr io.Writer) error {
		fs, err := store.Open(s.Paths, volume.Options{Extra: of.devices, Degraded: of.degraded})
		if err != nil && !plan.Batch {
			return cli.NameImage(s.Path(), err) // a batch line names the set itself
		}
		if err != nil {
			return err
		}
		defer fs.Close()
		inspect.ReportHeals(stderr, prog, s.Path(), fs)
		defer func() {
			inspect.PrintStats(batch.Named(stderr, s.Path(), plan.Batch), string(of.stats), inspect.Stats{IO: inspect.IOStats(fs), Heal: fs.HealStats()})
		}()
		return fn(fs, batch.Named(stdout, s.Path(), plan.Batch && !asJSON), s.Path(), plan.Batch)
	})
	return err
}

// printJSON is a report's --json: indented for one set, a line in a batch.
func printJSON(w io.Writer, path string, inBatch bool, v any) error {
	if inBatch {
		return batch.JSONLine(w, path, cli.ExitOK, v)
	}
	return cli.JSON(w, v)
}
