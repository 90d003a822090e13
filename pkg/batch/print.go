package batch

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ddfs/ddfs/pkg/progress"
)

// printer prints the reports in set order as they come in (a report
// waits for the ones before it), and the progress line between them.
type printer struct {
	mu       sync.Mutex
	cfg      Config
	sets     []*Set
	codes    []int
	outs     []*Out
	finished []bool
	next     int // first report not printed
	nDone    int
	bytes    uint64
	total    uint64
	start    time.Time
	width    int // of the progress line drawn, 0: none
	quit     chan struct{}
	wg       sync.WaitGroup
}

func newPrinter(cfg Config, sets []*Set) *printer {
	p := &printer{cfg: cfg, sets: sets, codes: make([]int, len(sets)), outs: make([]*Out, len(sets)),
		finished: make([]bool, len(sets)), start: time.Now(), quit: make(chan struct{})}
	for i, s := range sets {
		p.codes[i] = NotRun
		p.total += p.share(s)
	}
	if cfg.Progress {
		p.wg.Add(1)
		go p.tick()
	}
	return p
}

func (p *printer) share(s *Set) uint64 {
	if p.cfg.Bytes == nil {
		return 0
	}
	return p.cfg.Bytes(s)
}

// tick redraws the progress line: the rate and time left change while no
// set finishes.
func (p *printer) tick() {
	defer p.wg.Done()
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.quit:
			return
		case <-t.C:
			p.mu.Lock()
			p.draw()
			p.mu.Unlock()
		}
	}
}

// done records set i's report and prints what is now in order.
func (p *printer) done(i, code int, out *Out) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.codes[i], p.outs[i], p.finished[i] = code, out, true
	p.nDone++
	p.bytes += p.share(p.sets[i])
	p.flush(false)
	if p.cfg.Progress {
		p.draw()
	}
}

// flush prints the finished reports from p.next on; all skips the
// reports of sets never started (the run is over).
func (p *printer) flush(all bool) {
	for p.next < len(p.sets) && (p.finished[p.next] || all) {
		if out := p.outs[p.next]; out != nil {
			p.clear()
			p.cfg.Stdout.Write(out.Stdout.Bytes())
			p.cfg.Stderr.Write(out.Stderr.Bytes())
			p.outs[p.next] = nil // printed: its memory goes
		}
		p.next++
	}
}

func (p *printer) draw() {
	line := fmt.Sprintf("%d/%d sets  %s", p.nDone, len(p.sets),
		progress.Line(p.bytes, p.total, time.Since(p.start).Seconds(), p.cfg.Label))
	pad := ""
	if len(line) < p.width {
		pad = strings.Repeat(" ", p.width-len(line))
	}
	fmt.Fprintf(p.cfg.Stderr, "\r%s%s", line, pad)
	p.width = len(line)
}

func (p *printer) clear() {
	if p.width > 0 {
		fmt.Fprintf(p.cfg.Stderr, "\r%s\r", strings.Repeat(" ", p.width))
		p.width = 0
	}
}

// stop ends the progress line (idempotent with summary).
func (p *printer) stop() {
	select {
	case <-p.quit:
	default:
		close(p.quit)
	}
	p.wg.Wait()
	p.mu.Lock()
	p.clear()
	p.mu.Unlock()
}

func (p *printer) summary(interrupted bool) Summary {
	p.stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flush(true)
	s := Summary{Codes: p.codes, Interrupted: interrupted}
	for _, c := range p.codes {
		if c == NotRun {
			s.NotStarted++
		}
	}
	return s
}
