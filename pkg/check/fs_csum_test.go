package check

import (
	"github.com/ddfs/ddfs/format"
)

// csumSurgery damages CSUM_ITEMs (fs_csum.go).
func csumSurgery() []surgeryCase {
	csT := format.CsumTree
	ss := uint64(4096)
	return []surgeryCase{
		{"csum item deleted", func(s *surgeon) []want {
			l, n := s.diskExtent(s.ino("/mid"))
			s.ownSums(l, n)
			s.del(csT, format.Key{ObjectID: format.CsumObjectID, Type: format.CsumItemKey, Offset: l})
			return []want{{code: CsumMissing, logical: l}}
		}},
		{"csum items overlap", func(s *surgeon) []want {
			l, _ := s.diskExtent(s.ino("/mid"))
			s.put(csT, format.Key{ObjectID: format.CsumObjectID, Type: format.CsumItemKey, Offset: l + ss}, make([]byte, 4))
			return []want{{code: CsumOverlap, logical: l + ss}}
		}},
		{"csum item of a partial sum", func(s *surgeon) []want {
			l, n := s.diskExtent(s.ino("/mid"))
			s.ownSums(l, n)
			k := format.Key{ObjectID: format.CsumObjectID, Type: format.CsumItemKey, Offset: l}
			s.put(csT, k, s.get(csT, k)[:7])
			return []want{
				{code: CsumItemBad, logical: l},
				{code: CsumMissing, logical: l},
			}
		}},
		{"csum outside the data extents", func(s *surgeon) []want {
			var at uint64
			for _, ch := range s.st.Vol.Chunks.All() {
				if ch.Type == format.ChunkData {
					at = ch.End() - ss
				}
			}
			s.put(csT, format.Key{ObjectID: format.CsumObjectID, Type: format.CsumItemKey, Offset: at}, make([]byte, 4))
			return []want{{code: CsumOrphan, logical: at}}
		}},
	}
}
