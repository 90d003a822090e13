package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/batch"
	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/dedupe"
	"github.com/ddfs/ddfs/pkg/inband"
	"github.com/ddfs/ddfs/pkg/inspect"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/units"
	"github.com/ddfs/ddfs/pkg/volume"
)

func newStatusCmd() *cobra.Command {
	c, fl := newCmd("status [--json] IMAGE... [--from FILE]\n\nLogical and physical bytes, savings, index size.\n\n"+batch.MemoryHelp, "logical/physical bytes, savings, index size",
		"  dedupe-tool status backup.img\n  dedupe-tool status --json -j 4 --from images.txt   # JSON Lines, one object per set\n")
	asJSON := fl.Bool("json", false, "print JSON")
	var stats cli.Stats
	cli.StatsVar(fl, &stats, "per-device I/O (with --json: also as \"io\" in the output)")
	degraded := degradedFlag(fl)
	var bf batch.Flags
	bf.Add(fl, false)
	c.RunE = func(c *cobra.Command, args []string) error {
		plan, err := bf.Plan(args, c.InOrStdin())
		if err != nil {
			return err
		}
		cfg := batch.Config{Jobs: bf.Jobs, Wait: bf.Wait, Stdout: c.OutOrStdout(), Stderr: c.ErrOrStderr()}
		tool := batch.Tool{Prog: "dedupe-tool: status", JSON: *asJSON, Failed: "shown"}
		_, err = tool.Each(plan, cfg, func(_ context.Context, s *batch.Set, stdout, stderr io.Writer) error {
			return status(s, batch.Named(stdout, s.Path(), plan.Batch && !*asJSON), stderr, volume.Options{Degraded: *degraded, Extra: extraDevices}, string(stats), *asJSON, plan.Batch)
		})
		return err
	}
	return c
}

// status reports one set.
func status(s *batch.Set, stdout, stderr io.Writer, vo volume.Options, stats string, asJSON, inBatch bool) error {
	fs, err := store.Open(s.Paths, vo)
	if err != nil {
		return err
	}
	inspect.ReportHeals(stderr, "dedupe-tool: status", s.Path(), fs)
	defer fs.Close()
	st, err := dedupe.GetStatus(fs)
	if err != nil {
		return err
	}
	io := inspect.MaybePrintIOStats(batch.Named(stderr, s.Path(), inBatch), fs, stats)
	if asJSON {
		v := struct {
			*dedupe.Status
			IO []inspect.DeviceIO `json:"io,omitempty"`
		}{st, io}
		if inBatch {
			return batch.JSONLine(stdout, s.Path(), cli.ExitOK, v)
		}
		return cli.JSON(stdout, v)
	}
	on := "off"
	if st.Enabled {
		on = "on"
	}
	fmt.Fprintf(stdout, "dedupe:             %s (block %s, %s)\ncompression:        %s\n", on, units.Human(st.BlockSize), st.Hash, st.Compression)
	fmt.Fprintf(stdout, "logical bytes:      %s\nphysical bytes:     %s\n", units.Human(st.LogicalBytes), units.Human(st.PhysicalBytes))
	fmt.Fprintf(stdout, "saved by dedupe:    %s\nsaved by compress:  %s\n", units.Human(st.DedupeSavedBytes), units.Human(st.CompressSavedBytes))
	fmt.Fprintf(stdout, "dedupe hits:        %d\nindex entries:      %d\n", st.DedupeHits, st.IndexEntries)
	fmt.Fprintf(stdout, "index on disk:      %s\nindex in memory:    %s (%d bytes per entry)\n", units.Human(st.IndexDiskBytes), units.Human(st.IndexMemoryBytes), inband.EntryMemory)
	return nil
}
