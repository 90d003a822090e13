package batch

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ddfs/ddfs/pkg/device"
)

func TestParseShard(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == IndexEnv {
				return v
			}
			return ""
		}
	}
	for _, c := range []struct {
		in, env string
		want    Shard
		err     string
	}{
		{"", "", Shard{}, ""}, {"0/1", "", Shard{0, 1}, ""}, {"3/4", "", Shard{3, 4}, ""},
		{"auto/4", "2", Shard{2, 4}, ""}, {"4/4", "", Shard{}, "from 0 to 3"}, {"-1/4", "", Shard{}, "from 0 to 3"},
		{"1/0", "", Shard{}, "positive"}, {"1", "", Shard{}, "I/N or auto/N"}, {"auto/4", "", Shard{}, "is not set"},
		{"auto/4", "4", Shard{}, "$JOB_COMPLETION_INDEX"}, {"x/2", "", Shard{}, "must be a number"},
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

func sets(n int, used uint64) []*Set {
	var out []*Set
	for i := 0; i < n; i++ {
		out = append(out, &Set{Paths: []string{fmt.Sprintf("s%02d", i)}, UUID: fmt.Sprint(i), Used: used})
	}
	return out
}

// TestRunOrderAndBound: later sets finishing first still print in
// order, whole, and no more than -j run at once.
func TestRunOrderAndBound(t *testing.T) {
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
	var running, peak atomic.Int32
	big := uint64(Budget(4)) * usedShare // an estimate of the whole budget
	ss := append(sets(3, big), sets(4, 0)...)
	Run(context.Background(), Config{Jobs: 4, Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}, ss, func(_ context.Context, s *Set, out *Out) (int, error) {
		n := running.Add(1)
		if s.Used > 0 && n > 1 {
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
	if d := Reason("x", &device.BusyError{Path: "x", PID: 7}); d != "x is in use by process 7 (skipped; --wait[=DURATION] waits for it)" {
		t.Error(d)
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
