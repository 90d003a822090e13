package check

import (
	"sort"

	"github.com/ddfs/ddfs/format"
)

// The data extents and the file extent items that point at them. The
// extent tree is walked before the fs tree, in key order, so the extents
// are a sorted list when the file extents arrive, and each file extent
// finds its extent's counter by position (usually the one after the last:
// files are written in inode order), not through a map of every extent.

// dataExtent records a data EXTENT_ITEM (called by item()).
func (s *fsState) dataExtent(k format.Key, e *format.ExtentItem) {
	id := extentID{k.ObjectID, k.Offset}
	if n := len(s.extents.list); n > 0 && !s.extents.list[n-1].extentID.less(id) {
		s.unsorted = true // keys out of order across nodes (reported): look up by map
	}
	s.extents.push(dataExtent{id, e.Refs, e.RAMBytes, e.Compression})
}

func (a extentID) less(b extentID) bool {
	return a.logical < b.logical || a.logical == b.logical && a.length < b.length
}

// use is the counter of the file extent items pointing at id: the one of
// its extent item, or (no such item) one in s.missing.
func (s *fsState) use(id extentID) *extentUse {
	for len(s.uses.list) < len(s.extents.list) {
		s.uses.push(extentUse{})
	}
	if i, ok := s.find(id); ok {
		return &s.uses.list[i]
	}
	if s.missing == nil {
		s.missing = map[extentID]*extentUse{}
	}
	u := s.missing[id]
	if u == nil {
		u = &extentUse{}
		s.missing[id] = u
	}
	return u
}

// find returns the index of the extent item id.
func (s *fsState) find(id extentID) (int, bool) {
	ext := s.extents.list
	if s.unsorted {
		if s.index == nil {
			s.index = make(map[extentID]int, len(ext))
			for i := len(ext) - 1; i >= 0; i-- { // the first of duplicates wins
				s.index[ext[i].extentID] = i
			}
		}
		i, ok := s.index[id]
		return i, ok
	}
	for _, i := range [2]int{s.cursor, s.cursor + 1} {
		if i < len(ext) && ext[i].extentID == id {
			s.cursor = i
			return i, true
		}
	}
	i := sort.Search(len(ext), func(i int) bool { return !ext[i].extentID.less(id) })
	if i < len(ext) && ext[i].extentID == id {
		s.cursor = i
		return i, true
	}
	return 0, false
}

// usedBy is the counter of extent i (zero if nothing points at it).
func (s *fsState) usedBy(i int) extentUse {
	if i < len(s.uses.list) {
		return s.uses.list[i]
	}
	return extentUse{}
}

// missingRefs are the extents file extents point at that have no extent
// item, by logical address.
func (s *fsState) missingRefs() []extentID {
	ids := make([]extentID, 0, len(s.missing))
	for id := range s.missing {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i].less(ids[j]) })
	return ids
}

// mismatchAt names the first file extent that reads extent id otherwise
// than the first one did.
func (s *fsState) mismatchAt(id extentID, where string) {
	if s.mismatch == nil {
		s.mismatch = map[extentID]string{}
	}
	s.mismatch[id] = where
}

// free returns the big memory of the lists (the pass is over).
func (s *fsState) free() {
	for _, l := range []interface{ free() }{&s.extents, &s.uses, &s.csums, &s.need, &s.all, &s.union} {
		l.free()
	}
}
