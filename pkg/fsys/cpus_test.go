package fsys

import (
	"runtime"
	"testing"
)

// TestCPUs: a GOMAXPROCS raised past the CPU count (as the mount does)
// does not widen the fan-out; a lower one narrows it.
func TestCPUs(t *testing.T) {
	old := runtime.GOMAXPROCS(runtime.NumCPU() + 6)
	defer runtime.GOMAXPROCS(old)
	if got := cpus(); got != runtime.NumCPU() {
		t.Fatalf("GOMAXPROCS %d: cpus() = %d, want NumCPU %d", runtime.GOMAXPROCS(0), got, runtime.NumCPU())
	}
	runtime.GOMAXPROCS(1)
	if got := cpus(); got != 1 {
		t.Fatalf("GOMAXPROCS 1: cpus() = %d", got)
	}
}
