package batch

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/cli"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/volume"
)

func TestParseShard(t *testing.T) {
	env := func(v string) func(string) string {
		index, count, _ := strings.Cut(v, ",")
		return func(k string) string {
			return map[string]string{IndexEnv: index, CountEnv: count}[k]
		}
	}
	for _, c := range []struct {
		in, env string // env: $JOB_COMPLETION_INDEX,$JOB_COMPLETIONS
		want    Shard
		err     string
	}{
		{"", "", Shard{}, ""}, {"0/1", "", Shard{0, 1}, ""}, {"3/4", "", Shard{3, 4}, ""},
		{"auto/4", "2", Shard{2, 4}, ""}, {"4/4", "", Shard{}, "from 0 to 3"}, {"-1/4", "", Shard{}, "from 0 to 3"},
		{"1/0", "", Shard{}, "positive"}, {"1", "", Shard{}, "I/N, auto/N or auto"}, {"auto/4", "", Shard{}, "is not set"},
		{"auto/4", "4", Shard{}, "$JOB_COMPLETION_INDEX"}, {"x/2", "", Shard{}, "must be a number"},
		{"auto", "2,4", Shard{2, 4}, ""}, {"auto/8", "5,4", Shard{5, 8}, ""}, {"auto", "2", Shard{}, "JOB_COMPLETIONS is not set"},
		{"auto", "2,0", Shard{}, "$JOB_COMPLETIONS (\"0\") must be a positive"}, {"auto", "4,4", Shard{}, "from 0 to 3"},
		{"auto", ",4", Shard{}, "JOB_COMPLETION_INDEX is not set"},
	} {
		got, err := ParseShard(c.in, env(c.env))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %+v %v, want %+v", c.in, got, err, c.want)
		}
	}
}

// TestShardsCoverOnce: every set falls in exactly one of N shards, the
// same one whatever the list order, and no shard is empty.
func TestShardsCoverOnce(t *testing.T) {
	var sets []*Set
	for i := 0; i < 200; i++ {
		sets = append(sets, &Set{Paths: []string{fmt.Sprint(i)}, UUID: fmt.Sprintf("%08x-0000-4000-8000-000000000000", i*7919)})
	}
	sets = append(sets, &Set{Paths: []string{"junk"}})
	for _, n := range []int{1, 2, 4, 7} {
		count := map[*Set]int{}
		for i := 0; i < n; i++ {
			got := Shard{i, n}.Filter(sets)
			if len(got) == 0 {
				t.Errorf("shard %d/%d empty", i, n)
			}
			for _, s := range got {
				count[s]++
			}
		}
		for _, s := range sets {
			if count[s] != 1 {
				t.Fatalf("%d shards: %s in %d", n, s.Path(), count[s])
			}
		}
	}
	// Stable: a known UUID lands where it always did (the hash is part
	// of the interface: workers of different versions split one list).
	if !(Shard{3, 4}).Has(&Set{UUID: "1ee18c9e-fe53-48d2-9ae4-9f2e835a466d"}) {
		t.Error("shard of a fixed UUID moved")
	}
}

func TestReadList(t *testing.T) {
	got, err := ReadList(strings.NewReader("a.img\n\n  \nb c.img\r\n/x/y.img"), "list")
	if err != nil || strings.Join(got, "|") != "a.img|b c.img|/x/y.img" {
		t.Fatalf("%q %v", got, err)
	}
	_, err = ReadList(strings.NewReader(strings.Repeat("x", maxLine+1)), "list")
	if err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("long line: %v", err)
	}
}

func sets(n int, mem uint64) []*Set {
	var out []*Set
	for i := 0; i < n; i++ {
		out = append(out, &Set{Paths: []string{fmt.Sprintf("s%02d", i)}, UUID: fmt.Sprint(i), Memory: mem})
	}
	return out
}

