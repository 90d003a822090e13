package cli

import (
	"os"
	"runtime/debug"
)

// SoftMemoryLimit asks the garbage collector to keep the heap near limit
// (unless the user set GOMEMLIMIT), so big copies stay in bounded memory.
func SoftMemoryLimit(limit int64) {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(limit)
	}
}
