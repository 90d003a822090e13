package check

import (
	"fmt"
	"math"
	"sort"

	"github.com/ddfs/ddfs/format"
)

// The data extents and the file extent items that point at them. The
// extent tree is walked before the fs tree, in key order, so the extents
// are a sorted list when the file extents arrive, and each file extent
// finds its extent's counter by position (usually the one after the last:
// files are written in inode order), not through a map of every extent.

// dataExtent records a data EXTENT_ITEM (called by item() once the item
// and its key passed format's checks: length and ram are at most
// format.MaxExtentBytes).
func (s *fsState) dataExtent(k format.Key, e *format.ExtentItem) {
	id := extentID{k.ObjectID, k.Offset}
	if n := len(s.extents.list); n > 0 && !s.extents.list[n-1].id().less(id) {
		s.unsorted = true // keys out of order across nodes (reported): look up by map
	}
	s.extents.push(dataExtent{logical: k.ObjectID, refs: e.Refs, length: uint32(k.Offset), ram: uint32(e.RAMBytes), compression: e.Compression})
}

func (a extentID) less(b extentID) bool {
	return a.logical < b.logical || a.logical == b.logical && a.length < b.length
}

// use counts file extent item x of inode ino at file offset off, which
// points at id: on its extent item's counter, comparing x's view of the
// extent with the item's, or (no such item) on one in s.missing.
func (s *fsState) use(id extentID, ino, off uint64, x *format.FileExtentItem) {
	i, ok := s.find(id)
	if !ok {
		if s.missing == nil {
			s.missing = map[extentID]*missingUse{}
		}
		u := s.missing[id]
		if u == nil {
			u = &missingUse{ino: ino, off: off, ram: x.RAMBytes, compression: x.Compression}
			s.missing[id] = u
		}
		u.n++
		return
	}
	for len(s.uses.list) <= i {
		s.uses.push(extentUse{})
	}
	u, e := &s.uses.list[i], &s.extents.list[i]
	switch {
	case e.compression == x.Compression && uint64(e.ram) == x.RAMBytes:
		u.matched = true
	case !u.mismatch:
		u.mismatch = true
		s.mismatchAt(id, fmt.Sprintf("inode %d extent at %d", ino, off), x)
	default:
		s.mismatchAgain(id, x)
	}
	if u.n < math.MaxUint32 {
		u.n++
	}
	u.regular = u.regular || x.Type == format.FileExtentRegular
}

// find returns the index of the extent item id.
func (s *fsState) find(id extentID) (int, bool) {
	ext := s.extents.list
	if s.unsorted {
		if s.index == nil {
			s.index = make(map[extentID]int, len(ext))
			for i := len(ext) - 1; i >= 0; i-- { // the first of duplicates wins
				s.index[ext[i].id()] = i
			}
		}
		i, ok := s.index[id]
		return i, ok
	}
	for _, i := range [2]int{s.cursor, s.cursor + 1} {
		if i < len(ext) && ext[i].id() == id {
			s.cursor = i
			return i, true
		}
	}
	i := sort.Search(len(ext), func(i int) bool { return !ext[i].id().less(id) })
	if i < len(ext) && ext[i].id() == id {
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
// than its extent item says, and keeps its view of the extent.
func (s *fsState) mismatchAt(id extentID, where string, x *format.FileExtentItem) {
	if s.mismatch == nil {
		s.mismatch = map[extentID]*readAs{}
	}
	s.mismatch[id] = &readAs{where: where, ram: x.RAMBytes, compression: x.Compression}
}

// mismatchAgain notes another file extent that reads extent id otherwise
// than its item: whether it shares the first one's view.
func (s *fsState) mismatchAgain(id extentID, x *format.FileExtentItem) {
	if m := s.mismatch[id]; m.ram != x.RAMBytes || m.compression != x.Compression {
		m.differ = true
	}
}

// readAs is how the file extents that disagree with an extent item read
// the extent: the first one's view, and whether others differ from it.
type readAs struct {
	where       string
	ram         uint64
	compression format.Compression
	differ      bool
}

// free returns the big memory of the lists (the pass is over).
func (s *fsState) free() {
	for _, l := range []interface{ free() }{&s.extents, &s.uses, &s.csums, &s.need, &s.all, &s.union} {
		l.free()
	}
}
