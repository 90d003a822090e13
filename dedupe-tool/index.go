package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/inband"
)

const indexExamples = `  dedupe-tool index rebuild backup.img          # the index again from the extents' data
  dedupe-tool index prune --max-entries 1000000 backup.img

rebuild: every extent marked deduped gets the entry its data gives (the
entry the inband path made; an xxh3 entry also gets its BLAKE3 tail, so
later matches are proven unread, as for an image built by mkfs -r);
entries without such an extent go. prune:
keeps the N entries of the most shared extents (then the newest) and
unmarks the rest; memory is bounded by N. Both commit in bounded
transactions: a kill leaves a consistent index.
`

func newIndexCmd() *cobra.Command {
	c, fl := newCmd("index rebuild|prune IMAGE [--max-entries N] [--json]", "rebuild or prune the dedupe index", indexExamples)
	maxEntries := fl.Uint64("max-entries", 0, "prune: entries to keep")
	asJSON := fl.Bool("json", false, "print JSON")
	degraded := degradedFlag(fl)
	var stats cli.Stats
	cli.StatsVar(fl, &stats, "per-device I/O")
	c.RunE = func(c *cobra.Command, args []string) error {
		stdout, stderr := c.OutOrStdout(), c.ErrOrStderr()
		if len(args) != 2 || (args[0] != "rebuild" && args[0] != "prune") {
			return cli.Usagef("want rebuild IMAGE or prune IMAGE --max-entries N")
		}
		if args[0] == "prune" && !fl.Changed("max-entries") {
			return cli.Usagef("prune: --max-entries N is required")
		}
		f, err := openFS(args[1], true, 0, *degraded)
		if err != nil {
			return err
		}
		var res inband.Stats
		if args[0] == "rebuild" {
			res, err = f.Index().Rebuild()
		} else {
			res, err = f.Index().Prune(*maxEntries)
		}
		if err := finish(f, err, stderr, string(stats)); err != nil {
			return err
		}
		if *asJSON {
			return cli.JSON(stdout, res)
		}
		fmt.Fprintf(stdout, "index entries: %d (rebuilt %d, unmarked %d, dropped %d)\n", res.Entries, res.Rebuilt, res.Unmarked, res.Dropped)
		return nil
	}
	return c
}
