package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/inspect"
	"github.com/ddfs/ddfs/pkg/progress"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/trim"
	"github.com/ddfs/ddfs/pkg/units"
	"github.com/ddfs/ddfs/pkg/volume"
)

// runExitCodes: --trim refuses as trimtool does (its exit 4).
const runExitCodes = cli.DefaultExitCodes + ", 4 --trim found the allocation metadata and trees disagreeing: the dedupe is done and only the space both call free was trimmed, the rest is listed; run fsck.ddfs"

// freeReport is what run adds about the free space the image still holds.
type freeReport struct {
	Untrimmed *uint64  `json:"untrimmed_bytes,omitempty"` // not in a dry run
	Trimmed   *uint64  `json:"trimmed_bytes,omitempty"`   // with --trim
	Disagree  []string `json:"disagree,omitempty"`
	Kept      uint64   `json:"kept_bytes,omitempty"`
	devices   []trim.DeviceResult
	seconds   float64
	held      uint64 // untrimmed before the trim (a trim discards what is a hole already too)
}

// freeOptions are run's flags that the trim after it follows.
type freeOptions struct {
	trim, quiet, degraded, asJSON bool
}

// afterRun reopens the image the run closed (committed) as trimtool opens
// it, trims with --trim, and measures what free space it still holds.
// A refusal (trim.ErrDisagree) is a cli.CodeError with trimtool's exit 4.
func afterRun(img string, stderr io.Writer, o freeOptions) (rep *freeReport, err error) {
	rep = &freeReport{}
	st, err := store.Open([]string{img}, volume.Options{Write: o.trim, Degraded: o.degraded, Extra: extraDevices})
	if err != nil {
		return rep, cli.NameImage(img, err)
	}
	inspect.ReportHeals(stderr, "dedupe-tool: run", img, st)
	defer func() {
		// Close may still commit (async discard's record cleanup).
		if cerr := st.Close(); err == nil {
			err = cerr
		}
	}()
	var terr error
	if o.trim {
		if rep.held, err = trim.Untrimmed(st); err != nil {
			return rep, fmt.Errorf("%s: %w", img, err)
		}
		terr = rep.trim(st, img, stderr, o)
		if terr != nil && !errors.Is(terr, trim.ErrDisagree) {
			return rep, terr
		}
	}
	n, err := trim.Untrimmed(st)
	if err != nil {
		return rep, fmt.Errorf("%s: %w", img, err)
	}
	rep.Untrimmed = &n
	return rep, terr
}

// trim is trimtool's full run on st: disagreements are listed on stderr
// (nothing disputed is discarded) and end in exit 4.
func (rep *freeReport) trim(st *store.FS, img string, stderr io.Writer, o freeOptions) error {
	var to trim.Options
	if f, ok := stderr.(*os.File); ok && !o.quiet && !o.asJSON && cli.IsTerminal(f) {
		bar := progress.NewLabeled(f, "trimmed")
		defer bar.Done()
		to.Total, to.Progress = bar.SetTotal, bar.Add
	}
	t0 := time.Now()
	res, err := trim.Run(st, to)
	rep.seconds = time.Since(t0).Seconds()
	if res != nil {
		n := res.Bytes()
		rep.Trimmed, rep.devices, rep.Disagree, rep.Kept = &n, res.Devices, res.Disagree, res.Kept
	}
	if err != nil && !errors.Is(err, trim.ErrDisagree) {
		return fmt.Errorf("%s: %w", img, err)
	}
	for _, d := range rep.Disagree {
		fmt.Fprintf(stderr, "dedupe-tool: run: %s: %s\n", img, d)
	}
	if err != nil {
		// Pending discard records stay: the space they name is disputed.
		return &cli.CodeError{Code: cli.ExitUncorrected, Err: fmt.Errorf("%s: %w", img, err)}
	}
	if err := trim.Finish(st, to); err != nil {
		return fmt.Errorf("%s: %w", img, err)
	}
	return nil
}

// hintMin is the least untrimmed space run names: every commit frees the
// metadata nodes it replaced, so a few KiB are nearly always free and
// still backed.
const hintMin = 1 << 20

// print is the text report: the trim's line (per device with -v), then
// on stderr how to give back what the image still holds (not with -q,
// nor after a trim: what it left, it could not give back).
func (rep *freeReport) print(stdout, stderr io.Writer, img string, freed uint64, verbose, quiet bool) {
	if rep.Trimmed != nil {
		left := rep.held
		if rep.Untrimmed != nil {
			left = *rep.Untrimmed
		}
		fmt.Fprintf(stdout, "trimmed %s of free space in %.2fs; the image gave back %s\n",
			units.Human(*rep.Trimmed), rep.seconds, units.Human(rep.held-min(rep.held, left)))
		if verbose {
			for _, d := range rep.devices {
				fmt.Fprintf(stdout, "  %s\n", d.Line(false))
			}
		}
	}
	if quiet || rep.Trimmed != nil || rep.Untrimmed == nil || *rep.Untrimmed < hintMin {
		return
	}
	fmt.Fprintf(stderr, "dedupe-tool: run: %s: freed %s; %s of free space is still allocated in the image; give it back: %s (or dedupe-tool run --trim)\n",
		img, units.Human(freed), units.Human(*rep.Untrimmed), trimCommand(img))
}

// trimCommand is the trimtool command line for the set run opened.
func trimCommand(img string) string {
	args := []string{"trimtool"}
	for _, d := range extraDevices {
		args = append(args, "--device", d)
	}
	return strings.Join(append(args, img), " ")
}