// TestRunOrderAndBound: later sets finishing first still print in
// order, whole, and no more than -j run at once.
func TestRunOrderAndBound(t *testing.T) {
	fakeCgroup(t, "max") // a tight machine limit would lower the peak
	var stdout, stderr bytes.Buffer
	var running, peak atomic.Int32
	ss := sets(20, 0)
	sum := Run(context.Background(), Config{Jobs: 3, Stdout: &stdout, Stderr: &stderr}, ss, func(_ context.Context, s *Set, out *Out) (int, error) {
		n := running.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		defer running.Add(-1)
		i := 0
		fmt.Sscanf(s.Path(), "s%d", &i)
		time.Sleep(time.Duration(20-i) * time.Millisecond)
		fmt.Fprintf(&out.Stdout, "%s: one\n", s.Path())
		time.Sleep(time.Millisecond)
		fmt.Fprintf(&out.Stdout, "%s: two\n", s.Path())
		return i % 3, nil
	})
	var want strings.Builder
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&want, "s%02d: one\ns%02d: two\n", i, i)
		if sum.Codes[i] != i%3 {
			t.Errorf("code %d = %d", i, sum.Codes[i])
		}
	}
	if stdout.String() != want.String() {
		t.Errorf("output:\n%s", stdout.String())
	}
	if p := peak.Load(); p != 3 {
		t.Errorf("peak %d jobs, want 3", p)
	}
}

// TestRunMemoryBound: sets whose estimates fill the budget run alone
// although -j allows more.
func TestRunMemoryBound(t *testing.T) {
	fakeCgroup(t, "max")
	var running, peak atomic.Int32
	big := uint64(Budget(4)) // an estimate of the whole budget
	ss := append(sets(3, big), sets(4, 0)...)
	Run(context.Background(), Config{Jobs: 4, Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}, ss, func(_ context.Context, s *Set, out *Out) (int, error) {
		n := running.Add(1)
		if s.Memory > 0 && n > 1 {
			t.Errorf("%s ran beside %d others", s.Path(), n-1)
		}
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(5 * time.Millisecond)
		running.Add(-1)
		return 0, nil
	})
	if peak.Load() < 2 {
		t.Errorf("small sets did not run together (peak %d)", peak.Load())
	}
	if Budget(1) != 160<<20 || Budget(3) != 288<<20 || Budget(100) != 1<<30 {
		t.Errorf("budgets %d %d %d", Budget(1), Budget(3), Budget(100))
	}
}

// TestRunCancel: after the context ends no set starts; the finished ones
// print, the rest are NotRun.
func TestRunCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var stdout bytes.Buffer
	sum := Run(ctx, Config{Jobs: 1, Stdout: &stdout, Stderr: &bytes.Buffer{}}, sets(10, 0), func(_ context.Context, s *Set, out *Out) (int, error) {
		if s.Path() == "s02" {
			cancel()
		}
		fmt.Fprintln(&out.Stdout, s.Path())
		return 0, nil
	})
	if !sum.Interrupted || sum.NotStarted != 7 || stdout.String() != "s00\ns01\ns02\n" || sum.Codes[3] != NotRun {
		t.Fatalf("%+v %q", sum, stdout.String())
	}
}

