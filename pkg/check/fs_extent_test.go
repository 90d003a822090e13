package check

import (
	"encoding/binary"
	"github.com/ddfs/ddfs/format"
)

// extentSurgery damages EXTENT_DATA items (fs_extent.go), a symlink's
// target among them.
func extentSurgery() []surgeryCase {
	fsT := format.FSTree
	return []surgeryCase{
		{"symlink target empty", func(s *surgeon) []want {
			link := s.ino("/link")
			s.del(fsT, format.Key{ObjectID: link, Type: format.FileExtentKey})
			s.inode(link, func(in *format.InodeItem) { in.Size, in.NBytes = 0, 0 })
			return []want{{code: SymlinkTarget, ino: link}}
		}},
		{"symlink target holds a NUL", func(s *surgeon) []want {
			link := s.ino("/link")
			s.firstExtent(link, func(x *format.FileExtentItem) { x.Inline[3] = 0 })
			return []want{{code: SymlinkTarget, ino: link}}
		}},
		{"symlink size past its inline target", func(s *surgeon) []want {
			link := s.ino("/link")
			s.inode(link, func(in *format.InodeItem) { in.Size += 5 })
			return []want{{code: SymlinkTarget, ino: link}}
		}},
		{"symlink target with a hole", func(s *surgeon) []want {
			long := s.ino("/longlink")
			s.inode(long, func(in *format.InodeItem) { in.Size = format.MaxSymlinkTarget })
			return []want{{code: SymlinkTarget, ino: long}}
		}},
		{"symlink target preallocated", func(s *surgeon) []want {
			long := s.ino("/longlink")
			s.firstExtent(long, func(x *format.FileExtentItem) { x.Type = format.FileExtentPrealloc })
			return []want{{code: SymlinkTarget, ino: long}}
		}},
		{"symlink target a hole", func(s *surgeon) []want {
			link := s.ino("/link")
			hole := &format.FileExtentItem{Type: format.FileExtentRegular, NumBytes: 7, RAMBytes: 7}
			s.put(fsT, format.Key{ObjectID: link, Type: format.FileExtentKey}, format.MarshalFileExtentItem(hole))
			s.inode(link, func(in *format.InodeItem) { in.NBytes = 0 })
			return []want{{code: SymlinkTarget, ino: link}}
		}},
		{"symlink target after a hole", func(s *surgeon) []want {
			long := s.ino("/longlink")
			s.move(fsT, format.Key{ObjectID: long, Type: format.FileExtentKey}, format.Key{ObjectID: long, Type: format.FileExtentKey, Offset: 1000})
			s.inode(long, func(in *format.InodeItem) { in.Size = 4000 })
			return []want{{code: SymlinkTarget, ino: long}}
		}},
		{"symlink target starts with a NUL", func(s *surgeon) []want {
			link := s.ino("/link")
			s.firstExtent(link, func(x *format.FileExtentItem) { x.Inline[0] = 0 })
			return []want{{code: SymlinkTarget, ino: link}}
		}},
		{"size below the extents", func(s *surgeon) []want {
			big := s.ino("/big")
			s.inode(big, func(in *format.InodeItem) { in.Size = 4000 })
			return []want{{code: ExtentBeyondSize, ino: big}}
		}},
		{"nbytes", func(s *surgeon) []want {
			mid := s.ino("/mid")
			s.inode(mid, func(in *format.InodeItem) { in.NBytes = 1 })
			return []want{{code: NBytes, ino: mid}}
		}},
		{"overlapping extents", func(s *surgeon) []want {
			big := s.ino("/big")
			hole := &format.FileExtentItem{Type: format.FileExtentRegular, NumBytes: 4096, RAMBytes: 4096}
			s.put(fsT, format.Key{ObjectID: big, Type: format.FileExtentKey, Offset: 1}, format.MarshalFileExtentItem(hole))
			return []want{{code: FileExtentOvlp, ino: big}}
		}},
		{"inline followed by an extent", func(s *surgeon) []want {
			small := s.ino("/small")
			hole := &format.FileExtentItem{Type: format.FileExtentRegular, NumBytes: 100, RAMBytes: 100}
			s.put(fsT, format.Key{ObjectID: small, Type: format.FileExtentKey, Offset: 100}, format.MarshalFileExtentItem(hole))
			return []want{{code: InlineNotOnly, ino: small}}
		}},
		{"inline not at offset 0", func(s *surgeon) []want {
			small := s.ino("/small")
			s.move(fsT, format.Key{ObjectID: small, Type: format.FileExtentKey}, format.Key{ObjectID: small, Type: format.FileExtentKey, Offset: 8})
			return []want{{code: InlineOffset, ino: small}}
		}},
		{"extents on a fifo", func(s *surgeon) []want {
			fifo := s.ino("/fifo")
			hole := &format.FileExtentItem{Type: format.FileExtentRegular, NumBytes: 10, RAMBytes: 10}
			s.put(fsT, format.Key{ObjectID: fifo, Type: format.FileExtentKey}, format.MarshalFileExtentItem(hole))
			return []want{
				{code: NotFileExtents, ino: fifo},
				{code: ExtentBeyondSize, ino: fifo},
			}
		}},
		{"a data extent overlapping the previous", func(s *surgeon) []want {
			// /big's last extent starts 4 KiB early: -y cuts the head
			// again, every byte stays.
			big := s.ino("/big")
			ext := s.extents(big)
			last := ext[len(ext)-1]
			x, err := format.UnmarshalFileExtentItem(last.Data)
			must(s.t, err)
			x.Offset -= 4096
			x.NumBytes += 4096
			s.del(fsT, last.Key)
			k := last.Key
			k.Offset -= 4096
			s.put(fsT, k, format.MarshalFileExtentItem(x))
			return []want{{code: FileExtentOvlp, ino: big}, {code: NBytes, ino: big}}
		}},
		{"a data extent after an inline one", func(s *surgeon) []want {
			// /mid's extent also in /small: dropped again, and its
			// reference with it.
			small, mid := s.ino("/small"), s.ino("/mid")
			l, _ := s.diskExtent(mid)
			s.put(fsT, format.Key{ObjectID: small, Type: format.FileExtentKey, Offset: 4096}, s.extents(mid)[0].Data)
			return []want{{code: InlineNotOnly, ino: small}, {code: NBytes, ino: small}, {code: ExtentRefs, logical: l}, {code: ExtentBeyondSize, ino: small}}
		}},
		{"an extent past the offset space", func(s *surgeon) []want {
			mid := s.ino("/mid")
			hole := &format.FileExtentItem{Type: format.FileExtentRegular, NumBytes: 8192, RAMBytes: 8192}
			s.put(fsT, format.Key{ObjectID: mid, Type: format.FileExtentKey, Offset: 1<<64 - 4096}, format.MarshalFileExtentItem(hole))
			return []want{{code: FileExtentWraps, ino: mid}, {code: ExtentBeyondSize, ino: mid}}
		}},
		{"an extent past the largest file", func(s *surgeon) []want {
			mid := s.ino("/mid")
			hole := &format.FileExtentItem{Type: format.FileExtentRegular, NumBytes: 8192, RAMBytes: 8192}
			s.put(fsT, format.Key{ObjectID: mid, Type: format.FileExtentKey, Offset: format.MaxFileSize - 4096}, format.MarshalFileExtentItem(hole))
			return []want{{code: FileExtentTooBig, ino: mid}, {code: ExtentBeyondSize, ino: mid}}
		}},
		{"extent beyond its decompressed bytes", func(s *surgeon) []want {
			mid := s.ino("/mid")
			l, _ := s.diskExtent(mid)
			k := format.Key{ObjectID: mid, Type: format.FileExtentKey}
			b := s.get(fsT, k)
			binary.LittleEndian.PutUint64(b[32:], 4096) // offset: 4096 + 8192 > ram_bytes
			s.put(fsT, k, b)
			return []want{
				{code: FSItemBad, ino: mid},
				{code: ExtentUnreferenced, logical: l},
			}
		}},
		{"extent of partial sectors", func(s *surgeon) []want {
			mid := s.ino("/mid")
			l, _ := s.diskExtent(mid)
			k := format.Key{ObjectID: mid, Type: format.FileExtentKey}
			x, err := format.UnmarshalFileExtentItem(s.get(fsT, k))
			must(s.t, err)
			x.DiskLen, x.RAMBytes = 8000, 8000
			x.NumBytes = 8000
			s.put(fsT, k, format.MarshalFileExtentItem(x))
			s.inode(mid, func(in *format.InodeItem) { in.NBytes = 8000 })
			return []want{
				{code: FileExtentAlign, ino: mid},
				{code: FileExtentNoItem, ino: mid, logical: l},
				{code: ExtentUnreferenced, logical: l},
			}
		}},
		{"file extent missing", func(s *surgeon) []want {
			mid := s.ino("/mid")
			l, _ := s.diskExtent(mid)
			s.del(fsT, format.Key{ObjectID: mid, Type: format.FileExtentKey})
			return []want{
				{code: ExtentUnreferenced, logical: l},
				{code: NBytes, ino: mid},
			}
		}},
	}
}
