package batch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/device"
)

// Memory: a job reserves jobBase plus its set's estimate (Set.Memory)
// before it starts; the reservations of running jobs stay within
// Budget(jobs), which is also the heap's soft limit. A set whose
// estimate is larger than the budget runs alone.
const (
	jobBase   = 24 << 20
	firstJob  = 160 << 20 // the one-set tools' limit
	nextJob   = 64 << 20
	maxBudget = 1 << 30
	// perIndexEntry is fsck's memory per dedupe index entry.
	perIndexEntry = 100
	// usedShare: without exact counters the estimate is 1/usedShare of
	// the used bytes.
	usedShare = 64
)

// MemoryHelp states the bound for --help.
const MemoryHelp = `Batch runs: operands from the command line and --from are grouped into
sets by filesystem UUID (the members not named are found as for one set;
a copy of a device already named starts a set of its own; two paths to one
file are one operand); each set is processed once, in operand order, up to
-j at a time; an empty --from list is nothing to do (exit 0). Each
set's report is printed whole, in operand order: one JSON object per line
with --json (the keys of one set's report, plus "path" and "exit"). A busy
set is reported and skipped (--wait retries it). Memory: a job reserves
24 MiB plus its set's metadata bytes (checksums not counted) and 100 bytes
per dedupe index entry (1/64 of the used bytes on an image whose counters
are not exact) before it starts; running jobs' reservations stay within
160 MiB plus 64 MiB for each job past the first (at most 1 GiB and 3/4 of
the memory limit of the process's cgroup, also the heap's soft limit), and
a larger set runs alone. SIGINT or SIGTERM stops running jobs at a safe
point and starts no more; a second one ends the process at once.`

// Budget is the memory the running jobs of a -j run may reserve in total.
func Budget(jobs int) int64 {
	return min(firstJob+int64(max(jobs-1, 0))*nextJob, maxBudget)
}

// capBudget keeps the budget within 3/4 of the cgroup's memory limit
// (0: none): the rest is the runtime's and the page cache's.
func capBudget(budget int64, limit uint64) int64 {
	if limit > 0 && limit/4*3 < uint64(budget) {
		return int64(limit / 4 * 3)
	}
	return budget
}

func reserve(s *Set, budget int64) int64 {
	return min(jobBase+int64(min(s.Memory, uint64(budget))), budget)
}

// MemEstimate is what a job over the filesystem of sb holds beyond
// jobBase: fsck's memory follows its metadata (about the bytes of the
// tree items it tracks), not its data, but a checksum costs it nothing
// past its item, and each dedupe index entry about perIndexEntry bytes.
// The counters (FORMAT.md §3.9) tell data from metadata only while they
// are exact; the values are hostile, so the arithmetic saturates.
func MemEstimate(sb *format.Superblock) uint64 {
	if sb.RoCompat&format.RoCompatCounters == 0 {
		return sb.BytesUsed / usedShare
	}
	c := sb.Counters
	meta := subSat(sb.BytesUsed, c.PhysicalBytes)
	if sb.SectorSize > 0 {
		meta = subSat(meta, c.PhysicalBytes/uint64(sb.SectorSize)*uint64(sb.CsumType.Len()))
	}
	if c.IndexEntries > (math.MaxUint64-meta)/perIndexEntry {
		return math.MaxUint64
	}
	return meta + c.IndexEntries*perIndexEntry
}

func subSat(a, b uint64) uint64 { return a - min(a, b) }

// NotRun is the code of a set that was not started (interrupted).
const NotRun = -1

// Out collects one job's report, printed whole when its turn comes.
type Out struct{ Stdout, Stderr bytes.Buffer }

// Job processes one set: it writes its report (errors included) to out
// and returns its exit code and the error that ended it, if any (a busy
// set's error makes the runner retry under --wait).
type Job func(ctx context.Context, s *Set, out *Out) (int, error)

// Config tunes Run.
type Config struct {
	Jobs           int
	Wait           Wait
	Stdout, Stderr io.Writer
	// Progress draws sets done, bytes, rate and time left on Stderr.
	Progress bool
	// Label names the bytes ("checked"); Bytes is a set's share of them.
	Label string
	Bytes func(*Set) uint64
}

