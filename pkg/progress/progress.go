// Package progress draws progress on a terminal: one line on stderr,
// redrawn at most ten times a second, with what is done of the total, the
// rate and the time left when the total is known. Callers use it only
// when stderr is a terminal (cli.IsTerminal) and the user did not ask -q.
package progress

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ddfs/ddfs/pkg/units"
)

// Bar is a byte counter.
type Bar struct {
	w     io.Writer
	label string
	mu    sync.Mutex
	n     uint64
	total uint64 // 0: not known (yet)
	start time.Time
	last  time.Time
	width int  // of the last line drawn, to clear it
	ended bool // Done ran: later calls do nothing
}

// New starts a counter of bytes copied on w.
func New(w io.Writer) *Bar { return NewLabeled(w, "copied") }

// NewLabeled starts a counter whose bytes are called label ("read").
func NewLabeled(w io.Writer, label string) *Bar {
	return &Bar{w: w, label: label, start: time.Now()}
}

// SetTotal gives the bytes the work will count (known late: a walk may
// sum them while the work runs). Safe from any goroutine.
func (p *Bar) SetTotal(n uint64) {
	p.mu.Lock()
	p.total = n
	p.mu.Unlock()
}

// Add counts n more bytes. Safe from any goroutine.
func (p *Bar) Add(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n += uint64(n)
	if now := time.Now(); now.Sub(p.last) > 100*time.Millisecond && !p.ended {
		p.last = now
		p.draw(now)
	}
}

// Line is the text of the counter after secs: "1.2G of 4.0G  30%
// 512M/s  ETA 0:05 copied", or without a total "1.2G copied  512M/s  3s".
func Line(done, total uint64, secs float64, label string) string {
	rate := float64(done) / max(secs, 1e-3)
	if total == 0 || done > total {
		return fmt.Sprintf("%s %s  %s/s  %s", units.Short(done), label, units.Short(uint64(rate)), clock(secs))
	}
	eta := "--:--"
	if rate > 0 && done > 0 {
		eta = clock(float64(total-done) / rate)
	}
	return fmt.Sprintf("%s of %s %3d%%  %s/s  ETA %s %s", units.Short(done), units.Short(total), done*100/max(total, 1),
		units.Short(uint64(rate)), eta, label)
}

// clock renders seconds as m:ss (h:mm:ss past an hour, >99h past that).
func clock(secs float64) string {
	s := int(min(secs, 1e9) + 0.5)
	if s >= 100*3600 {
		return ">99h"
	}
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

func (p *Bar) draw(now time.Time) {
	line := Line(p.n, p.total, now.Sub(p.start).Seconds(), p.label)
	pad := ""
	if len(line) < p.width {
		pad = strings.Repeat(" ", p.width-len(line))
	}
	p.width = len(line)
	fmt.Fprintf(p.w, "\r%s%s", line, pad)
}

// EndLineOnInterrupt makes SIGINT and SIGTERM end the bar's line before
// the process dies of them as it would have (the shell's next prompt
// starts on a line of its own). For tools that handle neither signal
// themselves: the signal is raised again once the bar lets go of it.
func (p *Bar) EndLineOnInterrupt() {
	var sigs []os.Signal
	for _, s := range []os.Signal{syscall.SIGINT, syscall.SIGTERM} {
		if !signal.Ignored(s) { // a background job keeps ignoring SIGINT
			sigs = append(sigs, s)
		}
	}
	if len(sigs) == 0 {
		return
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	go func() {
		sig := <-ch
		p.mu.Lock()
		fmt.Fprintln(p.w)
		p.width = 0
		p.mu.Unlock()
		signal.Stop(ch)
		syscall.Kill(os.Getpid(), sig.(syscall.Signal))
	}()
}

// Done draws the final state and ends the line; it may be called more
// than once (before a report, and deferred), and on a nil Bar.
func (p *Bar) Done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n > 0 && !p.ended {
		p.ended = true
		p.draw(time.Now())
		fmt.Fprintln(p.w)
	}
}

// Reader counts the bytes read through it on Bar.
type Reader struct {
	R   io.Reader
	Bar *Bar
}

func (r Reader) Read(p []byte) (int, error) {
	n, err := r.R.Read(p)
	r.Bar.Add(int64(n))
	return n, err
}

// Writer counts the bytes written through it on Bar.
type Writer struct {
	W   io.Writer
	Bar *Bar
}

func (w Writer) Write(p []byte) (int, error) {
	n, err := w.W.Write(p)
	w.Bar.Add(int64(n))
	return n, err
}
