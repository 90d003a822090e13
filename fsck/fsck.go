package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/batch"
	"github.com/ddfs/ddfs/pkg/check"
	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/inspect"
	"github.com/ddfs/ddfs/pkg/progress"
)

// Exit codes of fsck(8); a run that corrects some errors and leaves
// others returns their sum (5).
const (
	exitClean       = 0
	exitCorrected   = 1
	exitUncorrected = 4
	exitOperational = 8
	exitUsage       = 16
	exitCancelled   = 32
)

const help = `Checks every superblock copy, the device items, the chunk mapping, every
copy of every tree node (checksum, header, key order, levels, generations),
the extent accounting, and the filesystem: directory entries and inodes,
link counts, orphans, file sizes against extents, extent reference counts
against all references, data checksum coverage (--check-data reads and
verifies every data sector).

Modes (as fsck(8)): -n (the default) changes nothing; -p or -a (preen) makes
only the fixes that cannot lose data (a bad copy rewritten from a good one,
counts recomputed, stale index entries dropped); -y or --repair also removes
dangling entries, rebuilds missing names and inode items and reconnects
orphans under /lost+found/#INO. Every fix is a normal transaction (or the
rewrite of one bad copy), so an interrupted repair leaves a consistent
image. With a broken chunk mapping or device item nothing is repaired. Each problem has a stable code (--list-codes; --json lists code,
pass, tree, logical, devid, offset, copy, path, fixed); copies are numbered
from 0, as every ddfs tool numbers them.

No mode makes checksums for data that has none (CSUM_MISSING): a sum made
now would vouch for bytes nothing verified, and reads refuse such data.
--rebuild-csums is that choice, made explicitly: before the check it sums
the data of every file extent with no checksum at all, as it reads now, and
prints each file it vouches for ("csums_rebuilt" with --json). It never
replaces a checksum that fails (that would hide the corruption), and it
refuses an extent whose mirrored copies differ or do not read
("csums_refused").

Memory is proportional to the number of data extents (about 40 bytes
each, 72 where their keys are out of order), runs of adjacent csum items
(16 bytes), tree nodes (about 100 bytes) and dedupe index entries (about
100 bytes), plus the names whose halves lie apart in key order; not to
the data size: peak RSS 29 MB for 100k small files, 62 MB for 1M (4M
took 251 MB when 1M took 81 MB: bench/results/scale-4Mb.txt). The nodes read
ahead are bounded (16 per tree level). The lists per extent and csum run
live in huge pages outside the Go heap, so peak RSS moves in 2 MiB steps.

` + batch.MemoryHelp

// exitCodes is the "Exit status" of --help.
const exitCodes = `as fsck(8), summed (over the sets of a batch run: OR-ed, as fsck -A):
  0   no problems
  1   problems found and corrected
  4   problems found and left uncorrected (a missing device is one)
  8   operational error (e.g. a device cannot be opened)
  16  usage error
  32  cancelled (SIGINT, SIGTERM); a repair stops between two transactions`

const examples = `  fsck.ddfs disk.img
  fsck.ddfs -p disk.img             # at boot: safe fixes only
  fsck.ddfs -y --check-data disk.img
  fsck.ddfs --json a.img b.img
  fsck.ddfs --list-codes
  fsck.ddfs --rebuild-csums disk.img  # vouch for data whose checksums are lost, naming its files
  fsck.ddfs -j 2 --json --from images.txt    # JSON Lines, one object per set
  fsck.ddfs --shard auto/4 --from images.txt # pod $JOB_COMPLETION_INDEX of 4
  fsck.ddfs --device elsewhere/hdd1.img ssd0.img
`

// options are fsck.ddfs's flags.
type options struct {
	noChange, preen, preenA, yes, repair, force bool
	listCodes, checkData, asJSON, quiet         bool
	verbose, degraded, rebuildCsums             bool
	stats                                       cli.Stats
	batch                                       batch.Flags
	extra                                       []string
	mode                                        check.Mode
}

