package check

import (
	"syscall"

	"github.com/ddfs/ddfs/format"
)

// inodeSurgery damages INODE_ITEMs and what an inode adds up to
// (fs_inode.go).
func inodeSurgery() []surgeryCase {
	const root = format.RootDirIno
	fsT := format.FSTree
	return []surgeryCase{
		{"nlink bumped", func(s *surgeon) []want {
			big := s.ino("/big")
			s.inode(big, func(in *format.InodeItem) { in.Nlink++ })
			return []want{{code: Nlink, ino: big, path: "/big"}}
		}},
		{"nlink of a directory", func(s *surgeon) []want {
			dir := s.ino("/dir")
			s.inode(dir, func(in *format.InodeItem) { in.Nlink = 2 })
			return []want{{code: DirNlink, ino: dir}}
		}},
		{"directory size", func(s *surgeon) []want {
			dir := s.ino("/dir/sub")
			s.inode(dir, func(in *format.InodeItem) { in.Size = 7 })
			return []want{{code: DirSize, ino: dir, path: "/dir/sub"}}
		}},
		{"device number on a regular file", func(s *surgeon) []want {
			small := s.ino("/small")
			s.inode(small, func(in *format.InodeItem) { in.Rdev = 0x0103 })
			return []want{{code: Rdev, ino: small}}
		}},
		{"orphan inode", func(s *surgeon) []want {
			in := &format.InodeItem{Mode: syscall.S_IFREG | 0o644, Nlink: 1, Generation: 1}
			s.put(fsT, inodeKey(50000), format.MarshalInodeItem(in))
			return []want{{code: Orphan, ino: 50000}}
		}},
		{"undecodable inode item", func(s *surgeon) []want {
			mid := s.ino("/mid")
			s.put(fsT, inodeKey(mid), make([]byte, 100))
			return []want{{code: FSItemBad, ino: mid}}
		}},
		// Of files with data extents, inline data and holes: the same
		// problems, and -y keeps each file's data (TestRepairSurgery).
		missingInode("missing inode item", "/mid"),
		missingInode("missing inode item of an inline file", "/small"),
		missingInode("missing inode item of a sparse file", "/sparse"),
		{"missing root", func(s *surgeon) []want {
			s.del(fsT, inodeKey(root))
			return []want{
				{code: RootMissing, ino: root},
				{code: InodeMissing, ino: root},
			}
		}},
		{"directory seq below 2", func(s *surgeon) []want {
			la := s.ino("/la")
			s.inode(la, func(in *format.InodeItem) { in.Seq = 0 })
			return []want{{code: DirSeq, ino: la}, {code: DirIndexRange, ino: la}}
		}},
		{"inode item key offset", func(s *surgeon) []want {
			mid := s.ino("/mid")
			s.move(fsT, inodeKey(mid), format.Key{ObjectID: mid, Type: format.InodeItemKey, Offset: 5})
			return []want{{code: InodeKeyOffset, ino: mid}}
		}},
	}
}

// missingInode deletes the inode item of the file at p, whose one name is
// in the root.
func missingInode(name, p string) surgeryCase {
	return surgeryCase{name, func(s *surgeon) []want {
		ino := s.ino(p)
		s.del(format.FSTree, inodeKey(ino))
		return []want{
			{code: InodeMissing, ino: ino},
			{code: EntryDangling, ino: format.RootDirIno},
		}
	}}
}
