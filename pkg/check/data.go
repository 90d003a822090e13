package check

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/volume"
)

// --check-data: every copy of every checksummed sector is read and summed.
// The walk hands each csum item to workers (one per core) as it meets it
// and goes on; their problems are put back in item order at the end, so
// the report is the same as a one-by-one check's.

// dataBatch is the sectors one read covers.
const dataBatch = 256

// dataJobs bounds the csum items handed out and not yet verified (memory:
// this many items' sums, a node each at most).
const dataJobs = 64

type dataJob struct {
	seq     int
	logical uint64
	sums    []byte // a copy: the item's node buffer is reused
}

// dataCheck runs the workers.
type dataCheck struct {
	jobs  chan dataJob
	wg    sync.WaitGroup
	mu    sync.Mutex
	found map[int][]Problem // per job with problems
	seq   int
	read  atomic.Uint64 // bytes verified (one copy)
}

// verify verifies the sectors the csum item at logical sums (called in
// the walk, in key order).
func (d *dataCheck) verify(c *checker, logical uint64, sums []byte) {
	if d.jobs == nil {
		d.start(c)
	}
	d.seq++
	d.jobs <- dataJob{d.seq, logical, bytes.Clone(sums)}
	c.opt.progress("data", d.read.Load(), c.sb.BytesUsed, true)
}

func (d *dataCheck) start(c *checker) {
	d.jobs = make(chan dataJob, dataJobs)
	d.found = map[int][]Problem{}
	for range max(1, runtime.GOMAXPROCS(0)) {
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			w := &dataWorker{c: c, d: d}
			for j := range d.jobs {
				if c.opt.cancelled() == nil {
					w.verify(j)
				}
			}
		}()
	}
}

// stop ends the workers (a check that returns early: cancelled).
func (d *dataCheck) stop() {
	if d.jobs != nil {
		close(d.jobs)
		d.wg.Wait()
		d.jobs = nil
	}
}

// finish waits for the workers and adds their problems in item order.
func (d *dataCheck) finish(c *checker) {
	d.stop()
	seqs := make([]int, 0, len(d.found))
	for s := range d.found {
		seqs = append(seqs, s)
	}
	sort.Ints(seqs)
	for _, s := range seqs {
		for _, p := range d.found[s] {
			c.add(p)
		}
	}
	c.opt.progress("data", d.read.Load(), c.sb.BytesUsed, true)
}

// dataWorker has the buffers of one worker.
type dataWorker struct {
	c   *checker
	d   *dataCheck
	buf []byte
	ref refCopies
	out []Problem
}

// verify reads every copy of the sectors of one csum item and compares
// each with its sum.
func (w *dataWorker) verify(j dataJob) {
	c := w.c
	ss, cl := uint64(c.sb.SectorSize), c.sb.CsumType.Len()
	n := uint64(len(j.sums) / cl)
	ch, ok := c.vol.Chunks.Lookup(j.logical)
	if !ok || ch.Type != format.ChunkData || j.logical+n*ss > ch.End() {
		return // reported by the coverage check
	}
	if w.buf == nil {
		w.buf = c.reads.arena.get(dataBatch * int(ss))
	}
	w.out = w.out[:0]
	for first := uint64(0); first < n && c.opt.cancelled() == nil; first += dataBatch {
		cnt := min(n-first, dataBatch)
		start := j.logical + first*ss
		b := w.buf[:cnt*ss]
		copies := c.vol.Copies(start)
		if ch.IsParity() {
			copies = 1 // rebuilds are repair sources (repair_copies.go); scrub checks parity
		}
		w.ref.reset(cnt, ss, &c.reads.arena)
		for m := 0; m < copies; m++ {
			if err := c.vol.ReadCopy(start, b, m); err != nil {
				if errors.Is(err, volume.ErrMissingDevice) {
					continue // reported once as a missing device
				}
				w.out = append(w.out, c.dataProblem(start, m, errString(err)))
				continue
			}
			for i := uint64(0); i < cnt; i++ {
				want := j.sums[(first+i)*uint64(cl) : (first+i+1)*uint64(cl)]
				sector := b[i*ss : (i+1)*ss]
				if got := format.Checksum(c.sb.CsumType, sector); !bytes.Equal(got[:cl], want) {
					p := c.dataProblem(start+i*ss, m, "data checksum mismatch")
					p.fix = &fixData{sum: bytes.Clone(want)}
					w.out = append(w.out, p)
				} else if copies > 1 {
					if k, differs := w.ref.compare(i, m, sector); differs {
						// Only a weak checksum lets two different sectors match.
						p := c.dataProblem(start+i*ss, m, "")
						p.Code = DataCopiesDiffer
						o := c.dataProblem(start+i*ss, k, "")
						p.Message = fmt.Sprintf("copy %d matches the checksum but differs from copy %d (devid %d at offset %d), which matches it too", m, k, o.DevID, o.Offset)
						w.out = append(w.out, p)
					}
				}
			}
		}
		w.d.read.Add(cnt * ss)
	}
	if len(w.out) > 0 {
		w.d.mu.Lock()
		w.d.found[j.seq] = append([]Problem(nil), w.out...)
		w.d.mu.Unlock()
	}
}