func (o *options) addFlags(fl *pflag.FlagSet) {
	fl.BoolVarP(&o.noChange, "no-change", "n", false, "change nothing (the default)")
	fl.BoolVarP(&o.preen, "preen", "p", false, "make only the fixes that cannot lose data")
	fl.BoolVarP(&o.preenA, "auto", "a", false, "the same as -p")
	fl.BoolVarP(&o.yes, "yes", "y", false, "fix everything that can be fixed")
	fl.BoolVar(&o.repair, "repair", false, "the same as -y")
	fl.BoolVarP(&o.force, "force", "f", false, "accepted (a check is always full)")
	fl.BoolVar(&o.listCodes, "list-codes", false, "print the table of problem codes and exit")
	fl.BoolVar(&o.checkData, "check-data", false, "also read every data sector (every copy) and verify its checksum")
	fl.BoolVar(&o.asJSON, "json", false, "print the report as JSON")
	fl.BoolVarP(&o.quiet, "quiet", "q", false, "print only problems")
	fl.BoolVarP(&o.verbose, "verbose", "v", false, "print what was checked")
	fl.StringArrayVar(&o.extra, "device", nil, "another device of the set (repeatable)")
	o.batch.Add(fl, true)
	fl.BoolVar(&o.rebuildCsums, "rebuild-csums", false, "sum the data that has no checksum as it reads now, listing the files vouched for (not with -n)")
	fl.BoolVar(&o.degraded, "degraded", false, "with a device missing: report it and check everything the present devices hold (without: report only the missing device)")
	cli.StatsVar(fl, &o.stats, "per-device I/O (requests, bytes, seeks, modeled time)")
}

// mode picks the mode; more than one is a usage error.
func (o *options) pickMode() (check.Mode, error) {
	n := 0
	m := check.ModeCheck
	for _, c := range []struct {
		set  bool
		mode check.Mode
	}{{o.noChange, check.ModeCheck}, {o.preen || o.preenA, check.ModePreen}, {o.yes || o.repair, check.ModeRepair}} {
		if c.set {
			n++
			m = c.mode
		}
	}
	if n > 1 {
		return 0, fmt.Errorf("-n, -p/-a and -y/--repair exclude each other")
	}
	if o.noChange && o.rebuildCsums {
		return 0, fmt.Errorf("-n changes nothing; --rebuild-csums writes checksums")
	}
	return m, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := batch.SignalContext()
	defer stop()
	return runContext(ctx, args, stdout, stderr)
}

// runContext is run with the context SIGINT and SIGTERM cancel.
func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o options
	code := exitClean
	root := cli.NewRoot("fsck.ddfs [options] DEVICE... [--from FILE]", "check a ddfs filesystem (and repair it with -p or -y)", "V")
	root.Long, root.Example = help, strings.TrimRight(examples, "\n")
	root.Annotations = map[string]string{cli.ExitCodesKey: exitCodes}
	root.Args = cobra.ArbitraryArgs
	root.Flags().SortFlags = false
	o.addFlags(root.Flags())
	root.RunE = func(c *cobra.Command, args []string) error {
		code = runCheck(ctx, &o, args, stdout, stderr)
		return nil
	}
	if _, err := cli.Run(root, args, stdout, stderr); err != nil {
		return usage(stderr, err.Error())
	}
	return code
}

// runCheck checks the sets of the DEVICE operands and returns the exit
// code: the sets' codes OR-ed.
func runCheck(ctx context.Context, o *options, args []string, stdout, stderr io.Writer) int {
	if o.listCodes {
		return listCodes(stdout, o.asJSON)
	}
	mode, err := o.pickMode()
	o.mode = mode
	if err != nil {
		return usage(stderr, err.Error())
	}
	plan, err := o.batch.Plan(args, os.Stdin)
	var ue *cli.UsageError
	if errors.As(err, &ue) {
		return usage(stderr, err.Error())
	} else if err != nil {
		fmt.Fprintf(stderr, "fsck.ddfs: %s\n", err)
		return exitOperational
	}
	term := false
	if f, ok := stderr.(*os.File); ok && cli.IsTerminal(f) {
		term = true
	}
	cfg := batch.Config{Jobs: o.batch.Jobs, Wait: o.batch.Wait, Stdout: stdout, Stderr: stderr,
		Progress: term && o.batch.Progress && plan.Batch, Label: "checked", Bytes: func(s *batch.Set) uint64 { return s.Used }}
	sum := batch.Run(ctx, cfg, plan.Sets, func(ctx context.Context, s *batch.Set, out *batch.Out) (int, error) {
		return checkSet(ctx, o, s, out, plan.Batch, term && !plan.Batch, stderr)
	})
	code := exitClean
	for _, c := range sum.Codes {
		if c != batch.NotRun {
			code |= c
		}
	}
	if sum.Interrupted {
		code |= exitCancelled
	}
	if plan.Batch || sum.Interrupted {
		summarize(stderr, plan, sum, code)
	}
	return code
}

