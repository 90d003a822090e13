package scrub

import (
	"fmt"

	"github.com/ddfs/ddfs/pkg/alloc"
	"github.com/ddfs/ddfs/pkg/volume"
)

// Parity chunks (raid5, raid6): the unit pass checks each data sector and
// node by its checksum on copy 0 and rebuilds a bad one from parity
// (copies 1..K); it never rewrites parity, since a rebuilt copy can also
// differ because another strip of the row is wrong. Once every unit is
// settled, parityRows checks the parity of each row that holds used
// space against the data on the devices and, with Repair, rewrites a
// wrong parity strip, unless the row holds data no copy of which was good
// (new parity would then bury what a rebuild might still recover).

// parityRows runs the row pass over every parity chunk with all its
// devices present.
func (s *scrubber) parityRows() error {
	for _, bg := range s.fs.BlockGroups() {
		c := bg.Chunk
		if !c.IsParity() || s.fs.Vol.ChunkDegraded(c) {
			continue
		}
		free, err := s.fs.FreeRanges(bg)
		if err != nil {
			return err
		}
		if err := s.chunkRows(c, usedRows(c, free)); err != nil {
			return err
		}
	}
	return nil
}

// usedRows lists the rows of c that hold used space, given its free
// ranges in logical order.
func usedRows(c *volume.Chunk, free []alloc.Range) []uint64 {
	var rows []uint64
	pos := c.Logical
	for _, f := range free {
		if f.Start > pos {
			rows = c.AppendRows(rows, pos-c.Logical, f.Start-pos)
		}
		pos = max(pos, f.End())
	}
	if pos < c.End() {
		rows = c.AppendRows(rows, pos-c.Logical, c.End()-pos)
	}
	return rows
}

// chunkRows checks (and repairs) the parity of the given rows of c.
func (s *scrubber) chunkRows(c *volume.Chunk, rows []uint64) error {
	rl := c.RowLen()
	fix := func(r uint64) bool {
		start := c.Logical + r*rl
		return s.opt.Repair && !s.uncorrectableIn(start, start+rl)
	}
	bad, err := s.fs.Vol.CheckParityRows(c, rows, fix)
	if err != nil {
		return err
	}
	for _, b := range bad {
		start := c.Logical + b.Row*rl
		if b.Err != nil {
			return fmt.Errorf("parity of row %d of chunk %d: %w", b.Row, c.Logical, b.Err)
		}
		t := c.ParityTarget(b.Row, b.K)
		s.countParity(CopyError{Logical: start, Len: int(rl), Copy: b.K + 1, DevID: t.DevID, Physical: t.Physical,
			Kind: KindParity, Detail: fmt.Sprintf("parity strip %c differs from the row's data", "PQ"[b.K]), Corrected: b.Fixed})
	}
	return nil
}

// countParity is count for a wrong parity strip: no file's data is bad.
func (s *scrubber) countParity(e CopyError) {
	d := &s.rep.Devices[s.devIdx[e.DevID]]
	d.ErrorsFound++
	d.CsumErrors++
	if e.Corrected {
		d.ErrorsCorrected++
	}
	if len(s.rep.Errors) < maxErrors {
		s.rep.Errors = append(s.rep.Errors, e)
	} else {
		s.rep.Truncated++
	}
}

// uncorrectableIn reports whether the scrub found data in [from, to) with
// no good copy.
func (s *scrubber) uncorrectableIn(from, to uint64) bool {
	for _, e := range s.rep.Errors {
		if e.Uncorrectable && e.Logical < to && e.Logical+uint64(e.Len) > from {
			return true
		}
	}
	return false
}