// refCopies holds, per sector of a batch, the first copy that matched its
// checksum, so the other copies are compared byte for byte with it.
type refCopies struct {
	buf  []byte
	copy []int // -1: no copy matched yet
	ss   uint64
}

func (r *refCopies) reset(n, ss uint64, a *bufArena) {
	if r.buf == nil {
		r.buf, r.copy = a.get(dataBatch*int(ss)), make([]int, dataBatch)
	}
	r.ss, r.copy = ss, r.copy[:n]
	for i := range r.copy {
		r.copy[i] = -1
	}
}

// compare records sector i of copy m, or reports the earlier copy it
// differs from.
func (r *refCopies) compare(i uint64, m int, sector []byte) (int, bool) {
	kept := r.buf[i*r.ss : (i+1)*r.ss]
	if r.copy[i] < 0 {
		r.copy[i] = m
		copy(kept, sector)
		return 0, false
	}
	return r.copy[i], !bytes.Equal(kept, sector)
}

// dataProblem locates copy m of the data sector at logical.
func (c *checker) dataProblem(logical uint64, m int, msg string) Problem {
	p := Problem{Code: DataCopyBad, Logical: logical, Copy: copyNum(m), Message: msg}
	if targets, err := c.vol.Locate(logical); err == nil && m < len(targets) {
		p.DevID, p.Offset = targets[m].DevID, targets[m].Physical
		if d, ok := c.vol.Device(p.DevID); ok {
			p.Device = d.Path
		}
	}
	return p
}

// lostData reports each data extent part of which lies only on missing
// devices (a degraded check): as scrub does, without reading anything.
func (c *checker) lostData() {
	if len(c.vol.Devices()) == len(c.devItems) {
		return
	}
	for _, e := range c.fs.extents.list {
		ch, ok := c.vol.Chunks.Lookup(e.logical)
		if !ok || ch.Type != format.ChunkData || uint64(e.length) > ch.End()-e.logical || !c.vol.ChunkDegraded(ch) {
			continue // other checks report an extent outside its chunk
		}
		if ch.IsParity() {
			if ch.LostWithout(c.vol.IsMissing) {
				c.add(Problem{Code: DataLost, Logical: e.logical, Message: fmt.Sprintf("the extent's %d bytes at %d are in a %v chunk with more devices missing than its parity covers", e.length, e.logical, ch.Profile)})
			}
			continue
		}
		segs, err := ch.Map(e.logical-ch.Logical, uint64(e.length))
		if err != nil {
			continue
		}
		var lost uint64
		p := Problem{Code: DataLost}
		for _, sg := range segs {
			if !c.segmentLost(sg) {
				continue
			}
			if lost == 0 {
				p.Logical, p.DevID, p.Offset = e.logical+uint64(sg.BufOff), sg.Targets[0].DevID, sg.Targets[0].Physical
			}
			lost += uint64(sg.Len)
		}
		if lost > 0 {
			p.Message = fmt.Sprintf("%d of the extent's %d bytes at %d have no copy on a present device", lost, e.length, e.logical)
			c.add(p)
		}
	}
}

// segmentLost reports whether every copy of sg is on a missing device.
func (c *checker) segmentLost(sg volume.Segment) bool {
	for _, t := range sg.Targets {
		if !c.vol.IsMissing(t.DevID) {
			return false
		}
	}
	return true
}
