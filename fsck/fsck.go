package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/check"
	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/inspect"
)

// Exit codes of fsck(8).
const (
	exitClean       = 0
	exitUncorrected = 4
	exitOperational = 8
	exitUsage       = 16
)

const help = `Checks every superblock copy, the device items, the chunk mapping, every
copy of every tree node (checksum, header, key order, levels, generations),
the extent accounting, and the filesystem: directory entries and inodes,
link counts, orphans, file sizes against extents, extent reference counts
against all references, data checksum coverage (--check-data reads and
verifies every data sector). Nothing is changed (-n is the default).

Exit codes (as fsck(8)):
  0   no problems
  4   problems found and left uncorrected (a missing device is one)
  8   operational error (e.g. a device cannot be opened)
  16  usage error
`

const examples = `  fsck.ddfs disk.img
  fsck.ddfs --json a.img b.img
  fsck.ddfs --device /elsewhere/hdd1.img ssd0.img
`

func run(args []string, stdout, stderr io.Writer) int {
	fl := cli.NewFlags("fsck.ddfs", "fsck.ddfs [options] DEVICE...\n\n"+help, examples, stdout)
	fl.BoolP("no-change", "n", true, "do not change anything (the default; repair comes later)")
	checkData := fl.Bool("check-data", false, "also read every data sector (every copy) and verify its checksum")
	asJSON := fl.Bool("json", false, "print the report as JSON")
	quiet := fl.BoolP("quiet", "q", false, "print only problems")
	verbose := fl.BoolP("verbose", "v", false, "print what was checked")
	var extra []string
	fl.StringArrayVar(&extra, "device", nil, "another device of the set (repeatable)")
	wait := fl.Bool("wait", false, "wait for a busy device")
	degraded := fl.Bool("degraded", false, "with a device missing: report it and check everything the present devices hold (without: report only the missing device)")
	stats := fl.Bool("stats", false, "print per-device I/O (requests, bytes, seeks, modeled time) on stderr")
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitClean
		}
		fmt.Fprintf(stderr, "fsck.ddfs: %v\n", err)
		return exitUsage
	}
	if fl.NArg() == 0 {
		fmt.Fprintf(stderr, "fsck.ddfs: no device given\nTry 'fsck.ddfs --help' for more information.\n")
		return exitUsage
	}
	rep, err := check.Check(fl.Args(), check.Options{Extra: append(fl.Args()[1:], extra...), Wait: *wait, CheckData: *checkData, Degraded: *degraded})
	if err != nil {
		fmt.Fprintf(stderr, "fsck.ddfs: %s\n", strings.ReplaceAll(err.Error(), "\n", "; "))
		return exitOperational
	}
	if *stats {
		inspect.PrintIOStats(stderr, rep.IO)
	}
	if *asJSON {
		if err := cli.JSON(stdout, rep); err != nil {
			return exitOperational
		}
	} else {
		for _, p := range rep.Problems {
			fmt.Fprintf(stdout, "%s\n", p)
		}
		if !*quiet || !rep.Clean() {
			state := "clean"
			if w := len(rep.Problems) - rep.Errors(); w > 0 {
				state = "clean (" + plural(w, "warning") + ": superblock copies the next commit rewrites)"
			}
			if !rep.Clean() {
				state = plural(rep.Errors(), "problem") + " found, none corrected"
			}
			fmt.Fprintf(stdout, "fsck.ddfs: %s: generation %d, %s, %s, %s (%d copies), %s: %s\n",
				fl.Arg(0), rep.Generation, plural(rep.Devices, "device"), plural(rep.Chunks, "chunk"),
				plural(rep.Nodes, "node"), rep.NodeCopies, plural(rep.Items, "item"), state)
		}
		if *verbose {
			for id := format.TreeID(1); id <= format.NumTrees; id++ {
				if n := rep.TreeNodes[id.String()]; n > 0 {
					fmt.Fprintf(stdout, "  %-10s tree: %d nodes\n", id, n)
				}
			}
		}
	}
	if !rep.Clean() {
		return exitUncorrected
	}
	return exitClean
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
