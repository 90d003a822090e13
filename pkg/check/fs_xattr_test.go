package check

import (
	"github.com/ddfs/ddfs/format"
)

// xattrSurgery damages XATTR_ITEMs (fs_xattr.go).
func xattrSurgery() []surgeryCase {
	fsT := format.FSTree
	return []surgeryCase{
		{"xattr under a wrong hash", func(s *surgeon) []want {
			dir := s.ino("/dir")
			k := format.Key{ObjectID: dir, Type: format.XattrItemKey, Offset: format.NameHash([]byte("user.comment"))}
			to := k
			to.Offset--
			s.move(fsT, k, to)
			return []want{{code: XattrHash, ino: dir}}
		}},
		{"xattr also under a wrong hash", func(s *surgeon) []want {
			// A second copy of user.comment (another value) under a wrong
			// key: -y keeps the one its hash keys and drops the other.
			dir := s.ino("/dir")
			k := format.Key{ObjectID: dir, Type: format.XattrItemKey, Offset: format.NameHash([]byte("user.comment"))}
			to := k
			to.Offset--
			s.put(fsT, to, format.MarshalXattrs([]format.Xattr{{Name: "user.comment", Value: []byte("another")}}))
			return []want{{code: XattrHash, ino: dir}}
		}},
	}
}
