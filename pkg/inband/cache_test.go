package inband

import (
	"runtime"
	"testing"
)

// indexMemEntries is the cache size the dedupe index memory is measured at.
const indexMemEntries = 1 << 20

// TestCacheMemory measures the heap in use per entry of a dedupe
// index cache holding 1M entries (bench/dedupe.sh prints this line), and
// requires the per-entry figure dedupe-tool status multiplies by
// (EntryMemory) to be no smaller than the measurement.
func TestCacheMemory(t *testing.T) {
	// The smallest of three: other allocations of the process only add.
	perEntry := min(measureIndexMemory(indexMemEntries), measureIndexMemory(indexMemEntries), measureIndexMemory(indexMemEntries))
	t.Logf("dedupe index memory: %d entries, %.1f bytes/entry heap in use", indexMemEntries, perEntry)
	if perEntry > float64(EntryMemory) {
		t.Fatalf("measured %.1f bytes per cached entry, status reports %d", perEntry, EntryMemory)
	}
	if perEntry < 16 {
		t.Fatalf("measured %.1f bytes per entry, less than its 16-byte payload: the measurement is broken", perEntry)
	}
}

// measureIndexMemory fills a cache with n distinct entries and
// returns the growth of HeapInuse per entry.
func measureIndexMemory(n int) float64 {
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	before := heap()
	x := &cache{max: n}
	for i := 0; i < n; i++ {
		p := uint64(i) * 0x9E3779B97F4A7C15 // distinct, spread like hash prefixes
		x.put(p, uint64(i)<<12)
	}
	after := heap()
	if x.Len() != n {
		panic("dedupe index lost entries")
	}
	runtime.KeepAlive(x)
	return float64(after-before) / float64(n)
}
