// Package scrub reads every copy of every tree node and of every
// checksummed data sector of a set, verifies checksums and headers,
// compares the copies, and (with Repair) rewrites each bad copy from a
// good one, as btrfs scrub and zpool scrub do. Work is cut into units in
// logical order; a pool of workers reads them (every copy of a unit on
// one worker), and the results are folded in order, so a resume record
// can name the logical address below which everything was scrubbed.
package scrub

import (
	"errors"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// Options control a scrub.
type Options struct {
	// Repair rewrites bad copies from good ones (the set must be open
	// for writing).
	Repair bool
	// Workers reading in parallel (0: twice GOMAXPROCS, at least 4).
	Workers int
	// StatePath is the resume record ("" keeps none); Resume continues
	// from it when it belongs to this set at this generation.
	StatePath string
	Resume    bool
	// Progress, if set, is called with the bytes read since its last call.
	Progress func(n int64)
	// Total, if set, is called once before the reads with the bytes the
	// scrub expects to read (for a progress bar's total and ETA).
	Total func(n uint64)
	// Checkpoint is how often the resume record is written (0: 2 s).
	Checkpoint time.Duration
	// Stop, when closed, ends the scrub early with ErrInterrupted after
	// recording how far it got (SIGINT in the CLI).
	Stop <-chan struct{}
}

// Device is the outcome on one device.
type Device struct {
	DevID               uint64 `json:"devid"`
	Path                string `json:"path"`
	Missing             bool   `json:"missing,omitempty"`
	BytesRead           uint64 `json:"bytes_read"`
	ErrorsFound         uint64 `json:"errors_found"`
	CsumErrors          uint64 `json:"csum_errors"`
	IOErrors            uint64 `json:"io_errors"`
	SuperErrors         uint64 `json:"super_errors"`
	ErrorsCorrected     uint64 `json:"errors_corrected"`
	ErrorsUncorrectable uint64 `json:"errors_uncorrectable"`
}

// File is a file whose data had a bad copy.
type File struct {
	Path string `json:"path"`
	Ino  uint64 `json:"ino"`
	// Uncorrectable: some of its data has no good copy left.
	Uncorrectable bool `json:"uncorrectable"`
	// Repaired: --repair rewrote every bad copy of its data (a failed
	// rewrite leaves it false).
	Repaired bool `json:"repaired"`
}

// Report is the outcome of a scrub.
type Report struct {
	UUID        string   `json:"uuid"`
	Generation  uint64   `json:"generation"`
	Devices     []Device `json:"devices"`
	Files       []File   `json:"files"`
	Nodes       uint64   `json:"nodes"`
	DataBytes   uint64   `json:"data_bytes"`
	BytesRead   uint64   `json:"bytes_read"`
	Seconds     float64  `json:"seconds"`
	Rate        float64  `json:"rate_bytes_per_second"`
	ResumedFrom uint64   `json:"resumed_from,omitempty"`
	Repair      bool     `json:"repair"`
	// Errors lists the bad copies (the first maxErrors).
	Errors []CopyError `json:"errors"`
	// Truncated counts bad copies left out of Errors.
	Truncated uint64 `json:"errors_truncated,omitempty"`
	// NodesUnread are the tree nodes no copy of which read: what they
	// hold was not scrubbed (their bad copies are in Errors too when
	// their metadata items read).
	NodesUnread []UnreadNode `json:"nodes_unread"`
	// BelowProfile counts the chunks below the set's profiles (written
	// while a member was missing); Repair moved ProfilesRestored of them
	// back to the profiles once every copy read.
	BelowProfile     int `json:"below_profile"`
	ProfilesRestored int `json:"profiles_restored"`
	// Exposure is what losing each device would cost, after the scrub.
	Exposure []volume.Exposure `json:"exposure"`
}

// CopyError is one bad copy of a node or a data sector.
type CopyError struct {
	Logical  uint64 `json:"logical"`
	Len      int    `json:"length"`
	Copy     int    `json:"copy"` // from 0, as fsck and inspect number copies
	DevID    uint64 `json:"devid"`
	Physical uint64 `json:"offset"` // on DevID, fsck's and inspect's offset
	Metadata bool   `json:"metadata"`
	Kind     string `json:"kind"` // csum, io, mismatch, missing, super, parity
	Detail   string `json:"detail"`
	// Corrected: rewritten from a good copy; Uncorrectable: no copy was good.
	Corrected     bool `json:"corrected"`
	Uncorrectable bool `json:"uncorrectable"`
}

// Error kinds of CopyError.
const (
	KindCsum     = "csum"     // checksum or header does not verify
	KindIO       = "io"       // the copy could not be read
	KindMismatch = "mismatch" // valid, but differs from the first good copy
	KindMissing  = "missing"  // every copy lies on a missing device: lost
	KindParity   = "parity"   // a raid5/raid6 parity strip differs from its row's data
)

// maxErrors bounds Report.Errors (and the extents mapped to files).
const maxErrors = 10000

// ErrNeedWritable: Repair on a set opened read-only.
var ErrNeedWritable = errors.New("repair needs the set opened for writing")

// ErrInterrupted: Stop ended the scrub; the resume record says where.
var ErrInterrupted = errors.New("scrub interrupted (continue with --resume)")

// Clean reports whether no bad copy was found and every node read.
func (r *Report) Clean() bool {
	if len(r.NodesUnread) > 0 || r.BelowProfile > 0 {
		return false
	}
	for _, d := range r.Devices {
		if d.ErrorsFound > 0 {
			return false
		}
	}
	return true
}

// Left counts the bad copies not corrected; a node that did not read
// counts as an uncorrectable one (left and uncorrectable).
func (r *Report) Left() (left, uncorrectable uint64) {
	left, uncorrectable = uint64(len(r.NodesUnread)), uint64(len(r.NodesUnread))
	for _, d := range r.Devices {
		left += d.ErrorsFound - d.ErrorsCorrected
		uncorrectable += d.ErrorsUncorrectable
	}
	return left, uncorrectable
}

// Run scrubs fs.
func Run(fs *store.FS, opt Options) (*Report, error) {
	if opt.Repair && !fs.Vol.Writable() {
		return nil, ErrNeedWritable
	}
	if opt.Workers <= 0 {
		// Checksums are cheap next to the reads: more readers than CPUs
		// keep several reads in flight per device.
		opt.Workers = max(4, 2*runtime.GOMAXPROCS(0))
	}
	if opt.Checkpoint <= 0 {
		opt.Checkpoint = 2 * time.Second
	}
	defer fs.HoldHealing()()
	rep := newReport(fs, opt.Repair)
	start := uint64(0)
	if opt.Resume && opt.StatePath != "" {
		if st, ok := loadState(opt.StatePath, rep); ok {
			start = st.Next
			rep.ResumedFrom = start
		}
	}
	s := &scrubber{fs: fs, opt: opt, rep: rep, devIdx: map[uint64]int{}, badData: map[uint64]badSpan{},
		began: time.Now(), prior: rep.Seconds}
	for i, d := range rep.Devices {
		s.devIdx[d.DevID] = i
	}
	for _, e := range rep.Errors { // a resumed run's bad data, for paths
		if !e.Metadata {
			s.markBad(e)
		}
	}
	if opt.Total != nil {
		opt.Total(toRead(fs, start))
	}
	if start == 0 {
		s.scrubSupers() // cheap; a resumed run did them already
	}
	err := s.run(start)
	if err == nil {
		err = s.parityRows()
	}
	s.clock()
	if err != nil {
		return rep, err
	}
	if err := s.mapFiles(); err != nil {
		return rep, err
	}
	if err := s.profiles(); err != nil {
		return rep, err
	}
	if opt.StatePath != "" {
		removeState(opt.StatePath)
	}
	return rep, nil
}

// toRead is what a scrub from logical start reads: every present copy of
// the used bytes of each chunk not wholly below start.
func toRead(fs *store.FS, start uint64) uint64 {
	var n uint64
	for _, bg := range fs.BlockGroups() {
		c := bg.Chunk
		if c.End() <= start {
			continue
		}
		// One full stripe row touches every stripe of the chunk.
		row := c.Length
		if c.StripeLen > 0 {
			row = min(row, uint64(c.StripeLen)*uint64(len(c.Stripes)))
		}
		segs, err := c.Map(0, row)
		present := 0
		for m := 0; err == nil && m < fs.Vol.Copies(c.Logical); m++ {
			if copyPresent(fs.Vol, segs, m) {
				present++
			}
		}
		n += bg.Used * uint64(present)
	}
	return n
}

// newReport lists the set's devices, the missing ones marked.
func newReport(fs *store.FS, repair bool) *Report {
	sb := fs.Super()
	rep := &Report{UUID: uuid.UUID(sb.FSID).String(), Generation: sb.Generation, Repair: repair, Files: []File{}, Errors: []CopyError{},
		NodesUnread: []UnreadNode{}, Exposure: []volume.Exposure{}}
	for _, d := range fs.DevItems() {
		dv := Device{DevID: d.DevID, Path: d.Path, Missing: fs.Vol.IsMissing(d.DevID)}
		if od, ok := fs.Vol.Device(d.DevID); ok {
			dv.Path = od.Path
		}
		rep.Devices = append(rep.Devices, dv)
	}
	return rep
}

// clock sets the report's time and rate, counting the time of the runs
// this one resumed.
func (s *scrubber) clock() {
	s.rep.Seconds = s.prior + time.Since(s.began).Seconds()
	if s.rep.Seconds > 0 {
		s.rep.Rate = float64(s.rep.BytesRead) / s.rep.Seconds
	}
}

// scrubber is one run.
type scrubber struct {
	fs     *store.FS
	opt    Options
	rep    *Report
	devIdx map[uint64]int
	// badData are the bad data ranges by logical start (for paths).
	badData map[uint64]badSpan
	// began is when this run started; prior the seconds of the runs it
	// resumed.
	began time.Time
	prior float64
	mu    sync.Mutex // rep.NodesUnread: the producer and mapFiles
}

func (s *scrubber) run(start uint64) error {
	units := make(chan *unit, 2*s.opt.Workers)
	results := make(chan *unit, 2*s.opt.Workers)
	var prodErr error
	go func() {
		prodErr = s.produce(start, units)
		close(units)
	}()
	var wg sync.WaitGroup
	for w := 0; w < s.opt.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range units {
				s.verify(u)
				results <- u
			}
		}()
	}
	go func() {
		wg.Wait()
		close(results)
	}()
	last, err := s.fold(results)
	if errors.Is(prodErr, ErrInterrupted) && s.opt.StatePath != "" {
		if cerr := s.checkpoint(last); cerr != nil {
			return cerr
		}
	}
	if prodErr != nil {
		return prodErr
	}
	return err
}