// Summary is how a run ended.
type Summary struct {
	// Codes are the sets' exit codes in order (NotRun: not started).
	Codes       []int
	NotStarted  int
	Interrupted bool
}

// SignalContext is cancelled by SIGINT or SIGTERM (unless ignored at
// start: a background job of sh). The first signal asks for a stop at a
// safe point; the handler then goes, so a second one ends the process at
// once (a user who presses Ctrl-C again means it).
func SignalContext() (context.Context, context.CancelFunc) {
	ctx, stop := cli.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return ctx, stop
}

// retryEvery is how often a busy set is tried again under --wait.
const retryEvery = 200 * time.Millisecond

// Run runs job over the sets, cfg.Jobs at a time within the memory
// budget, and prints each report whole, in order. After ctx ends no set
// starts; the running ones see ctx and stop at their safe point.
func Run(ctx context.Context, cfg Config, sets []*Set, job Job) Summary {
	jobs := max(cfg.Jobs, 1)
	budget := capBudget(Budget(jobs), cgroupLimit(cgroupFiles[0], cgroupFiles[1]))
	cli.SoftMemoryLimit(budget)
	slots, mem := semaphore.NewWeighted(int64(jobs)), semaphore.NewWeighted(budget)
	pr := newPrinter(cfg, sets)
	defer pr.stop()
	jobCtx := context.WithValue(ctx, waitKey{}, cfg.Wait)
	var wg sync.WaitGroup
	for i, s := range sets {
		r := reserve(s, budget)
		if !acquire(ctx, slots, mem, r) {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, out, held := attempt(jobCtx, cfg.Wait, s, job, slots, mem, r)
			if held {
				slots.Release(1)
				mem.Release(r)
			}
			pr.done(i, code, out)
		}()
	}
	wg.Wait()
	return pr.summary(ctx.Err() != nil)
}

func acquire(ctx context.Context, slots, mem *semaphore.Weighted, r int64) bool {
	if ctx.Err() != nil || slots.Acquire(ctx, 1) != nil {
		return false
	}
	if mem.Acquire(ctx, r) != nil {
		slots.Release(1)
		return false
	}
	return true
}

// attempt runs job on s, again every retryEvery while the set is busy and
// --wait allows, giving its slot and memory back while it waits. held
// says whether it still holds them.
func attempt(ctx context.Context, wait Wait, s *Set, job Job, slots, mem *semaphore.Weighted, r int64) (int, *Out, bool) {
	start := time.Now()
	for {
		out := &Out{}
		code, err := job(ctx, s, out)
		if !errors.Is(err, device.ErrBusy) || time.Since(start) >= time.Duration(wait) {
			return code, out, true
		}
		slots.Release(1)
		mem.Release(r)
		select {
		case <-ctx.Done():
			return code, out, false
		case <-time.After(retryEvery):
		}
		if !acquire(ctx, slots, mem, r) {
			return code, out, false
		}
	}
}

// waitKey holds a job's --wait in its context (Skipped).
type waitKey struct{}

// Skipped is the note a tool adds to a busy set's error line: how to
// wait for it, or that the wait ran out.
func Skipped(ctx context.Context, err error) string {
	if !errors.Is(err, device.ErrBusy) {
		return ""
	}
	if w, _ := ctx.Value(waitKey{}).(Wait); w > 0 {
		return fmt.Sprintf(" (skipped: still busy after --wait=%s)", &w)
	}
	return " (skipped; --wait[=DURATION] waits for it)"
}

// Reason is err on one line for the error line of the set at path
// ("TOOL: PATH: REASON"): in coreutils' words (cli.Plain), without path
// again when err starts with it, and with the busy note.
func Reason(ctx context.Context, path string, err error) string {
	msg := oneLine(cli.Plain(err))
	if r, ok := strings.CutPrefix(msg, path+": "); ok && r != "" {
		msg = r // "x.img: No such file or directory", not "x.img: x.img: ..."
	}
	return msg + Skipped(ctx, err)
}

func oneLine(s string) string { return string(bytes.ReplaceAll([]byte(s), []byte("\n"), []byte("; "))) }
