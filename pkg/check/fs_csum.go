package check

// CSUM_ITEM: the csum tree's items during the walk, then one checksum for
// every sector file data needs and none outside the data extents.

import (
	"cmp"
	"fmt"
	"iter"
	"slices"

	"github.com/ddfs/ddfs/format"
)

// csumItem takes one item of the csum tree (called by item()).
func (c *checker) csumItem(it format.Item) {
	s := &c.fs
	k := it.Key
	ss, cl := uint64(c.sb.SectorSize), uint64(c.sb.CsumType.Len())
	var p Problem // filled in only for a problem: this runs for every csum item
	switch {
	case k.ObjectID != format.CsumObjectID || k.Type != format.CsumItemKey:
		p.Message = fmt.Sprintf("item %v is no checksum item", k)
	case len(it.Data) == 0 || uint64(len(it.Data))%cl != 0:
		p.Message = fmt.Sprintf("checksum item of %d bytes, not a positive multiple of %d", len(it.Data), cl)
	case k.Offset%ss != 0:
		p.Message = fmt.Sprintf("checksum item starts inside a sector of %d bytes", ss)
	case k.Offset+uint64(len(it.Data))/cl*ss < k.Offset:
		p.Message = "checksum item passes the end of the address space"
	}
	at := func(code Code) {
		p.Code, p.Tree, p.Logical, p.fix = code, format.CsumTree.String(), k.Offset, &fixData{key: k}
		c.add(p)
	}
	if p.Message != "" {
		at(CsumItemBad)
		return
	}
	end := k.Offset + uint64(len(it.Data))/cl*ss
	if len(s.csums.list) > 0 && k.Offset < s.lastCsum {
		p.Message = fmt.Sprintf("checksum item overlaps the previous one, which ends at %d", s.lastCsum)
		at(CsumOverlap)
	}
	s.lastCsum = max(s.lastCsum, end)
	// An item that starts where the previous one ends extends its span:
	// writers put one item per extent written (16 bytes a small file).
	if n := len(s.csums.list); n > 0 && s.csums.list[n-1].end == k.Offset {
		s.csums.list[n-1].end = end
	} else {
		s.csums.push(span{k.Offset, end})
	}
	if c.opt.CheckData {
		c.data.verify(c, k.Offset, it.Data)
	}
}

// checkCsums requires exactly one checksum for every sector of the data
// extents that regular file extents use, and none outside data extents.
// Extents that are only preallocated (or not referenced at all) may have
// sums. The extents come sorted from the walk: their spans are read off
// the list in place (a copy each, 32 bytes an extent, was half of what a
// check of 4M files held); only keys out of order take copies to sort.
func (c *checker) checkCsums() {
	s := &c.fs
	csums := s.csums.list
	sortSpans(csums)
	all, need := s.spans(false), s.spans(true)
	if s.unsorted {
		for i, e := range s.extents.list {
			s.all.push(span{e.logical, e.end()})
			if s.usedBy(i).regular {
				s.need.push(span{e.logical, e.end()})
			}
		}
		sortSpans(s.all.list)
		sortSpans(s.need.list)
		all, need = slices.Values(s.all.list), slices.Values(s.need.list)
	}
	tree := format.CsumTree.String()
	// Sums over space a file extent points at are not orphans, item or
	// not: "in use" wins (FILE_EXTENT_NO_ITEM rebuilds the item).
	uncovered(slices.Values(csums), union(mergeSpans(all, s.missingSpans()), &s.union), func(x span, a, b uint64) {
		c.add(Problem{Code: CsumOrphan, Tree: tree, Logical: a, fix: &fixData{end: b}, Message: fmt.Sprintf("checksums for [%d, %d) outside every data extent and every file extent", a, b)})
	})
	s.union.list = s.union.list[:0]
	uncovered(need, union(slices.Values(csums), &s.union), func(x span, a, b uint64) {
		c.add(Problem{Code: CsumMissing, Tree: tree, Logical: x.start, fix: &fixData{index: a, end: b}, Message: fmt.Sprintf("data extent of %d bytes: [%d, %d) has no checksum", x.end-x.start, a, b)})
	})
}

// spans yields the spans of the data extents in list order: all of
// them, or only those a regular file extent uses (they need sums).
func (s *fsState) spans(needed bool) iter.Seq[span] {
	return func(yield func(span) bool) {
		for i, e := range s.extents.list {
			if (!needed || s.usedBy(i).regular) && !yield(span{e.logical, e.end()}) {
				return
			}
		}
	}
}

// sortSpans sorts by start (the lists come sorted from the walk, unless
// keys are out of order across nodes).
func sortSpans(s []span) {
	byStart := func(a, b span) int { return cmp.Compare(a.start, b.start) }
	if !slices.IsSortedFunc(s, byStart) {
		slices.SortFunc(s, byStart)
	}
}

// union merges sorted spans into disjoint ones, into out (empty).
func union(s iter.Seq[span], out *bigList[span]) []span {
	for x := range s {
		if n := len(out.list); n > 0 && x.start <= out.list[n-1].end {
			out.list[n-1].end = max(out.list[n-1].end, x.end)
			continue
		}
		out.push(x)
	}
	return out.list
}

// uncovered calls fn for every piece [a, b) of a span of s (sorted) that no
// span of cover (sorted, disjoint) covers.
func uncovered(s iter.Seq[span], cover []span, fn func(x span, a, b uint64)) {
	j := 0
	for x := range s {
		for j < len(cover) && cover[j].end <= x.start {
			j++
		}
		pos := x.start
		for k := j; k < len(cover) && cover[k].start < x.end && pos < x.end; k++ {
			if cover[k].start > pos {
				fn(x, pos, cover[k].start)
			}
			pos = max(pos, cover[k].end)
		}
		if pos < x.end {
			fn(x, pos, x.end)
		}
	}
}

// mergeSpans yields the spans of two sorted sequences in start order.
func mergeSpans(a, b iter.Seq[span]) iter.Seq[span] {
	return func(yield func(span) bool) {
		nb, stop := iter.Pull(b)
		defer stop()
		y, ok := nb()
		for x := range a {
			for ; ok && y.start < x.start; y, ok = nb() {
				if !yield(y) {
					return
				}
			}
			if !yield(x) {
				return
			}
		}
		for ; ok; y, ok = nb() {
			if !yield(y) {
				return
			}
		}
	}
}
