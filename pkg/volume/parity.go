package volume

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/parity"
)

// Parity chunks (raid5, raid6; FORMAT.md §4.4 "Parity profiles"). Copy 0
// of a byte is its data strip, read directly (a strip that cannot be read
// is rebuilt from the rest of its row, as a degraded read); copy k ≥ 1 is
// the byte rebuilt from the other data strips and parity strip k−1 (P,
// then Q), never reading its own strip: the copy a checksum failure of
// copy 0 falls back to, and the one scrub compares with copy 0 to verify
// parity.

// piece is the part of a logical range inside one data strip of a row.
type piece struct {
	row    uint64
	i      int    // data strip index in the row
	in     uint64 // offset inside the strip
	n      int
	bufOff int
}

// IsParity reports whether c is a raid5 or raid6 chunk.
func (c *Chunk) IsParity() bool {
	pi, _ := c.Profile.Info()
	return pi.Parity > 0
}

// geometry returns the chunk's stripe count, parity strips and data strips.
func (c *Chunk) geometry() (n, par, data int) {
	pi, _ := c.Profile.Info()
	n = len(c.Stripes)
	return n, pi.Parity, pi.DataStripes(n)
}

// pieces cuts [off, off+length) of a parity chunk into strip pieces.
func (c *Chunk) pieces(off, length uint64) []piece {
	_, _, data := c.geometry()
	sl := uint64(c.StripeLen)
	var out []piece
	for bufOff := 0; length > 0; {
		nr := off / sl
		in := off % sl
		n := min(sl-in, length)
		out = append(out, piece{row: nr / uint64(data), i: int(nr % uint64(data)), in: in, n: int(n), bufOff: bufOff})
		bufOff += int(n)
		off += n
		length -= n
	}
	return out
}

// stripeOf is the stripe index holding strip k of row (k < data: data
// strip k; data: P; data+1: Q).
func (c *Chunk) stripeOf(row uint64, k int) int {
	n, par, data := c.geometry()
	switch {
	case k < data:
		return format.DataStripe(n, par, row, k)
	case k == data:
		return format.ParityStripe(n, row)
	}
	return format.QStripe(n, row)
}

// target is where byte in of strip k of row lives.
func (c *Chunk) target(row uint64, k int, in uint64) Target {
	s := c.Stripes[c.stripeOf(row, k)]
	return Target{s.DevID, s.Offset + row*uint64(c.StripeLen) + in}
}

// mapParity is Map for a parity chunk: each segment's one target is its
// data strip (copy 0).
func (c *Chunk) mapParity(off, length uint64) []Segment {
	ps := c.pieces(off, length)
	segs := make([]Segment, len(ps))
	for j, p := range ps {
		segs[j] = Segment{BufOff: p.bufOff, Len: p.n, Targets: []Target{c.target(p.row, p.i, p.in)}}
	}
	return segs
}

// code is the chunk's parity code.
func (c *Chunk) code() (*parity.Code, error) {
	_, par, data := c.geometry()
	return parity.For(data, par)
}

// readStrip reads [in, in+len(b)) of strip k of row.
func (v *Volume) readStrip(c *Chunk, logical uint64, row uint64, k int, in uint64, b []byte) error {
	t := c.target(row, k, in)
	d, ok := v.devs[t.DevID]
	if !ok {
		return &IOError{"read", logical, t.DevID, "", t.Physical, errMissingIO}
	}
	if _, err := d.Dev.ReadAt(b, int64(t.Physical)); err != nil {
		return &IOError{"read", logical, t.DevID, d.Path, t.Physical, err}
	}
	return nil
}

// writeStrip writes b at [in, in+len(b)) of strip k of row.
func (v *Volume) writeStrip(c *Chunk, logical uint64, row uint64, k int, in uint64, b []byte) error {
	return v.writeAt(c.target(row, k, in), logical, b)
}

// writeAt writes b at t; logical names the write in an error.
func (v *Volume) writeAt(t Target, logical uint64, b []byte) error {
	d, ok := v.devs[t.DevID]
	if !ok {
		return &IOError{"write", logical, t.DevID, "", t.Physical, errMissingIO}
	}
	if _, err := d.Dev.WriteAt(b, int64(t.Physical)); err != nil {
		return &IOError{"write", logical, t.DevID, d.Path, t.Physical, err}
	}
	return nil
}

