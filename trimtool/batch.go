package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/batch"
	"github.com/ddfs/ddfs/pkg/cli"
)

// trimSets trims every set of the operands, -j at a time: exit 0 when all
// were trimmed, 1 (with the count) when any was not.
func trimSets(c *cobra.Command, args []string, f *trimFlags) error {
	o, err := f.trimOptions()
	if err != nil {
		return err
	}
	plan, err := f.batch.Plan(args, c.InOrStdin())
	if err != nil {
		return err
	}
	stdout, stderr := c.OutOrStdout(), c.ErrOrStderr()
	term := false
	if fd, ok := stderr.(*os.File); ok && cli.IsTerminal(fd) {
		term = !f.quiet
	}
	cfg := batch.Config{Jobs: f.batch.Jobs, Wait: f.batch.Wait, Stdout: stdout, Stderr: stderr,
		Progress: term && f.batch.Progress, Label: "free", Bytes: func(s *batch.Set) uint64 { return s.Total - min(s.Used, s.Total) }}
	tool := batch.Tool{Prog: "trimtool", JSON: f.asJSON, Failed: "trimmed"}
	// An interrupt stops a running trim between two discards and keeps
	// the next sets from starting.
	sum, err := tool.Each(plan, cfg, func(ctx context.Context, s *batch.Set, stdout, stderr io.Writer) error {
		o := o
		o.Context = ctx
		return trimSet(s.Paths, stdout, stderr, f, o, plan.Batch)
	})
	if err == nil && plan.Batch && f.verbose && !f.quiet && !f.asJSON {
		n := len(sum.Codes)
		fmt.Fprintf(stdout, "trimtool: %d of %d sets trimmed%s\n", n, n, batch.Note(plan, sum))
	}
	return err
}
