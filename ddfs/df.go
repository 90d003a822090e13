package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/dedupe"
	"github.com/ddfs/ddfs/pkg/inspect"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/units"
)

func newDFCmd() *cobra.Command {
	c, of, bf := newBatchCmd("df [-b|-h] [--json] IMAGE... [--from FILE]", "show space by type/profile and by device",
		"  ddfs df disk.img\n  ddfs df -b --json disk.img\n  ddfs df -j 4 --from images.txt")
	cli.NoHelpShorthand(c)
	fl := c.Flags()
	asJSON := fl.Bool("json", false, "print JSON (always bytes)")
	raw := fl.BoolP("bytes", "b", false, "print sizes in bytes")
	fl.BoolP("human-readable", "h", false, "print sizes with K, M, G (the default)")
	c.RunE = func(c *cobra.Command, args []string) error {
		return eachSet(c, of, bf, args, *asJSON, func(fs *store.FS, w io.Writer, path string, inBatch bool) error {
			return runDF(w, fs, path, inBatch, *asJSON, *raw)
		})
	}
	return c
}

func runDF(stdout io.Writer, fs *store.FS, path string, inBatch, asJSON, raw bool) error {
	df := inspect.GetDF(fs)
	data, err := dedupe.GetStatus(fs)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(stdout, path, inBatch, struct {
			*inspect.DF
			Data *dedupe.Status `json:"data"`
		}{df, data})
	}
	size := units.Human
	if raw {
		size = func(n uint64) string { return strconv.FormatUint(n, 10) }
	}
	fmt.Fprintf(stdout, "%-9s %-8s %14s %14s %14s\n", "Type", "Profile", "Size", "Allocated", "Used")
	for _, t := range df.Types {
		fmt.Fprintf(stdout, "%-9s %-8s %14s %14s %14s\n", t.Type, t.Profile, size(t.Size), size(t.Allocated), size(t.Used))
	}
	fmt.Fprintf(stdout, "\n%-5s %14s %14s %14s  %s\n", "Devid", "Size", "Allocated", "Unallocated", "Path")
	for _, d := range df.Devices {
		missing := ""
		if d.Missing {
			missing = " (missing)"
		}
		fmt.Fprintf(stdout, "%-5d %14s %14s %14s  %s%s\n", d.DevID, size(d.Size), size(d.Allocated), size(d.Free), d.Path, missing)
	}
	fmt.Fprintf(stdout, "\nTotal %s, allocated %s, used %s\n", size(df.TotalBytes), size(df.Allocated), size(df.Used))
	for _, fb := range df.Fallbacks {
		fmt.Fprintf(stdout, "Fallback: %s/%s chunk %d is on devices %v, outside the %s policy's preferred devices\n", fb.Type, fb.Profile, fb.Logical, fb.DevIDs, df.AllocPolicy)
	}
	fmt.Fprintf(stdout, "File data: %s logical, %s stored; saved %s by dedupe (%d hits, %d index entries), %s by compression\n",
		size(data.LogicalBytes), size(data.PhysicalBytes), size(data.DedupeSavedBytes), data.DedupeHits, data.IndexEntries, size(data.CompressSavedBytes))
	return nil
}