// readParity is ReadCopy of a parity chunk.
func (v *Volume) readParity(c *Chunk, logical uint64, buf []byte, mirror int) error {
	_, par, _ := c.geometry()
	if mirror < 0 || mirror > par {
		return fmt.Errorf("logical %d has %d copies, not copy %d", logical, par+1, mirror)
	}
	ps := c.pieces(logical-c.Logical, uint64(len(buf)))
	if mirror == 0 && len(ps) > 1 {
		// With a device missing, a row's strips are read once, all of
		// them, and rebuilt; otherwise each device's pieces are read,
		// and whole rows only when that fails.
		if !v.ChunkDegraded(c) && v.readSpans(c, buf, ps) == nil || v.readRebuilding(c, buf, ps) == nil {
			return nil
		}
	}
	for _, p := range ps {
		b := buf[p.bufOff : p.bufOff+p.n]
		if mirror == 0 {
			err := v.readStrip(c, logical, p.row, p.i, p.in, b)
			if err == nil {
				continue
			}
			if rerr := v.rebuild(c, logical, p, b, -1); rerr != nil {
				return err // the strip's own error says more
			}
			continue
		}
		if err := v.rebuild(c, logical, p, b, mirror-1); err != nil {
			return err
		}
	}
	return nil
}

// errTooFew: more strips of a row are unreadable than its parity covers.
var errTooFew = errors.New("too many strips of the row cannot be read")

// rebuild computes piece p's bytes into b from the other strips of its
// row without reading p's own strip. With use ≥ 0 only parity strip use
// (0 P, 1 Q) stands in for it; with −1 any parity does.
func (v *Volume) rebuild(c *Chunk, logical uint64, p piece, b []byte, use int) error {
	code, err := c.code()
	if err != nil {
		return err
	}
	data, par := code.Data(), code.Parity()
	shards := make([][]byte, data+par)
	missing := 0
	var first error
	for k := range shards {
		if k == p.i || (use >= 0 && k >= data && k-data != use) {
			missing++
			continue
		}
		s := make([]byte, p.n)
		if err := v.readStrip(c, logical, p.row, k, p.in, s); err != nil {
			missing++
			first = cmpErr(first, err)
			continue
		}
		shards[k] = s
	}
	if missing > par {
		if first == nil {
			first = errTooFew
		}
		return fmt.Errorf("rebuild logical %d from parity: %w", logical, first)
	}
	if err := code.Rebuild(shards); err != nil {
		return fmt.Errorf("rebuild logical %d from parity: %w", logical, err)
	}
	copy(b, shards[p.i])
	return nil
}

func cmpErr(first, err error) error {
	if first == nil {
		return err
	}
	return first
}

// rowLocks serialises read-modify-writes of one row: two writers filling
// different parts of a row each recompute its parity from the other's
// strips.
type rowLocks struct{ mu [64]sync.Mutex }

func (r *rowLocks) lock(c *Chunk, row uint64) *sync.Mutex {
	m := &r.mu[(c.Logical/uint64(c.StripeLen)+row)%uint64(len(r.mu))]
	m.Lock()
	return m
}

// writeParity is Write to a parity chunk: for each row the range touches,
// the data strips it covers are written with the row's new parity,
// computed from the strips it does not cover as they are on the devices
// (read-modify-write). Writers keep the no-write-hole rule (§4.4): the
// allocator only hands out rows that hold no committed data.
func (v *Volume) writeParity(c *Chunk, logical uint64, buf []byte) error {
	code, err := c.code()
	if err != nil {
		return err
	}
	ps := c.pieces(logical-c.Logical, uint64(len(buf)))
	sl := int(c.StripeLen)
	for len(ps) > 0 {
		j := 1
		for j < len(ps) && ps[j].row == ps[0].row {
			j++
		}
		// A run of whole rows (pieces start at a row and cover every
		// strip) goes out with one write a device.
		whole := j == code.Data() && ps[0].in == 0 && ps[j-1].n == sl
		rows := 0
		for whole && (rows+1)*j <= len(ps) && ps[rows*j].in == 0 && ps[(rows+1)*j-1].n == sl && ps[(rows+1)*j-1].i == j-1 {
			rows++
		}
		if rows >= 2 {
			n := rows * j * sl
			if err := v.writeWholeRows(c, code, logical, ps[0].row, buf[ps[0].bufOff:ps[0].bufOff+n], nil); err != nil {
				return err
			}
			ps = ps[rows*j:]
			continue
		}
		if err := v.writeRow(c, code, logical, buf, ps[:j]); err != nil {
			return err
		}
		ps = ps[j:]
	}
	return nil
}