// fold applies results in production order and writes resume records;
// it returns the end of the last unit applied.
func (s *scrubber) fold(results <-chan *unit) (uint64, error) {
	pending := map[uint64]*unit{}
	next, last := uint64(0), s.rep.ResumedFrom
	lastSave := time.Now()
	var firstErr error
	for u := range results {
		pending[u.seq] = u
		for {
			v, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			last = v.end()
			if err := s.apply(v); err != nil && firstErr == nil {
				firstErr = err
			}
			if s.opt.StatePath != "" && time.Since(lastSave) > s.opt.Checkpoint {
				lastSave = time.Now()
				if err := s.checkpoint(last); err != nil && firstErr == nil {
					firstErr = err
				}
			}
		}
	}
	if s.opt.Repair {
		if err := s.fs.Vol.Flush(); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return last, firstErr
}

// checkpoint makes the repairs so far durable, then records that
// everything below next is scrubbed.
func (s *scrubber) checkpoint(next uint64) error {
	if s.opt.Repair {
		if err := s.fs.Vol.Flush(); err != nil {
			return err
		}
	}
	s.clock()
	return saveState(s.opt.StatePath, state{FSID: s.rep.UUID, Generation: s.rep.Generation, Next: next, Report: s.rep})
}

// apply adds a verified unit's outcome to the report.
func (s *scrubber) apply(u *unit) error {
	rep := s.rep
	if u.meta {
		rep.Nodes++
	} else {
		rep.DataBytes += uint64(u.length)
	}
	for devid, n := range u.read {
		rep.Devices[s.devIdx[devid]].BytesRead += n
		rep.BytesRead += n
	}
	if s.opt.Progress != nil {
		var n int64
		for _, b := range u.read {
			n += int64(b)
		}
		s.opt.Progress(n)
	}
	for _, e := range u.errs {
		s.count(&rep.Devices[s.devIdx[e.DevID]], e)
	}
	return u.err
}

// count adds one bad copy on device d to the report.
func (s *scrubber) count(d *Device, e CopyError) {
	rep := s.rep
	d.ErrorsFound++
	switch e.Kind {
	case KindIO:
		d.IOErrors++
	case KindCsum, KindMismatch:
		d.CsumErrors++
	}
	if e.Corrected {
		d.ErrorsCorrected++
	}
	if e.Uncorrectable {
		d.ErrorsUncorrectable++
	}
	if len(rep.Errors) < maxErrors {
		rep.Errors = append(rep.Errors, e)
	} else {
		rep.Truncated++
	}
	if !e.Metadata && len(s.badData) < maxErrors {
		s.markBad(e)
	}
}

// badSpan is a bad data range: its length, whether any of it stayed
// uncorrectable, and whether a bad copy of it was left as it was.
type badSpan struct {
	n    uint64
	unc  bool
	left bool
}

func (s *scrubber) markBad(e CopyError) {
	b := s.badData[e.Logical]
	b.n, b.unc, b.left = max(b.n, uint64(e.Len)), b.unc || e.Uncorrectable, b.left || !e.Corrected
	s.badData[e.Logical] = b
}

// sortedBad returns the bad data sectors in logical order.
func (s *scrubber) sortedBad() []uint64 {
	out := make([]uint64, 0, len(s.badData))
	for l := range s.badData {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// profiles reports the chunks below the set's profiles and, with Repair
// on a set whose every bad copy was rewritten, moves them back to the
// profiles (store.RestoreProfiles); then what losing each device costs.
func (s *scrubber) profiles() error {
	s.rep.BelowProfile, _, _ = s.fs.BelowProfile()
	if left, _ := s.rep.Left(); s.rep.BelowProfile > 0 && s.opt.Repair && left == 0 && !s.fs.Degraded() {
		n, err := s.fs.RestoreProfiles(nil)
		if err != nil && !errors.Is(err, store.ErrCannotRelocate) {
			return err
		}
		if err == nil {
			s.rep.ProfilesRestored = n
		}
	}
	s.rep.Exposure = s.fs.Exposure()
	return nil
}

// ProfilesLeft counts the chunks still below the set's profiles.
func (r *Report) ProfilesLeft() int { return r.BelowProfile - r.ProfilesRestored }
