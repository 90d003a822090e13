package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/inspect"
	"github.com/ddfs/ddfs/pkg/progress"
	"github.com/ddfs/ddfs/pkg/scrub"
	"github.com/ddfs/ddfs/pkg/units"
)

const scrubExamples = `  ddfs scrub a.img                 # report bad copies, change nothing
  ddfs scrub --repair a.img        # rewrite bad copies from good ones
  ddfs scrub --resume --repair a.img   # continue an interrupted scrub
  ddfs scrub --json a.img
`

// cmdScrub reads every copy of every node and data sector; the exit code
// is 0 when nothing bad is left, 1 otherwise.
func newScrubCmd() *cobra.Command {
	c, fl, of := newCmd("scrub [--repair] [--resume] [--json] IMAGE\n\nReads every copy of every tree node, checksummed data sector and superblock,\nverifies them, compares copies and reports per device; --repair rewrites bad\ncopies from good ones. Progress is recorded in a state file next to the image\n(.IMAGE.ddfs-scrub, removed when the scrub completes); Ctrl-C stops cleanly and\n--resume continues from it when the set has not changed since.", "read and verify every copy; --repair rewrites bad ones", scrubExamples)
	c.Annotations = map[string]string{cli.ExitCodesKey: scrubExitCodes}
	repair := fl.Bool("repair", false, "rewrite bad copies from good ones")
	resume := fl.Bool("resume", false, "continue an interrupted scrub from its state file")
	asJSON := fl.Bool("json", false, "print the report as JSON")
	statePath := fl.String("state", "", "state file (default .IMAGE.ddfs-scrub next to the image)")
	workers := fl.Int("workers", 0, "parallel readers (default: two per CPU, at least 4)")
	c.RunE = func(c *cobra.Command, args []string) error {
		stdout := c.OutOrStdout()
		if fl.NArg() != 1 {
			return usageErr("want exactly one IMAGE")
		}
		img := fl.Arg(0)
		if *statePath == "" && device.IsRemote(img) {
			return usageErr("%s: a network device has no folder for the scrub state: give --state FILE", img)
		}
		fs, err := of.open(img, *repair)
		if err != nil {
			return err
		}
		defer fs.Close()
		if *statePath == "" {
			*statePath = filepath.Join(filepath.Dir(img), "."+filepath.Base(img)+".ddfs-scrub")
		}
		opt := scrub.Options{Repair: *repair, Resume: *resume, StatePath: *statePath, Workers: *workers, Stop: interrupted()}
		var bar *progress.Bar
		if isTerminal(os.Stderr) {
			bar = progress.NewLabeled(os.Stderr, "read")
			opt.Progress, opt.Total = bar.Add, bar.SetTotal
		}
		rep, err := scrub.Run(fs, opt)
		if bar != nil {
			bar.Done()
		}
		printStats(of.stats, inspect.IOStats(fs), 0, "", fs.HealStats())
		if rep != nil { // what was scrubbed is reported, whatever stopped it
			if jerr := printScrubReport(stdout, img, rep, *asJSON); jerr != nil && err == nil {
				err = jerr
			}
		}
		if err != nil {
			return &cli.CodeError{Code: exitScrubError, Err: fmt.Errorf("%s: %w", img, err)}
		}
		return scrubExit(img, rep)
	}
	return c
}

// Exit codes of scrub, as fsck(8)'s.
const (
	exitScrubCorrected = 1
	exitScrubLeft      = cli.ExitUncorrected
	exitScrubError     = 8
)

const scrubExitCodes = `as fsck(8):
  0   nothing bad found
  1   bad copies found and all rewritten from good ones (--repair)
  4   bad copies left: uncorrectable (no good copy; a node no copy of
      which reads counts, and what lies below it is not scrubbed), or
      found without --repair
  8   operational error (the set does not open, a write fails, Ctrl-C):
      the report still says what was scrubbed
  2   usage error`

func printScrubReport(w io.Writer, img string, rep *scrub.Report, asJSON bool) error {
	if asJSON {
		return cli.JSON(w, rep)
	}
	printScrub(w, img, rep)
	return nil
}

// scrubExit is the exit status for a finished scrub's report: 0, 1 or
// 4 with one line saying what is left.
func scrubExit(img string, rep *scrub.Report) error {
	left, unc := rep.Left()
	switch {
	case left > 0:
		return &cli.CodeError{Code: exitScrubLeft, Err: fmt.Errorf("%s: %d bad copies left (%d uncorrectable)", img, left, unc)}
	case rep.ProfilesLeft() > 0:
		return &cli.CodeError{Code: exitScrubLeft, Err: fmt.Errorf("%s: %d chunks below the set's profiles (restore them: ddfs balance %s)", img, rep.ProfilesLeft(), img)}
	case !rep.Clean():
		return &cli.CodeError{Code: exitScrubCorrected}
	}
	return nil
}

func printScrub(w io.Writer, img string, rep *scrub.Report) {
	from := ""
	if rep.ResumedFrom > 0 {
		from = fmt.Sprintf(", resumed at logical %d", rep.ResumedFrom)
	}
	fmt.Fprintf(w, "scrub %s: generation %d, %d nodes, %s of data; read %s in %.1f s (%s/s)%s\n",
		img, rep.Generation, rep.Nodes, units.Human(rep.DataBytes), units.Human(rep.BytesRead), rep.Seconds, units.Human(uint64(rep.Rate)), from)
	for _, d := range rep.Devices {
		if d.Missing {
			fmt.Fprintf(w, "  devid %d %s: missing, uncorrectable %d\n", d.DevID, d.Path, d.ErrorsUncorrectable)
			continue
		}
		fmt.Fprintf(w, "  devid %d %s: read %s, errors %d (csum %d, io %d, superblock %d), corrected %d, uncorrectable %d\n",
			d.DevID, d.Path, units.Human(d.BytesRead), d.ErrorsFound, d.CsumErrors, d.IOErrors, d.SuperErrors, d.ErrorsCorrected, d.ErrorsUncorrectable)
	}
	for _, n := range rep.NodesUnread {
		fmt.Fprintf(w, "  %s tree node at logical %d: no copy reads, what it holds not scrubbed: %s\n", n.Tree, n.Logical, n.Error)
	}
	if rep.BelowProfile > 0 {
		fmt.Fprintf(w, "  %d chunks below the set's profiles (written while a device was missing), %d restored\n", rep.BelowProfile, rep.ProfilesRestored)
	}
	inspect.PrintExposure(w, "  ", rep.Exposure)
	for _, f := range rep.Files {
		state := "repaired"
		switch {
		case f.Uncorrectable:
			state = "data lost (no good copy)"
		case !rep.Repair:
			state = "has a bad copy"
		case !f.Repaired:
			state = "has a bad copy (rewrite failed)"
		}
		p := f.Path
		if p == "" {
			p = fmt.Sprintf("inode %d (no path)", f.Ino)
		}
		fmt.Fprintf(w, "  file %s: %s\n", p, state)
	}
}

// interrupted returns a channel closed on the first SIGINT or SIGTERM, so
// the scrub stops cleanly and records where to resume.
func interrupted() <-chan struct{} {
	stop := make(chan struct{})
	sig := make(chan os.Signal, 1)
	cli.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		signal.Stop(sig)
		close(stop)
	}()
	return stop
}
