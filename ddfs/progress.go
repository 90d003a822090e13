package main

import (
	"fmt"
	"os"
	"time"

	"github.com/ddfs/ddfs/pkg/units"
)

// progress is a one-line byte counter on a terminal's stderr, redrawn at
// most ten times a second. Only used when stderr is a terminal.
type progress struct {
	w     *os.File
	n     uint64
	start time.Time
	last  time.Time
}

func newProgress(w *os.File) *progress { return &progress{w: w, start: time.Now()} }

func (p *progress) add(n int64) {
	p.n += uint64(n)
	if now := time.Now(); now.Sub(p.last) > 100*time.Millisecond {
		p.last = now
		p.draw()
	}
}

func (p *progress) draw() {
	secs := time.Since(p.start).Seconds()
	rate := float64(p.n) / max(secs, 1e-9)
	fmt.Fprintf(p.w, "\r%12s copied  %10s/s  %5.1fs ", units.Human(p.n), units.Human(uint64(rate)), secs)
}

func (p *progress) done() {
	if p.n > 0 {
		p.draw()
		fmt.Fprintln(p.w)
	}
}
