package batch

import (
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"time"

	"github.com/spf13/pflag"

	"github.com/ddfs/ddfs/pkg/cli"
)

// Forever is --wait without a duration.
const Forever = time.Duration(math.MaxInt64)

// Wait is --wait[=DURATION]: how long a busy set is retried (0: not at
// all, Forever: until it is free).
type Wait time.Duration

func (w *Wait) String() string {
	switch time.Duration(*w) {
	case 0:
		return ""
	case Forever:
		return "forever"
	}
	return time.Duration(*w).String()
}

func (w *Wait) Set(s string) error {
	if s == "forever" {
		*w = Wait(Forever)
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return fmt.Errorf("want a duration such as 30s or 10m")
	}
	*w = Wait(d)
	return nil
}

// Type is empty so that help shows --wait[=forever], not a value name.
func (w *Wait) Type() string { return "" }

// Flags are the batch options every batch tool takes.
type Flags struct {
	From     string
	Jobs     int
	Shard    string
	Wait     Wait
	Progress bool
	// shard is Shard parsed (Plan).
	shard Shard
}

// Add registers --from, -j/--jobs, --shard, --wait[=DURATION] and
// --progress; progress is false for tools with nothing to count.
func (f *Flags) Add(fl *pflag.FlagSet, progress bool) {
	fl.StringVar(&f.From, "from", "", "also take the operands from `FILE`, one path per line (-: stdin)")
	// 0 stands for the number of cores: a default that differs by
	// machine would make the man pages differ too.
	fl.IntVarP(&f.Jobs, "jobs", "j", 0, "run up to `N` sets at once (default: the number of cores this process may use, as GOMAXPROCS: CPU affinity and a container's CPU limit)")
	fl.StringVar(&f.Shard, "shard", "", "only the sets in shard `I/N` (I from 0 to N-1; by a hash of the filesystem UUID); auto/N takes I from $"+IndexEnv+", auto also N from $"+CountEnv)
	fl.Var(&f.Wait, "wait", "retry a busy set (another writer holds it) for up to DURATION (--wait=10m), or with no value until it is free; without --wait a busy set is reported and skipped")
	fl.Lookup("wait").NoOptDefVal = "forever"
	if progress {
		fl.BoolVar(&f.Progress, "progress", false, "on a terminal: sets done of all, bytes, rate and time left on stderr")
	}
}

// Plan is what a batch run works on.
type Plan struct {
	Sets []*Set
	// Batch is set with --from or --shard, or with operands of more than
	// one set: reports then carry the set's path (JSON Lines, a summary).
	Batch bool
	// Total is the number of sets before --shard.
	Total int
}

// Plan reads the operands (args and --from), groups them into sets and
// keeps this shard's. A bad command line is a *cli.UsageError; an
// unreadable --from list is not.
func (f *Flags) Plan(args []string, stdin io.Reader) (*Plan, error) {
	sh, err := ParseShard(f.Shard, os.Getenv)
	if err != nil {
		return nil, cli.Usagef("%v", err)
	}
	if f.Jobs < 0 {
		return nil, cli.Usagef("-j %d: want at least 1", f.Jobs)
	}
	if f.Jobs == 0 {
		// GOMAXPROCS, not NumCPU: it follows a container's CPU limit
		// (a pod limited to 2 CPUs on a 64-core node runs 2 jobs, not 64,
		// whose memory budget would pass the pod's limit).
		f.Jobs = runtime.GOMAXPROCS(0)
	}
	ops, err := Operands(args, f.From, stdin)
	if err != nil {
		return nil, err
	}
	// An empty --from list is a folder with nothing in it yet (a timer's
	// run): nothing to do, not a mistake on the command line.
	if len(ops) == 0 && f.From == "" {
		return nil, cli.Usagef("no device given")
	}
	sets := Group(ops)
	return &Plan{Sets: sh.Filter(sets), Batch: f.From != "" || f.Shard != "" || len(sets) > 1, Total: len(sets)}, nil
}
