package volume

import (
	"bytes"
	"fmt"
	"sort"
	"sync"
)

// BadParity is a row CheckParityRows found wrong: parity strip K (0 P,
// 1 Q) differs from the row's data, or, with Err set, the row could not
// be checked.
type BadParity struct {
	Row   uint64
	K     int
	Fixed bool
	Err   error
}

// checkBatch bounds the bytes CheckParityRows reads at once, over all
// devices: large enough that a device read is not a system call per
// strip, small enough that a scrub's memory stays flat.
const checkBatch = 8 << 20

// CheckParityRows is CheckRowParity over the listed rows of c (ascending,
// no repeats). A run of consecutive rows is read with one read per
// device, data and parity strips together, devices at once; a run that
// meets a read error is checked row by row. fix(row) says whether a wrong
// parity strip of row is rewritten (nil: none is); the caller has
// verified that row's data.
func (v *Volume) CheckParityRows(c *Chunk, rows []uint64, fix func(row uint64) bool) ([]BadParity, error) {
	if !c.IsParity() {
		return nil, fmt.Errorf("parity check of chunk %d: %v has no parity", c.Logical, c.Profile)
	}
	n, _, _ := c.geometry()
	maxRun := max(1, checkBatch/(uint64(n)*uint64(c.StripeLen)))
	var bad []BadParity
	for len(rows) > 0 {
		run := uint64(1)
		for run < uint64(len(rows)) && run < maxRun && rows[run] == rows[0]+run {
			run++
		}
		got, err := v.checkRun(c, rows[0], run, fix)
		if err != nil {
			got = got[:0]
			for r := rows[0]; r < rows[0]+run; r++ {
				got = append(got, v.checkOne(c, r, fix)...)
			}
		}
		bad = append(bad, got...)
		rows = rows[run:]
	}
	return bad, nil
}

// checkOne is the row-by-row path: CheckRowParity, its error kept.
func (v *Volume) checkOne(c *Chunk, row uint64, fix func(uint64) bool) []BadParity {
	f := fix != nil && fix(row)
	ks, err := v.CheckRowParity(c, row, f)
	if err != nil {
		return []BadParity{{Row: row, K: -1, Err: err}}
	}
	out := make([]BadParity, len(ks))
	for i, k := range ks {
		out[i] = BadParity{Row: row, K: k, Fixed: f}
	}
	return out
}

// checkRun checks rows [first, first+count) from one read per device. An
// error means the run could not be read whole (the caller goes row by
// row) or a parity rewrite failed.
func (v *Volume) checkRun(c *Chunk, first, count uint64, fix func(uint64) bool) ([]BadParity, error) {
	code, err := c.code()
	if err != nil {
		return nil, err
	}
	sl := uint64(c.StripeLen)
	if (first+count)*sl > c.StripeLength() {
		return nil, fmt.Errorf("rows %d+%d of chunk %d: past its stripes", first, count, c.Logical)
	}
	defer v.rows.lockRun(c, first, count)()
	spans, _, err := v.readRun(c, first, count)
	defer func() {
		for _, s := range spans {
			putSpan(s)
		}
	}()
	if err != nil {
		return nil, err
	}
	data, par := code.Data(), code.Parity()
	shards := make([][]byte, data+par)
	for k := range par {
		shards[data+k] = make([]byte, sl)
	}
	var bad []BadParity
	for r := first; r < first+count; r++ {
		at := (r - first) * sl
		for k := range data {
			shards[k] = spans[c.stripeOf(r, k)][at : at+sl]
		}
		if err := code.Encode(shards); err != nil {
			return nil, err
		}
		for k := range par {
			if bytes.Equal(spans[c.stripeOf(r, data+k)][at:at+sl], shards[data+k]) {
				continue
			}
			f := fix != nil && fix(r)
			if f {
				if !v.writable {
					return nil, fmt.Errorf("rewrite parity of row %d: volume opened read-only", r)
				}
				if err := v.writeStrip(c, c.Logical, r, data+k, 0, shards[data+k]); err != nil {
					return nil, err
				}
			}
			bad = append(bad, BadParity{Row: r, K: k, Fixed: f})
		}
	}
	return bad, nil
}

