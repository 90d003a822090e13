package store

import (
	"fmt"

	"github.com/ddfs/ddfs/pkg/alloc"
	"github.com/ddfs/ddfs/pkg/volume"
)

// parityBatchStrip is what a parity relocation reads from each device at
// once (a batch is this many bytes of every stripe): reads of a few
// strips each left a replace at half the devices' read rate.
const parityBatchStrip = 4 << 20

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
	batchRows := max(1, parityBatchStrip/int(newC.StripeLen))
	var rows []uint64
	for _, r := range used {
		rows = newC.AppendRows(rows, r.Start, r.Len)
	}
	fill := func(row uint64, b []byte) error {
		return tx.fillRows(oldC, row*rl, b, used, allNew, first, ver)
	}
	write := func(row uint64, b []byte) error {
		if err := fs.Vol.WriteRows(newC, row, b, want); err != nil {
			return fmt.Errorf("relocate chunk %d: %w", oldC.Logical, err)
		}
		fs.reloc.Bytes += uint64(len(b))
		return nil
	}
	if err := pipeRows(rows, batchRows, rl, fill, write); err != nil {
		return err
	}
	fs.reloc.Repaired += ver.repaired
	fs.reloc.Unrecovered += ver.unrecovered
	return nil
}

// pipeRows moves rows (ascending) in batches of up to batchRows
// consecutive rows of rl bytes: fill reads a batch, write writes it.
// Reading a batch (every other device, rebuilt from parity on a replace)
// overlaps writing the one before: two buffers, fill on a goroutine of
// its own (what it touches is its alone), write on the caller's.
func pipeRows(rows []uint64, batchRows int, rl uint64, fill, write func(row uint64, b []byte) error) error {
	type batch struct {
		first uint64
		b     []byte
	}
	free := make(chan []byte, 2)
	for range 2 {
		free <- make([]byte, uint64(batchRows)*rl)
	}
	full := make(chan batch, 1)
	stop := make(chan struct{})
	var readErr error
	go func() {
		defer close(full)
		for len(rows) > 0 {
			n := 1 // a run of consecutive rows
			for n < len(rows) && n < batchRows && rows[n] == rows[0]+uint64(n) {
				n++
			}
			var buf []byte
			select {
			case buf = <-free:
			case <-stop:
				return
			}
			b := buf[:uint64(n)*rl]
			if readErr = fill(rows[0], b); readErr != nil {
				return
			}
			full <- batch{rows[0], b}
			rows = rows[n:]
		}
	}()
	var writeErr error
	for bt := range full {
		if writeErr == nil {
			if writeErr = write(bt.first, bt.b); writeErr != nil {
				close(stop)
			}
		}
		free <- bt.b[:cap(bt.b)]
	}
	if writeErr != nil {
		return writeErr
	}
	return readErr
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