// writeWholeRows writes whole rows from row first on (data: their logical
// bytes) with their parity: the strips want accepts (nil: every strip),
// each device's consecutive wanted strips in one write, devices at once.
// No row lock: nothing else writes a row this write covers whole.
func (v *Volume) writeWholeRows(c *Chunk, code *parity.Code, logical, first uint64, data []byte, want func(Target) bool) error {
	d, par, sl := code.Data(), code.Parity(), int(c.StripeLen)
	n := len(c.Stripes)
	rows := len(data) / (d * sl)
	spans := make([][]byte, n)  // by stripe index: its strips of the rows, in order
	runs := make([][][2]int, n) // by stripe index: its runs [from, to) of wanted rows
	for s := range spans {
		spans[s] = getSpan(rows * sl)
		defer putSpan(spans[s])
	}
	shards := make([][]byte, d+par)
	for r := range rows {
		row := first + uint64(r)
		for k := range d + par {
			s := c.stripeOf(row, k)
			dst := spans[s][r*sl : (r+1)*sl]
			if k < d {
				copy(dst, data[(r*d+k)*sl:])
			}
			shards[k] = dst
			if want == nil || want(c.target(row, k, 0)) {
				if rs := runs[s]; len(rs) > 0 && rs[len(rs)-1][1] == r {
					rs[len(rs)-1][1] = r + 1
				} else {
					runs[s] = append(rs, [2]int{r, r + 1})
				}
			}
		}
		if err := code.Encode(shards); err != nil {
			return err
		}
	}
	errs := make(chan error, n)
	for s := range spans {
		go func() {
			var err error
			for _, rr := range runs[s] {
				if err = v.writeSpan(c, logical, s, first+uint64(rr[0]), spans[s][rr[0]*sl:rr[1]*sl]); err != nil {
					break
				}
			}
			errs <- err
		}()
	}
	var firstErr error
	for range spans {
		firstErr = cmpErr(firstErr, <-errs)
	}
	return firstErr
}

// writeSpan writes b over stripe s from the start of row on.
func (v *Volume) writeSpan(c *Chunk, logical uint64, s int, row uint64, b []byte) error {
	return v.writeAt(Target{c.Stripes[s].DevID, c.Stripes[s].Offset + row*uint64(c.StripeLen)}, logical, b)
}

// writeRow writes the pieces of one row and its parity.
func (v *Volume) writeRow(c *Chunk, code *parity.Code, logical uint64, buf []byte, ps []piece) error {
	row, sl := ps[0].row, int(c.StripeLen)
	defer v.rows.lock(c, row).Unlock()
	data, par := code.Data(), code.Parity()
	shards := make([][]byte, data+par)
	covered := make([]*piece, data)
	for j := range ps {
		covered[ps[j].i] = &ps[j]
	}
	for k := range data {
		p := covered[k]
		if p != nil && p.in == 0 && p.n == sl {
			shards[k] = buf[p.bufOff : p.bufOff+p.n]
			continue
		}
		s := make([]byte, sl)
		if err := v.readStrip(c, logical, row, k, 0, s); err != nil {
			return fmt.Errorf("read-modify-write of row %d: %w", row, err)
		}
		if p != nil {
			copy(s[p.in:], buf[p.bufOff:p.bufOff+p.n])
		}
		shards[k] = s
	}
	for k := data; k < data+par; k++ {
		shards[k] = make([]byte, sl)
	}
	if err := code.Encode(shards); err != nil {
		return err
	}
	for _, p := range ps {
		if err := v.writeStrip(c, logical, row, p.i, p.in, buf[p.bufOff:p.bufOff+p.n]); err != nil {
			return err
		}
	}
	for k := data; k < data+par; k++ {
		if err := v.writeStrip(c, logical, row, k, 0, shards[k]); err != nil {
			return err
		}
	}
	return nil
}

