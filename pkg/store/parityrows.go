package store

import (
	"github.com/ddfs/ddfs/pkg/alloc"
)

// The no-write-hole rule (FORMAT.md §4.4 "Parity profiles"): a row of a
// raid5/raid6 chunk that holds data some durable state references (the
// committed trees or a written fsync log block) is never written again,
// since its parity is rewritten with any strip of it and a crash in
// between would leave the committed strips unrecoverable once a device is
// lost. A transaction places space only in rows that were wholly free
// when it first took space there (its open rows); every durable point (a
// commit, an fsync log block) closes them all.

// rowLen is the logical bytes of one row of bg's chunk; 0 when it has no
// parity.
func (bg *BlockGroup) rowLen() uint64 { return bg.Chunk.RowLen() }

// rowStart is the logical start of the row holding logical.
func (bg *BlockGroup) rowStart(logical uint64) uint64 {
	rl := bg.rowLen()
	return bg.Chunk.Logical + (logical-bg.Chunk.Logical)/rl*rl
}

// rowOpen reports whether the transaction may write in the row starting
// at rs: it opened it, or the row is wholly free now (free holds the
// committed-free space less what this transaction took).
func (tx *Txn) rowOpen(bg *BlockGroup, rs uint64) bool {
	if tx.openRows[rs] {
		return true
	}
	end := min(rs+bg.rowLen(), bg.Chunk.End())
	return bg.free.Contains(rs, end-rs)
}

// usableIn is the part of the free range r of a parity group the
// transaction may take: r less its first and last rows when those hold
// data of a durable state (the rows wholly inside r are free).
func (tx *Txn) usableIn(bg *BlockGroup, r alloc.Range) alloc.Range {
	a, b := r.Start, r.End()
	if rs := bg.rowStart(a); rs != a && !tx.rowOpen(bg, rs) {
		a = rs + bg.rowLen()
	}
	if b > a {
		if rs := bg.rowStart(b - 1); b != min(rs+bg.rowLen(), bg.Chunk.End()) && !tx.rowOpen(bg, rs) {
			b = rs
		}
	}
	if b <= a {
		return alloc.Range{}
	}
	return alloc.Range{Start: a, Len: b - a}
}

// rowsUsable reports whether [start, +n), free space of bg, may be taken.
func (tx *Txn) rowsUsable(bg *BlockGroup, start, n uint64) bool {
	u := tx.usableIn(bg, alloc.Range{Start: start, Len: n})
	return u.Start == start && u.Len == n
}

// openRowsOf records that the transaction took [start, +n) of bg.
func (tx *Txn) openRowsOf(bg *BlockGroup, start, n uint64) {
	if bg.rowLen() == 0 || n == 0 {
		return
	}
	if tx.openRows == nil {
		tx.openRows = map[uint64]bool{}
	}
	for rs := bg.rowStart(start); rs < start+n; rs += bg.rowLen() {
		tx.openRows[rs] = true
	}
}

// takeIn takes n bytes aligned to align from bg's free space at or after
// hint, keeping the no-write-hole rule in a parity group.
func (tx *Txn) takeIn(bg *BlockGroup, n, align, hint uint64) (uint64, bool) {
	if bg.rowLen() == 0 {
		return bg.free.First(n, align, hint)
	}
	at, ok := bg.free.FirstIn(n, align, hint, func(r alloc.Range) alloc.Range { return tx.usableIn(bg, r) })
	if ok {
		tx.openRowsOf(bg, at, n)
	}
	return at, ok
}
