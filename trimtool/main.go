// Command trimtool discards the free space of a ddfs filesystem offline
// (as fstrim does for a mounted one).
package main

import (
	// Writable opens replay a pending fsync log (FORMAT.md §3.10); the
	// replayer knows files, so it lives in fsys.
	_ "github.com/ddfs/ddfs/pkg/fsys"

	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ddfs/ddfs/pkg/batch"
	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/inspect"
	"github.com/ddfs/ddfs/pkg/progress"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/trim"
	"github.com/ddfs/ddfs/pkg/units"
	"github.com/ddfs/ddfs/pkg/volume"
)

func main() {
	cli.SoftMemoryLimit(160 << 20)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const examples = `  trimtool -v disk.img                 # discard all free space; per device bytes and discards
  trimtool --dry-run --json a.img      # what would be discarded
  trimtool -m 1M -o 0 -l 10G disk.img  # only free ranges of 1 MiB or more in the first 10 GiB
  trimtool policy disk.img             # show the online discard policy
  trimtool policy disk.img async --metadata-min 2M --max-bytes-per-commit 1G
Image files get holes punched (they give their space back to the host); block devices get
BLKDISCARD. Allocated space, superblocks and the first MiB are never touched. A full run
(no -o/-l/-m) then drops the async policy's records of pending discards in one commit;
a crash at any moment is harmless.
`

func run(args []string, stdout, stderr io.Writer) int {
	return cli.Execute(newRoot(), args, stdout, stderr)
}

// newRoot is trimtool (trim, as fstrim) with its policy subcommand.
func newRoot() *cobra.Command {
	c := cli.NewRoot("trimtool [options] DEVICE... [--from FILE]", "discard the free space of a ddfs filesystem offline (as fstrim)", "V")
	c.Example = strings.TrimRight(examples, "\n")
	c.Long = batch.MemoryHelp
	c.Annotations = map[string]string{cli.ExitCodesKey: "0 every set trimmed, 1 a set failed (the count is printed), 2 usage error, 4 a set's allocation metadata and trees disagree: only the space both call free was trimmed, the rest is listed; run fsck.ddfs (codes of several sets are ORed, as fsck(8))"}
	c.Args = cobra.ArbitraryArgs
	var f trimFlags
	f.add(c.Flags())
	c.RunE = func(c *cobra.Command, args []string) error {
		return trimSets(c, args, &f)
	}
	c.AddCommand(newPolicyCmd())
	return c
}

// trimFlags are the options of a trim run (fstrim's, and the open flags).
type trimFlags struct {
	offset, length, minimum string
	verbose, quiet, dry     bool
	asJSON, degraded        bool
	stats                   cli.Stats
	extra                   []string
	batch                   batch.Flags
}

func (f *trimFlags) add(fl *pflag.FlagSet) {
	fl.SortFlags = false
	fl.StringVarP(&f.offset, "offset", "o", "0", "start of the byte range to trim on each device (past the end of every device: EINVAL)")
	fl.StringVarP(&f.length, "length", "l", "", "length of the range (default: to the end)")
	fl.StringVarP(&f.minimum, "minimum", "m", "0", "skip free ranges shorter than this")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "print what was (or would be) trimmed, per device; without -v trimtool prints nothing (as fstrim)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print nothing but errors (no progress bar)")
	fl.BoolVarP(&f.dry, "dry-run", "n", false, "only report what would be trimmed (with -v or --json)")
	fl.BoolVar(&f.asJSON, "json", false, "print JSON")
	cli.StatsVar(fl, &f.stats, "per-device I/O (with --json: also as \"io\" in the output)")
	fl.StringArrayVar(&f.extra, "device", nil, "another device of the set (repeatable)")
	fl.BoolVar(&f.degraded, "degraded", false, "open a mirrored set with a device missing or unusable (reads use surviving copies)")
	f.batch.Add(fl, true)
}

// trimOptions are the range options, checked before any set is opened.
func (f *trimFlags) trimOptions() (o trim.Options, err error) {
	if o.Offset, err = units.ParseSize(f.offset); err != nil {
		return o, cli.Usagef("-o: %v", err)
	}
	if f.length != "" {
		if o.Length, err = units.ParseSize(f.length); err != nil {
			return o, cli.Usagef("-l: %v", err)
		}
	}
	if o.Minimum, err = units.ParseSize(f.minimum); err != nil {
		return o, cli.Usagef("-m: %v", err)
	}
	o.DryRun = f.dry
	return o, nil
}

