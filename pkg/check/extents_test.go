package check

import (
	"github.com/ddfs/ddfs/format"
)

// extentItemSurgery damages data EXTENT_ITEMs and their references
// (extents.go, refs.go).
func extentItemSurgery() []surgeryCase {
	extT := format.ExtentTree
	ss := uint64(4096)
	return []surgeryCase{
		{"extent refs", func(s *surgeon) []want {
			l, n := s.diskExtent(s.ino("/mid"))
			k := format.Key{ObjectID: l, Type: format.ExtentItemKey, Offset: n}
			e, err := format.UnmarshalExtentItem(s.get(extT, k))
			must(s.t, err)
			e.Refs = 2
			s.put(extT, k, format.MarshalExtentItem(e))
			return []want{{code: ExtentRefs, logical: l}}
		}},
		{"data extent inside another", func(s *surgeon) []want {
			// A second extent item over the second sector of /mid's:
			// the two overlap, and nothing references the second.
			l, n := s.diskExtent(s.ino("/mid"))
			b := s.get(extT, format.Key{ObjectID: l, Type: format.ExtentItemKey, Offset: n})
			s.put(extT, format.Key{ObjectID: l + ss, Type: format.ExtentItemKey, Offset: ss}, b)
			return []want{
				{code: ExtentOverlap, logical: l + ss},
				{code: ExtentUnreferenced, logical: l + ss},
				{code: BGUsed},
			}
		}},
		{"data extent right after another", func(s *surgeon) []want {
			// Touching is not overlapping: only the reference is missing.
			var l, n uint64
			for _, it := range s.items(extT, format.Key{}, format.Key{ObjectID: ^uint64(0)}) {
				if it.Key.Type == format.ExtentItemKey {
					l, n = it.Key.ObjectID, it.Key.Offset // the last data extent
				}
			}
			b := s.get(extT, format.Key{ObjectID: l, Type: format.ExtentItemKey, Offset: n})
			s.put(extT, format.Key{ObjectID: l + n, Type: format.ExtentItemKey, Offset: ss}, b)
			return []want{
				{code: ExtentUnreferenced, logical: l + n},
				{code: BGUsed},
			}
		}},
		{"data extent over a node", func(s *surgeon) []want {
			// An extent item at the chunk tree's root node (which the
			// surgeon's commit does not move) overlaps that node.
			l, n := s.diskExtent(s.ino("/mid"))
			b := s.get(extT, format.Key{ObjectID: l, Type: format.ExtentItemKey, Offset: n})
			sb := s.st.Super()
			at := sb.Roots.Root(format.ChunkTree).Logical
			s.put(extT, format.Key{ObjectID: at, Type: format.ExtentItemKey, Offset: ss}, b)
			return []want{
				{code: ExtentOverlap, logical: at},
				{code: DataExtentChunk, logical: at},
				{code: ExtentUnreferenced, logical: at},
				{code: BGUsed},
			}
		}},
		{"data extent at the end of its chunk", func(s *surgeon) []want {
			// Ending exactly where the chunk ends is inside it.
			l, n := s.diskExtent(s.ino("/mid"))
			b := s.get(extT, format.Key{ObjectID: l, Type: format.ExtentItemKey, Offset: n})
			ch, _ := s.st.Vol.Chunks.Lookup(l)
			s.put(extT, format.Key{ObjectID: ch.End() - ss, Type: format.ExtentItemKey, Offset: ss}, b)
			return []want{
				{code: ExtentUnreferenced, logical: ch.End() - ss},
				{code: BGUsed, logical: ch.Logical},
			}
		}},
		{"data extent past the end of its chunk", func(s *surgeon) []want {
			l, n := s.diskExtent(s.ino("/mid"))
			b := s.get(extT, format.Key{ObjectID: l, Type: format.ExtentItemKey, Offset: n})
			ch, _ := s.st.Vol.Chunks.Lookup(l)
			s.put(extT, format.Key{ObjectID: ch.End() - ss, Type: format.ExtentItemKey, Offset: 2 * ss}, b)
			return []want{
				{code: ExtentOutside, logical: ch.End() - ss},
				{code: ExtentUnreferenced, logical: ch.End() - ss},
			}
		}},
		{"extent item missing", func(s *surgeon) []want {
			mid := s.ino("/mid")
			l, n := s.diskExtent(mid)
			s.del(extT, format.Key{ObjectID: l, Type: format.ExtentItemKey, Offset: n})
			return []want{
				{code: FileExtentNoItem, ino: mid, logical: l},
				{code: BGUsed}, // its sums are no orphans: the file extent points there
			}
		}},
	}
}
