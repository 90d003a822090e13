// Package alloc decides where things go: which device ranges a new chunk
// takes (the placement policy) and which free bytes of a block group an
// extent takes (free-space maps). It does no I/O.
package alloc

import (
	"fmt"
	"sort"
)

// Range is [Start, Start+Len).
type Range struct{ Start, Len uint64 }

// End is the first byte after r.
func (r Range) End() uint64 { return r.Start + r.Len }

// RangeSet is a set of disjoint, non-adjacent ranges in order. It is the
// in-memory free-space map of one block group.
type RangeSet struct {
	r     []Range
	total uint64
}

// Total is the number of bytes in the set.
func (s *RangeSet) Total() uint64 { return s.total }

// Ranges returns the ranges in order; the slice must not be modified.
func (s *RangeSet) Ranges() []Range { return s.r }

// Add inserts [start, start+n); it must not overlap the set.
func (s *RangeSet) Add(start, n uint64) error {
	if n == 0 {
		return nil
	}
	i := sort.Search(len(s.r), func(i int) bool { return s.r[i].Start >= start })
	if (i > 0 && s.r[i-1].End() > start) || (i < len(s.r) && s.r[i].Start < start+n) {
		return fmt.Errorf("range [%d,+%d) already free (double free)", start, n)
	}
	mergeL := i > 0 && s.r[i-1].End() == start
	mergeR := i < len(s.r) && s.r[i].Start == start+n
	switch {
	case mergeL && mergeR:
		s.r[i-1].Len += n + s.r[i].Len
		s.r = append(s.r[:i], s.r[i+1:]...)
	case mergeL:
		s.r[i-1].Len += n
	case mergeR:
		s.r[i].Start, s.r[i].Len = start, s.r[i].Len+n
	default:
		s.r = append(s.r, Range{})
		copy(s.r[i+1:], s.r[i:])
		s.r[i] = Range{start, n}
	}
	s.total += n
	return nil
}

// Remove takes [start, start+n) out of the set; it must be wholly inside.
func (s *RangeSet) Remove(start, n uint64) error {
	if n == 0 {
		return nil
	}
	i := sort.Search(len(s.r), func(i int) bool { return s.r[i].End() > start })
	if i == len(s.r) || s.r[i].Start > start || s.r[i].End() < start+n {
		return fmt.Errorf("range [%d,+%d) is not free", start, n)
	}
	r := s.r[i]
	before := Range{r.Start, start - r.Start}
	after := Range{start + n, r.End() - start - n}
	switch {
	case before.Len > 0 && after.Len > 0:
		s.r[i] = before
		s.r = append(s.r, Range{})
		copy(s.r[i+2:], s.r[i+1:])
		s.r[i+1] = after
	case before.Len > 0:
		s.r[i] = before
	case after.Len > 0:
		s.r[i] = after
	default:
		s.r = append(s.r[:i], s.r[i+1:]...)
	}
	s.total -= n
	return nil
}

// Contains reports whether [start, start+n) is wholly free.
func (s *RangeSet) Contains(start, n uint64) bool {
	i := sort.Search(len(s.r), func(i int) bool { return s.r[i].End() > start })
	return i < len(s.r) && s.r[i].Start <= start && s.r[i].End() >= start+n
}

// First takes the first n bytes aligned to align (a power of two) at or
// after hint, wrapping around to the start; ok is false when nothing fits.
func (s *RangeSet) First(n, align, hint uint64) (start uint64, ok bool) {
	try := func(from int, lo uint64) (uint64, bool) {
		for _, r := range s.r[from:] {
			st := max(r.Start, lo)
			st = (st + align - 1) &^ (align - 1)
			if st >= r.Start && st+n <= r.End() {
				return st, true
			}
		}
		return 0, false
	}
	i := sort.Search(len(s.r), func(i int) bool { return s.r[i].End() > hint })
	if st, ok := try(i, hint); ok {
		_ = s.Remove(st, n)
		return st, true
	}
	if st, ok := try(0, 0); ok {
		_ = s.Remove(st, n)
		return st, true
	}
	return 0, false
}
