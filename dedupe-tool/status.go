package main

import (
	"fmt"
	"io"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/inspect"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/units"
	"github.com/ddfs/ddfs/pkg/volume"
)

func cmdStatus(args []string, stdout, stderr io.Writer) error {
	fl := cli.NewFlags("dedupe-tool status", "dedupe-tool status [--json] IMAGE", "  dedupe-tool status backup.img\n", stdout)
	asJSON := fl.Bool("json", false, "print JSON")
	stats := fl.Bool("stats", false, "print per-device I/O on stderr (with --json: also as \"io\" in the output)")
	degraded := fl.Bool("degraded", false, "open a mirrored set with a device missing or unusable (reads use surviving copies)")
	if err := cli.Parse(fl, args); err != nil {
		return err
	}
	if fl.NArg() != 1 {
		return cli.Usagef("want one IMAGE")
	}
	fs, err := store.Open([]string{fl.Arg(0)}, volume.Options{Degraded: *degraded})
	if err != nil {
		return err
	}
	inspect.ReportHeals(stderr, "dedupe-tool: status", fl.Arg(0), fs)
	defer fs.Close()
	st, err := inspect.GetDedupeStatus(fs)
	if err != nil {
		return err
	}
	io := inspect.MaybePrintIOStats(stderr, fs, *stats)
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
