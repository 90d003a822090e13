package check

import (
	"github.com/ddfs/ddfs/format"
)

// refSurgery damages INODE_REF items (fs_ref.go).
func refSurgery() []surgeryCase {
	const root = format.RootDirIno
	fsT := format.FSTree
	return []surgeryCase{
		{"inode ref deleted", func(s *surgeon) []want {
			small := s.ino("/small")
			s.del(fsT, format.Key{ObjectID: small, Type: format.InodeRefKey, Offset: root})
			return []want{
				{code: Orphan, ino: small},
				{code: EntryNoRef, ino: root},
			}
		}},
		{"inode ref renamed", func(s *surgeon) []want {
			// The INODE_REF's name alone changes: its fingerprint must
			// hold the name, or it balances the DIR_INDEX.
			small := s.ino("/small")
			firstRef(s, small, func(r *format.InodeRef) { r.Name = "smalm" })
			return []want{
				{code: RefIndexOther, ino: small},
				{code: EntryNoRef, ino: root},
			}
		}},
		{"inode ref index changed", func(s *surgeon) []want {
			// The INODE_REF's index alone changes: its fingerprint must
			// hold the index, or it balances the DIR_INDEX.
			small := s.ino("/small")
			firstRef(s, small, func(r *format.InodeRef) { r.Index += 1000 })
			return []want{{code: RefNoIndex, ino: small}}
		}},
		{"inode ref under another parent", func(s *surgeon) []want {
			// The INODE_REF's parent alone changes (to no directory): its
			// fingerprint must hold the parent, or it balances the DIR_INDEX.
			small := s.ino("/small")
			s.move(fsT, format.Key{ObjectID: small, Type: format.InodeRefKey, Offset: root}, format.Key{ObjectID: small, Type: format.InodeRefKey, Offset: 77777})
			return []want{
				{code: RefNoDir, ino: small},
				{code: EntryNoRef, ino: root},
			}
		}},
		{"only name under no directory", func(s *surgeon) []want {
			// /small's one INODE_REF names a parent that does not exist:
			// the ref goes and /small gets a name in lost+found.
			small := s.ino("/small")
			s.unlink(root, "small")
			s.put(fsT, format.Key{ObjectID: small, Type: format.InodeRefKey, Offset: 77777}, format.MarshalInodeRefs([]format.InodeRef{{Index: 2, Name: "small"}}))
			return []want{{code: RefNoDir, ino: small}}
		}},
		{"an inode ref naming its own inode as parent", func(s *surgeon) []want {
			// Only the INODE_REF: no entry to drop, the ref itself goes
			// and /la keeps its name in the root.
			la := s.ino("/la")
			s.put(fsT, format.Key{ObjectID: la, Type: format.InodeRefKey, Offset: la}, format.MarshalInodeRefs([]format.InodeRef{{Index: 5, Name: "me"}}))
			return []want{{code: RefSelfParent, ino: la}, {code: DirNames, ino: la}, {code: RefNoIndex, ino: la}}
		}},
		{"a directory whose only name is in itself", func(s *surgeon) []want {
			// /la loses its name in the root; its one INODE_REF names
			// /la itself: the ref goes and /la moves to lost+found.
			la := s.ino("/la")
			s.unlink(root, "la")
			s.inode(root, func(in *format.InodeItem) { in.Nlink-- })
			s.put(fsT, format.Key{ObjectID: la, Type: format.InodeRefKey, Offset: la}, format.MarshalInodeRefs([]format.InodeRef{{Index: 5, Name: "me"}}))
			return []want{{code: RefSelfParent, ino: la}, {code: RefNoIndex, ino: la}, {code: DirLoop, ino: la}}
		}},
	}
}

// firstRef changes the first name of ino's INODE_REF in the root.
func firstRef(s *surgeon, ino uint64, change func(*format.InodeRef)) {
	k := inodeRefKey(ino, format.RootDirIno)
	refs, err := format.UnmarshalInodeRefs(s.get(format.FSTree, k))
	must(s.t, err)
	change(&refs[0])
	s.put(format.FSTree, k, format.MarshalInodeRefs(refs))
}
