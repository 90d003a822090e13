package cli

import (
	"runtime"
	"testing"
)

// TestProfileSamplingOff: without DDFS_MEMPROFILE the tools sample no
// allocations (the sampler's buckets were ~0.9 MB of dedupe-tool run's
// peak RSS); with it, sampling stays on so the profile has something.
func TestProfileSamplingOff(t *testing.T) {
	defer func(r int) { runtime.MemProfileRate = r }(runtime.MemProfileRate)
	runtime.MemProfileRate = 512 << 10
	t.Setenv("DDFS_MEMPROFILE", t.TempDir()+"/mem.pprof")
	Profile()()
	if runtime.MemProfileRate != 512<<10 {
		t.Fatalf("with DDFS_MEMPROFILE: MemProfileRate %d, want the default", runtime.MemProfileRate)
	}
	t.Setenv("DDFS_MEMPROFILE", "")
	Profile()()
	if runtime.MemProfileRate != 0 {
		t.Fatalf("without DDFS_MEMPROFILE: MemProfileRate %d, want 0", runtime.MemProfileRate)
	}
}
