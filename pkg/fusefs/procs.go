package fusefs

import (
	"os"
	"runtime"
)

// spareProcs raises GOMAXPROCS so that a P stays idle while go-fuse's
// readers sit in read(2) of /dev/fuse. Go's sysmon takes the P of a
// goroutine blocked in a syscall only when no P is idle; with
// GOMAXPROCS = 2 (two cores) two waiting readers held both, so sysmon
// took one away after every request, woke a thread to run it and, having
// just taken one, kept polling every 20 us: on the 4K random-read bench
// at load 7 that was 3.8 context switches and 74 us of server CPU per
// read against fuse2fs's 1.0 and 22 (issue 17; perf stat). Called after fuse.NewServer, which
// sizes its reader pool (at most GOMAXPROCS+1, at least 3) from the
// value before this. An explicit $GOMAXPROCS is left alone.
func spareProcs(readers int) {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	// Readers, the handler in pread(2) and the one in writev(2) of its
	// reply, the commit timer in fsync(2): all may hold a P at once.
	want := runtime.NumCPU() + readers + 3
	if runtime.GOMAXPROCS(0) < want {
		runtime.GOMAXPROCS(want)
	}
}

// goFuseReaders is go-fuse's bound on goroutines reading /dev/fuse at
// once (fuse.NewServer: GOMAXPROCS within [2, 16], plus one).
func goFuseReaders() int { return min(max(runtime.GOMAXPROCS(0), 2), 16) + 1 }

// yieldEvery is how many calls pass between two yields (callDone).
const yieldEvery = 16

// callDone ends a read or write call: it unlocks s.mu and, every
// yieldEvery calls, passes through the Go scheduler. go-fuse serves a
// request on the goroutine that read it, which then goes back to read(2)
// without ever entering the scheduler, so its P's scheduling tick stands
// still; after 10 ms of that, sysmon takes the P as if one goroutine had
// run for 10 ms, and having taken one it polls every 20 us for a while
// (4,600 wake-ups a second on the 4K random-read bench, 14% of the
// server's CPU samples). A yield every 16 calls moves the tick (on a busy
// mount a reader meets one within a few ms) at the cost of one
// scheduler pass; a yield per call cost two more context switches.
func (s *Server) callDone() {
	s.calls++
	yield := s.calls%yieldEvery == 0
	s.mu.Unlock()
	if yield {
		gosched()
	}
}

// gosched is runtime.Gosched (a test counts the calls).
var gosched = runtime.Gosched