// TestRunWaitBusy: a busy set is retried under --wait, without holding
// its slot (the others go on with -j 1), and reported busy without it.
func TestRunWaitBusy(t *testing.T) {
	for _, wait := range []Wait{0, Wait(5 * time.Second)} {
		var mu sync.Mutex
		var order []string
		free := time.Now().Add(100 * time.Millisecond)
		sum := Run(context.Background(), Config{Jobs: 1, Wait: wait, Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}, sets(3, 0), func(_ context.Context, s *Set, out *Out) (int, error) {
			if s.Path() == "s00" && time.Now().Before(free) {
				return 8, &device.BusyError{Path: "s00", PID: 1}
			}
			mu.Lock()
			order = append(order, s.Path())
			mu.Unlock()
			return 0, nil
		})
		got := strings.Join(order, " ")
		if wait == 0 && (sum.Codes[0] != 8 || got != "s01 s02") || wait > 0 && (sum.Codes[0] != 0 || got != "s01 s02 s00") {
			t.Errorf("wait %v: codes %v, ran %s", wait, sum.Codes, got)
		}
	}
	busy := &device.BusyError{Path: "x", PID: 7}
	if d := Reason(context.Background(), "x", busy); d != "x is in use by process 7 (skipped; --wait[=DURATION] waits for it)" {
		t.Error(d)
	}
	// Run gives each job its --wait: a wait that ran out says so.
	var got string
	Run(context.Background(), Config{Jobs: 1, Wait: Wait(time.Millisecond), Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}, sets(1, 0), func(ctx context.Context, s *Set, out *Out) (int, error) {
		got = Reason(ctx, "x", busy)
		return 8, busy
	})
	if got != "x is in use by process 7 (skipped: still busy after --wait=1ms)" {
		t.Error(got)
	}
}

func TestJSONLineAndPrefixed(t *testing.T) {
	var b bytes.Buffer
	JSONLine(&b, "a.img", 4, struct {
		UUID string `json:"uuid"`
	}{"u"})
	JSONLine(&b, "b.img", 0, struct{}{})
	if b.String() != `{"path":"a.img","exit":4,"uuid":"u"}`+"\n"+`{"path":"b.img","exit":0}`+"\n" {
		t.Fatal(b.String())
	}
	b.Reset()
	p := &Prefixed{W: &b, Prefix: "x: "}
	p.Write([]byte("one\ntw"))
	p.Write([]byte("o\n\nthree\n"))
	if b.String() != "x: one\nx: two\nx: \nx: three\n" {
		t.Fatalf("%q", b.String())
	}
}

// TestGroupFIFO: a FIFO among the operands is a set of its own with no
// UUID (not ddfs), found without waiting for a writer that never comes.
func TestGroupFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo, junk := filepath.Join(dir, "fifo"), filepath.Join(dir, "junk.img")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(junk, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan []*Set, 1)
	go func() { done <- Group([]string{junk, fifo}) }()
	select {
	case got := <-done:
		if len(got) != 2 || got[1].Path() != fifo || got[1].UUID != "" {
			t.Fatalf("sets %+v", got)
		}
	case <-time.After(time.Minute): // a hang, not a slow machine
		// Let the blocked open return so that the test binary can end.
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		t.Fatal("Group blocked on a FIFO")
	}
	_, err := volume.PeekSuper(fifo)
	if !errors.Is(err, volume.ErrNoSuperblock) {
		t.Fatalf("PeekSuper(FIFO): %v, want ErrNoSuperblock", err)
	}
}