// trimSet trims one set (its operands: args) and prints its report;
// inBatch prints JSON as one line with "path" and "exit".
func trimSet(args []string, stdout, stderr io.Writer, f *trimFlags, o trim.Options, inBatch bool) (err error) {
	fs, err := store.Open(args, volume.Options{Write: !f.dry, Extra: f.extra, Degraded: f.degraded})
	if err != nil {
		return err
	}
	inspect.ReportHeals(stderr, "trimtool", args[0], fs)
	defer func() {
		// Close may still commit (async discard's record cleanup).
		if cerr := fs.Close(); err == nil {
			err = cerr
		}
	}()
	// A single set's discards on a terminal (the batch runner holds each
	// set's stderr until the set ends, so the bar goes to the terminal).
	var bar *progress.Bar
	if !inBatch && !f.quiet && !f.dry && !f.asJSON && cli.IsTerminal(os.Stderr) {
		// No EndLineOnInterrupt: SIGINT stops the trim at a safe point
		// (batch.SignalContext) and Done ends the line.
		bar = progress.NewLabeled(os.Stderr, "trimmed")
		o.Total, o.Progress = bar.SetTotal, bar.Add
	}
	res, err := trim.Run(fs, o)
	bar.Done()
	disagree := errors.Is(err, trim.ErrDisagree)
	if err != nil && !disagree {
		return fmt.Errorf("%s: %w", args[0], err) // which set -o is past the end of
	}
	for _, d := range res.Disagree {
		fmt.Fprintf(stderr, "trimtool: %s: %s\n", args[0], d)
	}
	if disagree {
		// Pending discard records stay: the space they name is disputed.
		return trimReport(stdout, args[0], res, f, ioStats(fs, stderr, args[0], f, inBatch), inBatch, cli.ExitUncorrected)
	}
	if err := trim.Finish(fs, o); err != nil {
		return err
	}
	return trimReport(stdout, args[0], res, f, ioStats(fs, stderr, args[0], f, inBatch), inBatch, cli.ExitOK)
}

// ioStats prints --stats and returns the I/O figures for --json.
func ioStats(fs *store.FS, stderr io.Writer, image string, f *trimFlags, inBatch bool) []inspect.DeviceIO {
	return inspect.MaybePrintIOStats(batch.Named(stderr, image, inBatch), fs, string(f.stats))
}

// trimReport prints a set's report and ends it with code: 4
// (cli.ExitUncorrected) when the metadata disagreed.
func trimReport(stdout io.Writer, image string, res *trim.Result, f *trimFlags, stats []inspect.DeviceIO, inBatch bool, code int) error {
	if f.asJSON {
		v := struct {
			DryRun   bool                `json:"dry_run"`
			Devices  []trim.DeviceResult `json:"devices"`
			Disagree []string            `json:"disagree,omitempty"`
			Kept     uint64              `json:"kept_bytes,omitempty"`
			IO       []inspect.DeviceIO  `json:"io,omitempty"`
		}{f.dry, res.Devices, res.Disagree, res.Kept, stats}
		if inBatch {
			if err := batch.JSONLine(stdout, image, code, v); err != nil {
				return err
			}
		} else if err := cli.JSON(stdout, v); err != nil {
			return err
		}
	} else if f.verbose && !f.quiet {
		printTrim(stdout, image, res.Devices, f.dry, inBatch)
	}
	if code != cli.ExitOK {
		return &cli.CodeError{Code: code, Err: fmt.Errorf("%s: %w", image, trim.ErrDisagree)}
	}
	return nil
}

// printTrim is -v's report: a line per device, "trimmed" or (dry run)
// "would trim", and the total when there are several devices; in a batch
// run every line starts with the set's first path (image).
func printTrim(w io.Writer, image string, res []trim.DeviceResult, dry, inBatch bool) {
	verb := "trimmed"
	if dry {
		verb = "would trim"
	}
	prefix := ""
	if inBatch {
		prefix = image + ": "
	}
	for _, r := range res {
		fmt.Fprintf(w, "%s%s\n", prefix, r.Line(dry))
	}
	if len(res) > 1 {
		total := (&trim.Result{Devices: res}).Bytes()
		fmt.Fprintf(w, "%s: %s %s (%d bytes)\n", image, verb, units.Human(total), total)
	}
}
