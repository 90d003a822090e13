package cli

import (
	"os"
	"runtime/debug"
)

// SoftMemoryLimit asks the garbage collector to keep the heap near limit
// (unless the user set GOMEMLIMIT), and to collect at 50% growth instead
// of 100% (unless GOGC is set): the tools churn through large data
// buffers, and peak RSS matters more to them than a little GC time.
func SoftMemoryLimit(limit int64) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(limit)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
}