// ErrParityCopy: a parity copy (1..K) is never written on its own. New
// parity computed over a row whose other strips are unverified could
// encode a wrong strip and make it unrebuildable; scrub's row pass
// (CheckRowParity) rewrites parity after checking the row's data.
var ErrParityCopy = errors.New("a parity copy is rewritten only by scrub's row check, after the row's data")

// writeParityCopy is WriteCopy to a parity chunk: copy 0 writes the data
// strips alone (their parity already describes buf: the copy a heal
// rewrites from was rebuilt from it); a parity copy is refused.
func (v *Volume) writeParityCopy(c *Chunk, logical uint64, buf []byte, mirror int) error {
	if mirror != 0 {
		return fmt.Errorf("write logical %d copy %d: %w", logical, mirror, ErrParityCopy)
	}
	for _, p := range c.pieces(logical-c.Logical, uint64(len(buf))) {
		if err := v.writeStrip(c, logical, p.row, p.i, p.in, buf[p.bufOff:p.bufOff+p.n]); err != nil {
			return err
		}
	}
	return nil
}

// DiscardMap is Map for discarding the free range [off, off+length) of
// the chunk: for a parity chunk only the rows wholly inside it, on every
// stripe, parity included (discarding part of a row would change the
// bytes its parity was computed from, and a later rebuild of a live strip
// of that row would return garbage); for any other chunk, Map.
func (c *Chunk) DiscardMap(off, length uint64) ([]Segment, error) {
	if !c.IsParity() {
		return c.Map(off, length)
	}
	if err := c.holds(off, length); err != nil {
		return nil, err
	}
	_, _, data := c.geometry()
	sl := uint64(c.StripeLen)
	rl := uint64(data) * sl
	first := (off + rl - 1) / rl
	end := off + length
	last := end / rl // rows [first, last) lie wholly inside
	if end == c.Length {
		last = (end + rl - 1) / rl // the chunk's last row holds nothing past its length
	}
	if last <= first {
		return nil, nil
	}
	segs := make([]Segment, 0, len(c.Stripes))
	for _, s := range c.Stripes {
		segs = append(segs, Segment{Len: int((last - first) * sl), Targets: []Target{{s.DevID, s.Offset + first*sl}}})
	}
	return segs, nil
}

// RowLen is the logical bytes of a row of a parity chunk (0 for others).
func (c *Chunk) RowLen() uint64 {
	if !c.IsParity() {
		return 0
	}
	_, _, data := c.geometry()
	return uint64(data) * uint64(c.StripeLen)
}

// AppendRows appends to rows, kept ascending and without repeats, the
// rows of parity chunk c that the chunk-relative range [off, off+length)
// touches. Callers pass ranges in ascending order of off; a range that
// starts before the last row listed adds only the rows past it.
func (c *Chunk) AppendRows(rows []uint64, off, length uint64) []uint64 {
	rl := c.RowLen()
	if rl == 0 || length == 0 {
		return rows
	}
	for r := off / rl; r*rl < off+length; r++ {
		if len(rows) == 0 || rows[len(rows)-1] < r {
			rows = append(rows, r)
		}
	}
	return rows
}

// ParityTarget is where parity strip k (0 P, 1 Q) of row lives.
func (c *Chunk) ParityTarget(row uint64, k int) Target {
	_, _, data := c.geometry()
	return c.target(row, data+k, 0)
}

// CheckRowParity compares the parity strips of row of the parity chunk c
// with the parity of its data strips as the devices hold them, and
// returns the ones that differ (0 P, 1 Q). With fix it rewrites those:
// the caller has verified the row's data first (scrub), as new parity
// computed from a wrong data strip would make that strip unrebuildable.
func (v *Volume) CheckRowParity(c *Chunk, row uint64, fix bool) ([]int, error) {
	code, err := c.code()
	if err != nil {
		return nil, err
	}
	if fix && !v.writable {
		return nil, fmt.Errorf("rewrite parity of row %d: volume opened read-only", row)
	}
	defer v.rows.lock(c, row).Unlock()
	data, par := code.Data(), code.Parity()
	sl := int(c.StripeLen)
	shards := make([][]byte, data+par)
	stored := make([][]byte, par)
	for k := range shards {
		shards[k] = make([]byte, sl)
		if k >= data {
			stored[k-data] = make([]byte, sl)
			continue
		}
		if err := v.readStrip(c, c.Logical, row, k, 0, shards[k]); err != nil {
			return nil, err
		}
	}
	if err := code.Encode(shards); err != nil {
		return nil, err
	}
	var bad []int
	for k := range par {
		if err := v.readStrip(c, c.Logical, row, data+k, 0, stored[k]); err != nil || !bytes.Equal(stored[k], shards[data+k]) {
			bad = append(bad, k)
			if fix {
				if err := v.writeStrip(c, c.Logical, row, data+k, 0, shards[data+k]); err != nil {
					return bad, err
				}
			}
		}
	}
	return bad, nil
}