// checkSet checks one set and writes its report to out; bar draws the
// passes of a single set on stderr (a terminal).
func checkSet(ctx context.Context, o *options, s *batch.Set, out *batch.Out, inBatch, bar bool, stderr io.Writer) (int, error) {
	opt := check.Options{Extra: o.extra, CheckData: o.checkData, Degraded: o.degraded, Mode: o.mode, Context: ctx, BatchNodes: cli.BatchNodes(), RebuildCsums: o.rebuildCsums}
	var st *progress.Status
	if bar {
		st = progress.NewStatus(stderr)
		opt.Progress = st.Update
	}
	rep, err := check.Check(s.Paths, opt)
	if st != nil {
		st.Done()
	}
	if err != nil {
		code := exitOperational
		if errors.Is(err, check.ErrCancelled) {
			code = exitCancelled
		}
		fmt.Fprintf(&out.Stderr, "fsck.ddfs: %s: %s\n", s.Path(), batch.Reason(ctx, s.Path(), err))
		if inBatch && o.asJSON {
			batch.ErrorLine(ctx, &out.Stdout, s.Path(), code, err)
		}
		return code, err
	}
	inspect.PrintStats(batch.Named(&out.Stderr, s.Path(), inBatch), string(o.stats), inspect.Stats{IO: rep.IO})
	code := exitCode(rep)
	switch {
	case o.asJSON && inBatch:
		err = batch.JSONLine(&out.Stdout, s.Path(), code, rep)
	case o.asJSON:
		err = cli.JSON(&out.Stdout, rep)
	default:
		printReport(&out.Stdout, s.Path(), rep, o, inBatch)
	}
	if err != nil {
		return exitOperational, err
	}
	return code, nil
}

// summarize ends a batch run with one line on stderr: how many sets had
// which outcome.
func summarize(w io.Writer, plan *batch.Plan, sum batch.Summary, code int) {
	var clean, fixed, left, failed int
	for _, c := range sum.Codes {
		switch {
		case c == batch.NotRun:
		case c == exitClean:
			clean++
		case c&(exitOperational|exitCancelled) != 0:
			failed++
		case c&exitUncorrected != 0:
			left++
		default:
			fixed++
		}
	}
	what := plural(len(sum.Codes)-sum.NotStarted, "set") + " checked"
	if sum.Interrupted {
		what = fmt.Sprintf("interrupted: %s, %d not started", what, sum.NotStarted)
	}
	if plan.Total != len(plan.Sets) {
		what += fmt.Sprintf(" (this shard's %d of %d)", len(plan.Sets), plan.Total)
	}
	fmt.Fprintf(w, "fsck.ddfs: %s: %d clean, %d corrected, %d with problems left, %d not checked; exit %d\n", what, clean, fixed, left, failed, code)
}

func usage(stderr io.Writer, msg string) int {
	fmt.Fprintf(stderr, "fsck.ddfs: %s\nTry 'fsck.ddfs --help' for more information.\n", msg)
	return exitUsage
}

// exitCode sums fsck(8)'s conditions: 1 when something was corrected, 4
// when an error is left.
func exitCode(rep *check.Report) int {
	code := exitClean
	if len(rep.CsumsRebuilt) > 0 {
		code |= exitCorrected
	}
	for _, p := range rep.Problems {
		switch {
		case p.Fixed:
			code |= exitCorrected
		case !p.Warning:
			code |= exitUncorrected
		}
	}
	return code
}

