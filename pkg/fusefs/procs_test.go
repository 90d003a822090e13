package fusefs

import (
	"runtime"
	"testing"
)

// TestSpareProcs: GOMAXPROCS ends above the CPUs plus go-fuse's readers,
// so sysmon finds an idle P while they wait in read(2); it is restored
// after the test.
func TestSpareProcs(t *testing.T) {
	t.Setenv("GOMAXPROCS", "")
	old := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(old)
	spareProcs(3)
	if got, want := runtime.GOMAXPROCS(0), runtime.NumCPU()+3+3; got != want {
		t.Fatalf("GOMAXPROCS %d after spareProcs(3), want %d", got, want)
	}
	runtime.GOMAXPROCS(1)
	t.Setenv("GOMAXPROCS", "1")
	spareProcs(3)
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("GOMAXPROCS %d with $GOMAXPROCS=1 set, want it left at 1", got)
	}
}

// TestCallDoneYields: every call unlocks the server and every
// yieldEvery-th passes through the scheduler, no more often.
func TestCallDoneYields(t *testing.T) {
	n := 0
	defer func(g func()) { gosched = g }(gosched)
	gosched = func() { n++ }
	s := &Server{}
	for i := 0; i < 3*yieldEvery; i++ {
		s.mu.Lock()
		s.callDone()
		if !s.mu.TryLock() {
			t.Fatalf("call %d: the server is still locked after callDone", i)
		}
		s.mu.Unlock()
	}
	if n != 3 {
		t.Fatalf("%d yields in %d calls, want 3", n, 3*yieldEvery)
	}
}