// WriteRows writes whole rows of the parity chunk c from row first on:
// data holds their logical bytes (a whole number of rows), and each row's
// parity is computed from them. Only the strips whose target want
// accepts are written (a relocation's new stripes); the others must hold
// these bytes already.
func (v *Volume) WriteRows(c *Chunk, first uint64, data []byte, want func(Target) bool) error {
	if !v.writable {
		return fmt.Errorf("write chunk %d: volume opened read-only", c.Logical)
	}
	code, err := c.code()
	if err != nil {
		return err
	}
	rl := int(c.RowLen())
	if len(data)%rl != 0 || (first+uint64(len(data)/rl))*uint64(c.StripeLen) > c.StripeLength() {
		return fmt.Errorf("write of %d bytes from row %d of chunk %d: not whole rows of %d inside it", len(data), first, c.Logical, rl)
	}
	return v.writeWholeRows(c, code, c.Logical, first, data, want)
}

// ReadRows reads whole rows of the parity chunk c from row first on into
// b (a whole number of rows), the last row's tail past the chunk's
// length too; a strip that cannot be read is rebuilt.
func (v *Volume) ReadRows(c *Chunk, first uint64, b []byte) error {
	if !c.IsParity() || uint64(len(b))%c.RowLen() != 0 || first*c.RowLen()+uint64(len(b)) > c.StripeLength()*uint64(len(c.Stripes)) {
		return fmt.Errorf("read of rows %d+%d bytes of chunk %d: not whole rows of it", first, len(b), c.Logical)
	}
	return v.readParity(c, c.Logical+first*c.RowLen(), b, 0)
}

// readSpans reads the pieces of a large copy-0 read with one read a
// device, all devices at once: a device's strips of consecutive rows are
// contiguous, so each read spans its first to its last piece, parity
// strips between them included (1/N more bytes, a fraction of the
// system calls). Any error sends the caller to the piece-by-piece path,
// which rebuilds what cannot be read.
func (v *Volume) readSpans(c *Chunk, buf []byte, ps []piece) error {
	type span struct {
		lo, hi uint64
		ps     []piece
	}
	spans := map[int]*span{}
	for _, p := range ps {
		s := c.stripeOf(p.row, p.i)
		t := c.target(p.row, p.i, p.in)
		sp := spans[s]
		if sp == nil {
			sp = &span{lo: t.Physical}
			spans[s] = sp
		}
		sp.hi = t.Physical + uint64(p.n)
		sp.ps = append(sp.ps, p)
	}
	errs := make(chan error, len(spans))
	parallel := len(buf) >= 512<<10 // below, goroutines cost more than they overlap
	for s, sp := range spans {
		read := func() {
			d, ok := v.devs[c.Stripes[s].DevID]
			if !ok {
				errs <- errMissingIO
				return
			}
			tmp := getSpan(int(sp.hi - sp.lo))
			defer putSpan(tmp)
			if _, err := d.Dev.ReadAt(tmp, int64(sp.lo)); err != nil {
				errs <- err
				return
			}
			for _, p := range sp.ps {
				at := c.target(p.row, p.i, p.in).Physical - sp.lo
				copy(buf[p.bufOff:p.bufOff+p.n], tmp[at:])
			}
			errs <- nil
		}
		if parallel {
			go read()
		} else {
			read()
		}
	}
	var first error
	for range spans {
		first = cmpErr(first, <-errs)
	}
	return first
}

// spanPool recycles readSpans' device buffers (fresh ones cost a clear of
// every byte and garbage-collector work per read).
var spanPool sync.Pool

func getSpan(n int) []byte {
	if b, ok := spanPool.Get().(*[]byte); ok && cap(*b) >= n {
		return (*b)[:n]
	}
	return make([]byte, n)
}

func putSpan(b []byte) { spanPool.Put(&b) }
