package fsys

import "runtime"

// cpus bounds the fan-out of hashing and decompression: the CPUs this
// process may run on. GOMAXPROCS alone is not that under a mount, which
// raises it past the CPU count so that idle Ps stay free for go-fuse's
// readers (pkg/fusefs/procs.go): 8 hashing goroutines on 2 CPUs there.
// A lower $GOMAXPROCS still wins.
func cpus() int { return max(1, min(runtime.GOMAXPROCS(0), runtime.NumCPU())) }