// printReport is a set's text report; in a batch run every line starts
// with the set's path.
func printReport(w io.Writer, image string, rep *check.Report, o *options, inBatch bool) {
	for _, p := range rep.Problems {
		if inBatch {
			fmt.Fprintf(w, "%s: ", image)
		}
		fmt.Fprintf(w, "%s\n", p)
	}
	if len(rep.Incomplete) > 0 {
		fmt.Fprintf(w, "fsck.ddfs: %s: %s tree incomplete (a node or lookup that does not read): %d conclusions about counts and references withheld\n",
			image, strings.Join(rep.Incomplete, ", "), rep.Withheld)
	}
	if rep.RebuiltTree != "" {
		fmt.Fprintf(w, "fsck.ddfs: %s: %s tree rebuilt from the nodes that read; what %s held is lost\n", image, rep.RebuiltTree, plural(rep.NodesLost, "unreadable node"))
	}
	printRebuilt(w, image, rep)
	inspect.PrintExposure(w, "fsck.ddfs: "+image+": ", rep.Exposure)
	if rep.RepairLimited != "" {
		fmt.Fprintf(w, "fsck.ddfs: %s: repair limited: %s\n", image, rep.RepairLimited)
	}
	if rep.RestoredFrom != 0 {
		fmt.Fprintf(w, "fsck.ddfs: %s: roots restored from backup generation %d; the generations after it are lost\n", image, rep.RestoredFrom)
	}
	fixed, left := 0, rep.Errors()
	for _, p := range rep.Problems {
		if p.Fixed {
			fixed++
		}
	}
	if !o.quiet || left > 0 || fixed > 0 {
		state := "clean"
		if w := len(rep.Problems) - rep.Errors(); w > 0 && fixed == 0 { // only warnings
			state = "clean (" + plural(w, "warning") + ": superblock copies the next commit rewrites)"
		}
		switch {
		case o.mode == check.ModeCheck && left > 0:
			state = plural(left, "problem") + " found, none corrected"
		case fixed > 0 || left > 0:
			state = fmt.Sprintf("%s corrected, %s left", plural(fixed, "problem"), plural(left, "problem"))
		}
		fmt.Fprintf(w, "fsck.ddfs: %s: generation %d, %s, %s, %s (%d copies), %s: %s\n",
			image, rep.Generation, plural(rep.Devices, "device"), plural(rep.Chunks, "chunk"),
			plural(rep.Nodes, "node"), rep.NodeCopies, plural(rep.Items, "item"), state)
	}
	if rep.BesideWriter && !o.quiet {
		fmt.Fprintf(w, "fsck.ddfs: %s: in use by a writer: checked its last commit (generation %d), which it keeps while the check reads it\n", image, rep.Generation)
	}
	if o.verbose {
		indent := "  "
		if inBatch {
			indent = image + ": "
		}
		for id := format.TreeID(1); id <= format.NumTrees; id++ {
			if n := rep.TreeNodes[id.String()]; n > 0 {
				fmt.Fprintf(w, "%s%-10s tree: %d nodes\n", indent, id, n)
			}
		}
	}
}

// printRebuilt names, one line each, the files --rebuild-csums vouched
// for and the extents it refused.
func printRebuilt(w io.Writer, image string, rep *check.Report) {
	for _, f := range rep.CsumsRebuilt {
		name := f.Path
		if name == "" {
			name = fmt.Sprintf("inode %d (no path)", f.Ino)
		}
		fmt.Fprintf(w, "fsck.ddfs: %s: checksums made from the data as it reads now: %s\n", image, name)
	}
	for _, r := range rep.CsumsRefused {
		fmt.Fprintf(w, "fsck.ddfs: %s: checksums not made for data extent %d: %s\n", image, r.Logical, r.Message)
	}
}

// listCodes prints the code table (--list-codes).
func listCodes(w io.Writer, asJSON bool) int {
	codes := check.Codes()
	if asJSON {
		if err := cli.JSON(w, codes); err != nil {
			return exitOperational
		}
		return exitClean
	}
	fmt.Fprintf(w, "%-20s %-10s %-6s %s\n", "CODE", "PASS", "FIX", "DESCRIPTION")
	for _, c := range codes {
		fmt.Fprintf(w, "%-20s %-10s %-6s %s\n", c.Code, c.Pass, c.Fix, c.Description)
	}
	return exitClean
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
