package main

import (
	"fmt"
	"io"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/fsys"
)

const indexExamples = `  dedupe-tool index rebuild backup.img          the index again from the extents' data
  dedupe-tool index prune --max-entries 1000000 backup.img

rebuild: every extent marked deduped gets the entry its data gives (the
entry the inband path made); entries without such an extent go. prune:
keeps the N entries of the most shared extents (then the newest) and
unmarks the rest; memory is bounded by N. Both commit in bounded
transactions: a kill leaves a consistent index.
`

func cmdIndex(args []string, stdout, stderr io.Writer) error {
	fl := cli.NewFlags("dedupe-tool index", "dedupe-tool index rebuild|prune IMAGE [--max-entries N] [--json]", indexExamples, stdout)
	maxEntries := fl.Uint64("max-entries", 0, "prune: entries to keep")
	asJSON := fl.Bool("json", false, "print JSON")
	stats := fl.Bool("stats", false, "print per-device I/O on stderr")
	if err := cli.Parse(fl, args); err != nil {
		return err
	}
	if fl.NArg() != 2 || (fl.Arg(0) != "rebuild" && fl.Arg(0) != "prune") {
		return cli.Usagef("want rebuild IMAGE or prune IMAGE --max-entries N")
	}
	if fl.Arg(0) == "prune" && !fl.Changed("max-entries") {
		return cli.Usagef("prune: --max-entries N is required")
	}
	f, err := openFS(fl.Arg(1), true, 0)
	if err != nil {
		return err
	}
	var res fsys.IndexStats
	if fl.Arg(0) == "rebuild" {
		res, err = f.RebuildIndex()
	} else {
		res, err = f.PruneIndex(*maxEntries)
	}
	if err := finish(f, err, stderr, *stats); err != nil {
		return err
	}
	if *asJSON {
		return cli.JSON(stdout, res)
	}
	fmt.Fprintf(stdout, "index entries: %d (rebuilt %d, unmarked %d, dropped %d)\n", res.Entries, res.Rebuilt, res.Unmarked, res.Dropped)
	return nil
}