// TestPlanEmptyFrom: an empty --from list is a batch run of no sets (a
// timer on an empty folder succeeds); no operands at all is a usage error.
func TestPlanEmptyFrom(t *testing.T) {
	list := filepath.Join(t.TempDir(), "list")
	if err := os.WriteFile(list, []byte("\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, from := range []string{list, "-"} {
		f := Flags{From: from}
		plan, err := f.Plan(nil, strings.NewReader(""))
		if err != nil || len(plan.Sets) != 0 || !plan.Batch || plan.Total != 0 {
			t.Errorf("--from %s: %+v %v", from, plan, err)
		}
	}
	var ue *cli.UsageError
	if _, err := (&Flags{}).Plan(nil, strings.NewReader("")); !errors.As(err, &ue) {
		t.Errorf("no operands: %v, want a usage error", err)
	}
}

// TestMemEstimate: a job's estimate follows metadata, not data: two VM
// images of 20 GiB each (few, large extents) fit -j 2's budget together;
// csums do not count, index entries do; hostile counters saturate, and an
// image without exact counters keeps 1/64 of its used bytes.
func TestMemEstimate(t *testing.T) {
	vm := &format.Superblock{RoCompat: format.RoCompatCounters, SectorSize: 4096, CsumType: format.CsumCRC32C, BytesUsed: 20<<30 + 40<<20}
	vm.Counters.PhysicalBytes = 20 << 30
	// 40 MiB of metadata, 20 MiB of it the csums of 20 GiB (4 bytes per 4 KiB).
	if got := MemEstimate(vm); got != 20<<20 {
		t.Errorf("VM image: %d, want %d", got, 20<<20)
	}
	if r := reserve(&Set{Memory: MemEstimate(vm)}, Budget(2)); 2*r > Budget(2) {
		t.Errorf("two VM images reserve %d each, over -j 2's %d", r, Budget(2))
	}
	dd := *vm
	dd.Counters.IndexEntries = 1 << 20
	if got := MemEstimate(&dd); got != 20<<20+100<<20 {
		t.Errorf("1 Mi index entries: %d", got)
	}
	dd.Counters.IndexEntries, dd.Counters.PhysicalBytes = math.MaxUint64, math.MaxUint64
	if got := MemEstimate(&dd); got != math.MaxUint64 {
		t.Errorf("hostile counters: %d", got)
	}
	old := &format.Superblock{BytesUsed: 64 << 20}
	if got := MemEstimate(old); got != 1<<20 {
		t.Errorf("no exact counters: %d", got)
	}
}

// secondSignalEnv makes the test binary the child of TestSecondSignal.
const secondSignalEnv = "DDFS_TEST_SECOND_SIGNAL"

// TestSecondSignal: after the first signal has cancelled the context, a
// second one ends the process (by that signal) although the job goes on.
// SIGTERM: a test run as a background job has SIGINT ignored, rightly
// left so.
func TestSecondSignal(t *testing.T) {
	if os.Getenv(secondSignalEnv) != "" {
		ctx, stop := SignalContext()
		defer stop()
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
		<-ctx.Done()
		fmt.Println("stopping")
		// A job that does not reach its safe point (for long: an orphan,
		// should the parent die, ends on its own).
		time.Sleep(2 * time.Minute)
		os.Exit(3)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSecondSignal$")
	cmd.Env = append(os.Environ(), secondSignalEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "stopping\n" {
		cmd.Process.Kill()
		t.Fatalf("child: %q %v", line, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	// Again and again: the handler goes a moment after the first signal.
	deadline := time.After(time.Minute)
	for tick := time.NewTicker(50 * time.Millisecond); ; {
		select {
		case <-exited:
			ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
				t.Fatalf("child ended with %v, want killed by SIGTERM", cmd.ProcessState)
			}
			return
		case <-tick.C:
			cmd.Process.Signal(syscall.SIGTERM)
		case <-deadline:
			cmd.Process.Kill()
			<-exited
			t.Fatal("a second signal did not end the process")
		}
	}
}

// TestGroupBlockNodes: two device nodes of one block device (as a
// container's /dev beside the host's) are one operand; another device's
// node is not. Needs mknod (root): skipped without it.
func TestGroupBlockNodes(t *testing.T) {
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")
	for _, n := range []struct {
		path  string
		minor int
	}{{a, 250}, {b, 250}, {c, 251}} {
		// Loop devices' major 7; the nodes are never opened for I/O
		// beyond a superblock peek, which fails on an absent device.
		if err := syscall.Mknod(n.path, syscall.S_IFBLK|0o600, 7<<8|n.minor); err != nil {
			t.Skipf("mknod: %v", err)
		}
	}
	got := Group([]string{a, b, c})
	if len(got) != 2 || got[0].Path() != a || got[1].Path() != c || len(got[0].Paths) != 1 {
		t.Fatalf("sets %+v %+v", got[0], got[len(got)-1])
	}
}

// TestPlanDefaultJobs: -j defaults to the CPUs the process may use
// (GOMAXPROCS follows a container's CPU limit), not the machine's cores.
func TestPlanDefaultJobs(t *testing.T) {
	n := runtime.NumCPU() + 1 // differs from NumCPU on any machine
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
	f := Flags{}
	if _, err := f.Plan([]string{filepath.Join(t.TempDir(), "none.img")}, nil); err != nil || f.Jobs != n {
		t.Fatalf("-j default %d (%v), want %d", f.Jobs, err, n)
	}
}

// TestCgroupLimit: the budget stays within 3/4 of the smallest memory
// limit from the process's cgroup up (v2 memory.max, v1
// memory.limit_in_bytes), "max" and v1's near-2^63 being none.
func TestCgroupLimit(t *testing.T) {
	root := t.TempDir()
	write := func(p, v string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
		if err := os.WriteFile(filepath.Join(root, p), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	proc := filepath.Join(root, "cgroup")
	for _, c := range []struct {
		proc  string
		files map[string]string
		want  uint64
	}{
		{"0::/", map[string]string{"memory.max": "max"}, 0},
		{"0::/", map[string]string{"memory.max": "335544320"}, 320 << 20},
		// A unit's limit below its slice's, and the slice's below it.
		{"0::/sys.slice/a.service", map[string]string{"sys.slice/memory.max": "1073741824", "sys.slice/a.service/memory.max": "268435456"}, 256 << 20},
		{"0::/sys.slice/a.service", map[string]string{"sys.slice/memory.max": "268435456", "sys.slice/a.service/memory.max": "max"}, 256 << 20},
		// v1, as here: the container's own cgroup is the root.
		{"4:memory:/host/path\n0::/", map[string]string{"memory/memory.limit_in_bytes": "134217728"}, 128 << 20},
		{"4:cpu,memory:/p\n", map[string]string{"memory/p/memory.limit_in_bytes": "9223372036854771712"}, 0},
		{"garbage", nil, 0},
	} {
		os.RemoveAll(root)
		for p, v := range c.files {
			write(p, v)
		}
		write("cgroup", c.proc)
		if got := cgroupLimit(proc, root); got != c.want {
			t.Errorf("%q %v: limit %d, want %d", c.proc, c.files, got, c.want)
		}
	}
	if cgroupLimit(filepath.Join(root, "none"), root) != 0 {
		t.Error("no /proc/self/cgroup: want no limit")
	}
	if capBudget(Budget(2), 256<<20) != 192<<20 || capBudget(Budget(2), 320<<20) != Budget(2) || capBudget(Budget(2), 0) != Budget(2) || capBudget(Budget(2), 1<<40) != Budget(2) {
		t.Errorf("capBudget %d %d", capBudget(Budget(2), 256<<20), capBudget(Budget(2), 0))
	}
}

// fakeCgroup makes Run see a cgroup v2 memory.max of limit ("max": none)
// for the test, whatever the machine's limit.
func fakeCgroup(t *testing.T, limit string) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "cgroup"), []byte("0::/\n"), 0o644)
	os.WriteFile(filepath.Join(root, "memory.max"), []byte(limit+"\n"), 0o644)
	old := cgroupFiles
	t.Cleanup(func() { cgroupFiles = old })
	cgroupFiles = [2]string{filepath.Join(root, "cgroup"), root}
}

// TestRunCgroupBudget: Run keeps to the cgroup's limit: under 40 MiB
// (a 30 MiB budget) two 24 MiB jobs never run together, -j 4 or not.
func TestRunCgroupBudget(t *testing.T) {
	fakeCgroup(t, "41943040")
	var running atomic.Int32
	Run(context.Background(), Config{Jobs: 4, Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}, sets(4, 0), func(_ context.Context, s *Set, out *Out) (int, error) {
		defer running.Add(-1)
		if running.Add(1) > 1 {
			t.Errorf("%s ran beside another job", s.Path())
		}
		// Long enough for the next job to start, were it let.
		for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end) && running.Load() == 1; {
			time.Sleep(time.Millisecond)
		}
		return 0, nil
	})
}
