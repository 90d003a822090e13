package batch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/ddfs/ddfs/pkg/cli"
)

// Tool describes a batch run of a tool with the 0/1/2 exit codes
// (trimtool, dedupe-tool status, ddfs info and df).
type Tool struct {
	Prog string // "ddfs: info": error lines start with it
	JSON bool   // --json: a failed set gets an {"path","exit","error"} line
	// Failed says what a failed set was not ("trimmed"): the count line.
	Failed string
}

// Each runs fn over the plan's sets and returns the command's error: the
// one set's, as before batch runs, or a CodeError after a line counting
// the sets that failed: exit 1, or the sets' own codes ORed when a set
// ended with a cli.CodeError (trimtool's 4; its report is its own, so it
// gets no error line on stdout). fn writes a set's report to stdout and
// stderr (its buffers) and returns the error that ended it.
func (t Tool) Each(plan *Plan, cfg Config, fn func(ctx context.Context, s *Set, stdout, stderr io.Writer) error) (Summary, error) {
	ctx, stop := SignalContext()
	defer stop()
	var single error // the one set's error: cli.Execute reports it
	sum := Run(ctx, cfg, plan.Sets, func(ctx context.Context, s *Set, out *Out) (int, error) {
		err := fn(ctx, s, &out.Stdout, &out.Stderr)
		code := cli.ExitError
		var ce *cli.CodeError
		own := errors.As(err, &ce)
		if own {
			code = ce.Code
		}
		switch {
		case err == nil:
			return cli.ExitOK, nil
		case !plan.Batch:
			single = err
		default:
			fmt.Fprintf(&out.Stderr, "%s: %s: %s\n", t.Prog, s.Path(), Reason(ctx, s.Path(), err))
			if t.JSON && !own {
				ErrorLine(ctx, &out.Stdout, s.Path(), cli.ExitError, err)
			}
		}
		return code, err
	})
	if !plan.Batch && !sum.Interrupted {
		return sum, single
	}
	failed, code := 0, 0
	for _, c := range sum.Codes {
		if c != cli.ExitOK {
			failed++
			code |= c
		}
	}
	if failed > 0 {
		fmt.Fprintf(cfg.Stderr, "%s: %d of %d sets not %s%s\n", t.Prog, failed, len(sum.Codes), t.Failed, Note(plan, sum))
		return sum, &cli.CodeError{Code: code}
	}
	return sum, nil
}

// Note tells of an interrupt and of a shard, for a run's count line.
func Note(plan *Plan, sum Summary) string {
	note := ""
	if sum.Interrupted {
		note = fmt.Sprintf(" (interrupted: %d not started)", sum.NotStarted)
	}
	if plan.Total != len(plan.Sets) {
		note += fmt.Sprintf(" (this shard's %d of %d)", len(plan.Sets), plan.Total)
	}
	return note
}

// Named is w with the set's path before every line in a batch run (a
// set's text report, its --stats lines), w itself otherwise.
func Named(w io.Writer, path string, inBatch bool) io.Writer {
	if !inBatch {
		return w
	}
	return &Prefixed{W: w, Prefix: path + ": "}
}

// Prefixed writes text with prefix before every line: a batch run's
// multi-line text report of one set ("a.img: uuid: ...").
type Prefixed struct {
	W      io.Writer
	Prefix string
	mid    bool // inside a line
}

func (p *Prefixed) Write(b []byte) (int, error) {
	n := len(b)
	var out bytes.Buffer
	for len(b) > 0 {
		if !p.mid {
			out.WriteString(p.Prefix)
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out.Write(b)
			p.mid = true
			break
		}
		out.Write(b[:i+1])
		b, p.mid = b[i+1:], false
	}
	if _, err := p.W.Write(out.Bytes()); err != nil {
		return 0, err
	}
	return n, nil
}
