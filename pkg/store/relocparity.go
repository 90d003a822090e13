package store

import (
	"fmt"

	"github.com/ddfs/ddfs/pkg/alloc"
	"github.com/ddfs/ddfs/pkg/volume"
)

// parityBatchRows bounds the rows a parity relocation reads at once.
const parityBatchRows = 64

// copyUsedParity is copyUsed for a parity destination: every row that
// holds used bytes is written whole, its parity computed from the whole
// row, and only its new stripes (want) are written. When the layout keeps
// stripes (device replace: same geometry), each row is read whole from
// the old layout, so the parity written to a new stripe matches the kept
// strips byte for byte, unused bytes included; when every stripe is new,
// unused bytes are written as zeros. Never is a kept stripe written: it
// belongs to the committed layout too.
func (tx *Txn) copyUsedParity(bg *BlockGroup, oldC, newC *volume.Chunk, want func(volume.Target) bool, used []alloc.Range) error {
	fs := tx.fs
	allNew := true
	for _, s := range newC.Stripes {
		allNew = allNew && want(volume.Target{DevID: s.DevID, Physical: s.Offset})
	}
	if !allNew && (oldC.Profile != newC.Profile || oldC.StripeLen != newC.StripeLen || len(oldC.Stripes) != len(newC.Stripes)) {
		return fmt.Errorf("relocate chunk %d: a %v layout that keeps stripes must keep its geometry", oldC.Logical, newC.Profile)
	}
	first := fs.leavingCopy(oldC)
	ver, err := fs.newVerifier(oldC, first, tx.dirty)
	if err != nil {
		return err
	}
	rl := newC.RowLen()
	var rows []uint64
	for _, r := range used {
		rows = newC.AppendRows(rows, r.Start, r.Len)
	}
	buf := make([]byte, parityBatchRows*rl)
	for len(rows) > 0 {
		n := 1 // a run of consecutive rows
		for n < len(rows) && n < parityBatchRows && rows[n] == rows[0]+uint64(n) {
			n++
		}
		b := buf[:uint64(n)*rl]
		from := rows[0] * rl
		if err := tx.fillRows(oldC, from, b, used, allNew, first, ver); err != nil {
			return err
		}
		if err := fs.Vol.WriteRows(newC, rows[0], b, want); err != nil {
			return fmt.Errorf("relocate chunk %d: %w", oldC.Logical, err)
		}
		fs.reloc.Bytes += uint64(len(b))
		rows = rows[n:]
	}
	fs.reloc.Repaired += ver.repaired
	fs.reloc.Unrecovered += ver.unrecovered
	return nil
}

// fillRows reads the rows at chunk offset from into b: whole from the
// old layout, tails past the chunk's length included (same geometry), or
// (allNew) only their used bytes, zeros elsewhere. The used bytes are
// verified against their checksums either way.
func (tx *Txn) fillRows(oldC *volume.Chunk, from uint64, b []byte, used []alloc.Range, allNew bool, first int, ver *verifier) error {
	clear(b)
	to := from + uint64(len(b))
	if !allNew {
		if err := tx.fs.Vol.ReadRows(oldC, from/oldC.RowLen(), b); err != nil {
			return fmt.Errorf("relocate chunk %d: %w", oldC.Logical, err)
		}
	}
	for _, r := range used {
		lo, hi := max(r.Start, from), min(r.End(), to)
		if lo >= hi {
			continue
		}
		if allNew {
			if err := tx.fs.Vol.ReadChunk(oldC, lo, b[lo-from:hi-from], first); err != nil {
				return fmt.Errorf("relocate chunk %d: %w", oldC.Logical, err)
			}
		}
		ver.check(lo, b[lo-from:hi-from])
	}
	return nil
}
