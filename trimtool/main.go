// Command trimtool discards the free space of a ddfs filesystem offline
// (as fstrim does for a mounted one).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/inspect"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/trim"
	"github.com/ddfs/ddfs/pkg/units"
	"github.com/ddfs/ddfs/pkg/volume"
)

func main() {
	cli.SoftMemoryLimit(160 << 20)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const examples = `  trimtool -v disk.img                 discard all free space; per device bytes and discards
  trimtool --dry-run --json a.img      what would be discarded
  trimtool -m 1M -o 0 -l 10G disk.img  only free ranges of 1 MiB or more in the first 10 GiB
  trimtool policy disk.img             show the online discard policy
  trimtool policy disk.img async --metadata-min 2M --max-bytes-per-commit 1G
Image files get holes punched (they give their space back to the host); block devices get
BLKDISCARD. Allocated space, superblocks and the first MiB are never touched. A full run
(no -o/-l/-m) then drops the async policy's records of pending discards in one commit;
a crash at any moment is harmless.
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "policy" {
		return cli.Report(stderr, "trimtool: policy", policyCmd(args[1:], stdout, stderr))
	}
	return cli.Report(stderr, "trimtool", trimCmd(args, stdout, stderr))
}

func trimCmd(args []string, stdout, stderr io.Writer) (err error) {
	fl := cli.NewFlags("trimtool", "trimtool [options] DEVICE...", examples, stdout)
	offset := fl.StringP("offset", "o", "0", "start of the byte range to trim on each device")
	length := fl.StringP("length", "l", "", "length of the range (default: to the end)")
	minimum := fl.StringP("minimum", "m", "0", "skip free ranges shorter than this")
	verbose := fl.BoolP("verbose", "v", false, "print bytes and discards per device")
	dry := fl.Bool("dry-run", false, "only report what would be discarded")
	asJSON := fl.Bool("json", false, "print JSON")
	stats := fl.Bool("stats", false, "print per-device I/O on stderr (with --json: also as \"io\" in the output)")
	var extra []string
	fl.StringArrayVar(&extra, "device", nil, "another device of the set (repeatable)")
	degraded := fl.Bool("degraded", false, "open a mirrored set with a device missing or unusable (reads use surviving copies)")
	if err := cli.Parse(fl, args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return err
	}
	if fl.NArg() == 0 {
		return cli.Usagef("no device given")
	}
	var o trim.Options
	if o.Offset, err = units.ParseSize(*offset); err != nil {
		return cli.Usagef("-o: %v", err)
	}
	if *length != "" {
		if o.Length, err = units.ParseSize(*length); err != nil {
			return cli.Usagef("-l: %v", err)
		}
	}
	if o.Minimum, err = units.ParseSize(*minimum); err != nil {
		return cli.Usagef("-m: %v", err)
	}
	o.DryRun = *dry
	fs, err := store.Open(fl.Args(), volume.Options{Write: !*dry, Extra: append(fl.Args()[1:], extra...), Degraded: *degraded})
	if err != nil {
		return err
	}
	inspect.ReportHeals(stderr, "trimtool", fl.Arg(0), fs)
	defer func() {
		// Close may still commit (async discard's record cleanup).
		if cerr := fs.Close(); err == nil {
			err = cerr
		}
	}()
	res, err := trim.Run(fs, o)
	if err != nil {
		return err
	}
	if !o.DryRun && o.Offset == 0 && o.Length == 0 && o.Minimum == 0 {
		// Everything free is discarded: pending records are done.
		if err := fs.ClearDiscardRecords(); err != nil {
			return err
		}
	}
	io := inspect.MaybePrintIOStats(stderr, fs, *stats)
	if *asJSON {
		return cli.JSON(stdout, struct {
			DryRun  bool                `json:"dry_run"`
			Devices []trim.DeviceResult `json:"devices"`
			IO      []inspect.DeviceIO  `json:"io,omitempty"`
		}{*dry, res, io})
	}
	var total uint64
	for _, r := range res {
		total += r.Bytes
		if *verbose {
			fmt.Fprintf(stdout, "%s (devid %d): %s (%d bytes) in %d discards", r.Path, r.DevID, units.Human(r.Bytes), r.Bytes, r.Discards)
			if r.Note != "" {
				fmt.Fprintf(stdout, " (%s)", r.Note)
			}
			fmt.Fprintln(stdout)
		}
	}
	verb := "trimmed"
	if *dry {
		verb = "would trim"
	}
	if !*verbose || len(res) > 1 {
		fmt.Fprintf(stdout, "%s: %s %s (%d bytes)\n", fl.Arg(0), verb, units.Human(total), total)
	}
	return nil
}
