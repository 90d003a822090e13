package check

import (
	"github.com/ddfs/ddfs/format"
)

// dirSurgery damages DIR_ITEM and DIR_INDEX items and directories
// (fs_dir.go).
func dirSurgery() []surgeryCase {
	const root = format.RootDirIno
	fsT := format.FSTree
	return []surgeryCase{
		{"seq behind the indexes", func(s *surgeon) []want {
			s.inode(root, func(in *format.InodeItem) { in.Seq = 3 })
			return []want{{code: DirIndexRange, ino: root}}
		}},
		{"seq at the last index", func(s *surgeon) []want {
			// Seq is the next free index: the last DIR_INDEX equal to it
			// is out of range (one past is the boundary).
			idx := s.items(fsT, format.Key{ObjectID: root, Type: format.DirIndexKey}, format.Key{ObjectID: root, Type: format.DirIndexKey + 1})
			last := idx[len(idx)-1].Key.Offset
			s.inode(root, func(in *format.InodeItem) { in.Seq = last })
			return []want{{code: DirIndexRange, ino: root}}
		}},
		{"seq at the first index", func(s *surgeon) []want {
			// /la holds one name, at index 2: the fix raises the seq
			// past it and keeps the name.
			la := s.ino("/la")
			s.inode(la, func(in *format.InodeItem) { in.Seq = 2 })
			return []want{{code: DirIndexRange, ino: la}}
		}},
		{"dir index deleted", func(s *surgeon) []want {
			small := s.ino("/small")
			idx, _ := s.entry(root, "small")
			s.del(fsT, format.Key{ObjectID: root, Type: format.DirIndexKey, Offset: idx})
			return []want{
				{code: DirSize, ino: root},
				{code: RefNoIndex, ino: small},
			}
		}},
		{"dir item deleted", func(s *surgeon) []want {
			s.entry(root, "mid")
			s.del(fsT, dirItemKey(root, "mid"))
			return []want{{code: IndexNoItem, ino: root}}
		}},
		{"name at DIR_INDEX 1", func(s *surgeon) []want {
			// Indexes start at 2: -y moves the name to a new index, and
			// /small keeps its path (TestRepairSurgery).
			nameAtIndex1(s, "small")
			return []want{{code: DirIndexRange, ino: root}}
		}},
		{"directory name at DIR_INDEX 1", func(s *surgeon) []want {
			// As above for a directory: its one INODE_REF, which names
			// the index, moves with the name.
			nameAtIndex1(s, "dir")
			return []want{{code: DirIndexRange, ino: root}}
		}},
		{"dir item names another inode", func(s *surgeon) []want {
			// The DIR_ITEM's inode alone changes (to another regular file):
			// its fingerprint must hold the inode, or it balances the
			// DIR_INDEX.
			mid := s.ino("/mid")
			es, err := format.UnmarshalDirEntries(s.get(fsT, dirItemKey(root, "small")))
			must(s.t, err)
			es[0].Ino = mid
			s.put(fsT, dirItemKey(root, "small"), format.MarshalDirEntries(es))
			return []want{
				{code: EntryMismatch, ino: root},
				{code: EntryNoRef, ino: root},
			}
		}},
		{"dir item renamed under its own hash", func(s *surgeon) []want {
			// The DIR_ITEM's name alone changes, under the new name's hash:
			// its fingerprint must hold the name, or it balances the
			// DIR_INDEX.
			es, err := format.UnmarshalDirEntries(s.get(fsT, dirItemKey(root, "mid")))
			must(s.t, err)
			s.del(fsT, dirItemKey(root, "mid"))
			es[0].Name = "mie"
			s.put(fsT, dirItemKey(root, "mie"), format.MarshalDirEntries(es))
			return []want{
				{code: IndexNoItem, ino: root},
				{code: EntryNoRef, ino: root},
			}
		}},
		{"dir item under a wrong hash", func(s *surgeon) []want {
			k := dirItemKey(root, "mid")
			to := k
			to.Offset++
			s.move(fsT, k, to)
			return []want{{code: DirItemHash, ino: root}}
		}},
		{"entry type differs from the inode", func(s *surgeon) []want {
			idx, e := s.entry(root, "small")
			e.Type = format.FileTypeSymlink
			s.put(fsT, format.Key{ObjectID: root, Type: format.DirIndexKey, Offset: idx}, format.MarshalDirEntry(e))
			s.put(fsT, dirItemKey(root, "small"), format.MarshalDirEntries([]format.DirEntry{e}))
			return []want{{code: EntryType, ino: root}}
		}},
		{"dir index and dir item disagree", func(s *surgeon) []want {
			idx, e := s.entry(root, "small")
			e.Type = format.FileTypeFIFO
			s.put(fsT, format.Key{ObjectID: root, Type: format.DirIndexKey, Offset: idx}, format.MarshalDirEntry(e))
			return []want{
				{code: EntryMismatch, ino: root},
				{code: EntryType, ino: root},
			}
		}},
		{"dangling entry", func(s *surgeon) []want {
			s.link(root, "ghost", 90000, format.FileTypeRegular)
			s.del(fsT, format.Key{ObjectID: 90000, Type: format.InodeRefKey, Offset: root})
			return []want{{code: EntryDangling, ino: root}}
		}},
		{"directory with two names", func(s *surgeon) []want {
			sub := s.ino("/dir/sub")
			s.link(root, "sub2", sub, format.FileTypeDir)
			s.inode(root, func(in *format.InodeItem) { in.Nlink++ })
			return []want{{code: DirNames, ino: sub}}
		}},
		{"directory loop", func(s *surgeon) []want {
			la, lb := s.ino("/la"), s.ino("/la/lb")
			s.unlink(root, "la")
			s.inode(root, func(in *format.InodeItem) { in.Nlink-- })
			s.link(lb, "la", la, format.FileTypeDir)
			s.inode(lb, func(in *format.InodeItem) { in.Nlink++ })
			return []want{{code: DirLoop, ino: min(la, lb)}}
		}},
		{"entries in a file", func(s *surgeon) []want {
			// /small's second name is in /mid, a file: the name goes.
			mid, small := s.ino("/mid"), s.ino("/small")
			s.link(mid, "x", small, format.FileTypeRegular)
			s.inode(small, func(in *format.InodeItem) { in.Nlink++ })
			return []want{{code: NotDirEntries, ino: mid}}
		}},
		{"a directory entry naming its directory", func(s *surgeon) []want {
			la := s.ino("/la")
			s.link(la, "me", la, format.FileTypeDir)
			return []want{{code: DirEntrySelf, ino: la}, {code: RefSelfParent, ino: la}, {code: DirNames, ino: la}, {code: DirNlink, ino: la}}
		}},
	}
}

// nameAtIndex1 moves the root's entry name, and the one INODE_REF of its
// inode, to DIR_INDEX 1.
func nameAtIndex1(s *surgeon, name string) {
	root, fsT := format.RootDirIno, format.FSTree
	ino := s.ino("/" + name)
	idx, _ := s.entry(root, name)
	s.move(fsT, dirIndexKey(root, idx), dirIndexKey(root, 1))
	s.put(fsT, inodeRefKey(ino, root), format.MarshalInodeRefs([]format.InodeRef{{Index: 1, Name: name}}))
}
