// Package progress draws a byte counter on a terminal: one line on stderr,
// redrawn at most ten times a second. Callers use it only when stderr is a
// terminal.
package progress

import (
	"fmt"
	"os"
	"time"

	"github.com/ddfs/ddfs/pkg/units"
)

// Bar is the counter.
type Bar struct {
	w     *os.File
	label string
	n     uint64
	start time.Time
	last  time.Time
}

// New starts a counter on w.
func New(w *os.File) *Bar { return NewLabeled(w, "copied") }

// NewLabeled starts a counter whose bytes are called label ("read").
func NewLabeled(w *os.File, label string) *Bar {
	return &Bar{w: w, label: label, start: time.Now()}
}

// Add counts n more bytes.
func (p *Bar) Add(n int64) {
	p.n += uint64(n)
	if now := time.Now(); now.Sub(p.last) > 100*time.Millisecond {
		p.last = now
		p.draw()
	}
}

func (p *Bar) draw() {
	secs := time.Since(p.start).Seconds()
	rate := float64(p.n) / max(secs, 1e-9)
	fmt.Fprintf(p.w, "\r%12s %s  %10s/s  %5.1fs ", units.Human(p.n), p.label, units.Human(uint64(rate)), secs)
}

// Done draws the final state.
func (p *Bar) Done() {
	if p.n > 0 {
		p.draw()
		fmt.Fprintln(p.w)
	}
}
