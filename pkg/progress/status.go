package progress

import (
	"fmt"
	"io"
	"time"

	"github.com/ddfs/ddfs/pkg/units"
)

// Status draws one line of a multi-pass job (fsck): the pass, what it
// has done of its total (bytes or items), the rate and the time left.
// It redraws at most ten times a second; callers use it only when the
// output is a terminal.
type Status struct {
	w     io.Writer
	start time.Time
	last  time.Time
	pass  string
	since time.Time // when the pass started
	drawn bool
}

// NewStatus starts a status line on w.
func NewStatus(w io.Writer) *Status { return &Status{w: w, start: time.Now()} }

// Update shows pass with done of total units (total 0: unknown); bytes
// says whether units are bytes (shown with a rate and time left).
func (s *Status) Update(pass string, done, total uint64, bytes bool) {
	now := time.Now()
	if pass != s.pass {
		s.pass, s.since = pass, now
	} else if now.Sub(s.last) < 100*time.Millisecond {
		return
	}
	s.last = now
	s.drawn = true
	line := fmt.Sprintf("%-10s %d", pass, done)
	secs := now.Sub(s.since).Seconds()
	if bytes {
		line = fmt.Sprintf("%-10s %9s", pass, units.Human(done))
		if total > 0 {
			line += " of " + units.Human(total)
		}
		rate := float64(done) / max(secs, 1e-3)
		line += fmt.Sprintf("  %9s/s", units.Human(uint64(rate)))
		if total > done && rate > 0 {
			line += fmt.Sprintf("  ETA %ds", int(float64(total-done)/rate+0.5))
		}
	} else if total > 0 {
		line += fmt.Sprintf(" of %d", total)
	}
	fmt.Fprintf(s.w, "\r%-72s", line)
}

// Done clears the line.
func (s *Status) Done() {
	if s.drawn {
		fmt.Fprintf(s.w, "\r%-72s\r", "")
	}
}