// readRun reads each stripe's strips of rows [first, first+count), all
// devices at once; the spans come from spanPool. errs[s] is stripe s's
// read error, first the first of them.
func (v *Volume) readRun(c *Chunk, first, count uint64) (spans [][]byte, errs []error, firstErr error) {
	sl := uint64(c.StripeLen)
	spans = make([][]byte, len(c.Stripes))
	errs = make([]error, len(spans))
	var wg sync.WaitGroup
	for s := range spans {
		spans[s] = getSpan(int(count * sl))
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := c.Stripes[s]
			d, ok := v.devs[st.DevID]
			if !ok {
				errs[s] = &IOError{"read", c.Logical, st.DevID, "", st.Offset + first*sl, errMissingIO}
				return
			}
			if _, err := d.Dev.ReadAt(spans[s], int64(st.Offset+first*sl)); err != nil {
				errs[s] = &IOError{"read", c.Logical, st.DevID, d.Path, st.Offset + first*sl, err}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		firstErr = cmpErr(firstErr, err)
	}
	return spans, errs, firstErr
}

// readRebuilding is readSpans for rows a device fails to read (a device
// replace or a degraded read): every stripe's strips of the rows the
// pieces touch are read at once, one read a device, and each row's
// unreadable strips are rebuilt from the rest. An error (a row with more
// unreadable strips than parity) sends the caller piece by piece.
func (v *Volume) readRebuilding(c *Chunk, buf []byte, ps []piece) error {
	code, err := c.code()
	if err != nil {
		return err
	}
	sl := uint64(c.StripeLen)
	first, last := ps[0].row, ps[len(ps)-1].row
	if (last+1)*sl > c.StripeLength() {
		return fmt.Errorf("rows %d..%d of chunk %d: past its stripes", first, last, c.Logical)
	}
	spans, errs, _ := v.readRun(c, first, last-first+1)
	defer func() {
		for _, s := range spans {
			putSpan(s)
		}
	}()
	failed := 0
	for _, err := range errs {
		if err != nil {
			failed++
		}
	}
	if failed > code.Parity() {
		return errTooFew
	}
	shards := make([][]byte, code.Data()+code.Parity())
	rebuilt := make([][]byte, len(shards)) // buffers a row's rebuilt strips reuse
	row, have := uint64(0), false
	for _, p := range ps {
		if !have || p.row != row {
			have = true
			row = p.row
			at := (row - first) * sl
			for k := range shards {
				if s := c.stripeOf(row, k); errs[s] == nil {
					shards[k] = spans[s][at : at+sl]
					continue
				}
				if rebuilt[k] == nil {
					rebuilt[k] = make([]byte, sl)
				}
				shards[k] = rebuilt[k][:0] // empty: rebuilt into its capacity
			}
			if err := code.RebuildData(shards); err != nil {
				return err
			}
		}
		copy(buf[p.bufOff:p.bufOff+p.n], shards[p.i][p.in:])
	}
	return nil
}

// lockRun takes the row locks of rows [first, first+count) and returns
// their release. Locks are taken in index order, each once, so two runs
// never wait on each other in a cycle and a single-row locker never
// waits on a run that waits on it.
func (r *rowLocks) lockRun(c *Chunk, first, count uint64) func() {
	base := c.Logical / uint64(c.StripeLen)
	var idx []int
	seen := map[int]bool{}
	for row := first; row < first+count && len(idx) < len(r.mu); row++ {
		i := int((base + row) % uint64(len(r.mu)))
		if !seen[i] {
			seen[i] = true
			idx = append(idx, i)
		}
	}
	sort.Ints(idx)
	held := make([]*sync.Mutex, len(idx))
	for j, i := range idx {
		held[j] = &r.mu[i]
		held[j].Lock()
	}
	return func() {
		for _, m := range held {
			m.Unlock()
		}
	}
}
