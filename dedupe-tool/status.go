package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/inspect"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/units"
	"github.com/ddfs/ddfs/pkg/volume"
)

func newStatusCmd() *cobra.Command {
	c, fl := newCmd("status [--json] IMAGE", "logical/physical bytes, savings, index size", "  dedupe-tool status backup.img\n")
	asJSON := fl.Bool("json", false, "print JSON")
	var stats cli.Stats
	cli.StatsVar(fl, &stats, "per-device I/O (with --json: also as \"io\" in the output)")
	degraded := fl.Bool("degraded", false, "open a mirrored set with a device missing or unusable (reads use surviving copies)")
	c.RunE = func(c *cobra.Command, args []string) error {
		stdout, stderr := c.OutOrStdout(), c.ErrOrStderr()
		if len(args) != 1 {
			return cli.Usagef("want one IMAGE")
		}
		fs, err := store.Open([]string{args[0]}, volume.Options{Degraded: *degraded, Extra: extraDevices})
		if err != nil {
			return err
		}
		inspect.ReportHeals(stderr, "dedupe-tool: status", args[0], fs)
		defer fs.Close()
		st, err := inspect.GetDedupeStatus(fs)
		if err != nil {
			return err
		}
		io := inspect.MaybePrintIOStats(stderr, fs, string(stats))
		if *asJSON {
			return cli.JSON(stdout, struct {
				*inspect.DedupeStatus
				IO []inspect.DeviceIO `json:"io,omitempty"`
			}{st, io})
		}
		on := "off"
		if st.Enabled {
			on = "on"
		}
		fmt.Fprintf(stdout, "dedupe:             %s (block %s, %s)\ncompression:        %s\n", on, units.Human(st.BlockSize), st.Hash, st.Compression)
		fmt.Fprintf(stdout, "logical bytes:      %s\nphysical bytes:     %s\n", units.Human(st.LogicalBytes), units.Human(st.PhysicalBytes))
		fmt.Fprintf(stdout, "saved by dedupe:    %s\nsaved by compress:  %s\n", units.Human(st.DedupeSavedBytes), units.Human(st.CompressSavedBytes))
		fmt.Fprintf(stdout, "dedupe hits:        %d\nindex entries:      %d\n", st.DedupeHits, st.IndexEntries)
		fmt.Fprintf(stdout, "index on disk:      %s\nindex in memory:    %s (%d bytes per entry)\n", units.Human(st.IndexDiskBytes), units.Human(st.IndexMemoryBytes), inspect.IndexEntryMemory)
		return nil
	}
	return c
}
