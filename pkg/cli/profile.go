package cli

import (
	"os"
	"runtime/pprof"
)

// Profile starts a CPU profile into $DDFS_CPUPROFILE when it is set (for
// performance work on the real binaries); the returned stop writes it.
func Profile() (stop func()) {
	path := os.Getenv("DDFS_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}
