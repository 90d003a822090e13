package check

import (
	"encoding/binary"
	"syscall"
	"testing"

	"github.com/ddfs/ddfs/format"
)

// TestFSSurgery damages one thing at a time and requires exactly the
// problems it causes.
func TestFSSurgery(t *testing.T) {
	f, base := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	populate(t, f)
	if rep := fsckDevs(t, base, Options{}); !rep.Clean() {
		t.Fatalf("base image: %v", rep.Problems)
	}
	for _, tc := range surgeryCases() {
		t.Run(tc.name, func(t *testing.T) {
			s := newSurgeon(t, base)
			wants := tc.damage(s)
			expect(t, s.check(Options{}), wants...)
		})
	}
}

// surgeryCase damages one thing in a populated image and returns the
// problems that causes.
type surgeryCase struct {
	name   string
	damage func(s *surgeon) []want
}

func surgeryCases() []surgeryCase {
	const root = format.RootDirIno
	fsT, extT, csT := format.FSTree, format.ExtentTree, format.CsumTree
	ss := uint64(4096)
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
		{"inode ref deleted", func(s *surgeon) []want {
			small := s.ino("/small")
			s.del(fsT, format.Key{ObjectID: small, Type: format.InodeRefKey, Offset: root})
			return []want{
				{code: Orphan, ino: small},
				{code: EntryNoRef, ino: root},
			}
		}},
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
		{"symlink target starts with a NUL", func(s *surgeon) []want {
			link := s.ino("/link")
			s.firstExtent(link, func(x *format.FileExtentItem) { x.Inline[0] = 0 })
			return []want{{code: SymlinkTarget, ino: link}}
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
		{"missing inode item", func(s *surgeon) []want {
			mid := s.ino("/mid")
			s.del(fsT, inodeKey(mid))
			return []want{
				{code: InodeMissing, ino: mid},
				{code: EntryDangling, ino: root},
			}
		}},
		{"missing inode item of an inline file", func(s *surgeon) []want {
			small := s.ino("/small")
			s.del(fsT, inodeKey(small))
			return []want{
				{code: InodeMissing, ino: small},
				{code: EntryDangling, ino: root},
			}
		}},
		{"missing inode item of a sparse file", func(s *surgeon) []want {
			sparse := s.ino("/sparse")
			s.del(fsT, inodeKey(sparse))
			return []want{
				{code: InodeMissing, ino: sparse},
				{code: EntryDangling, ino: root},
			}
		}},
		{"missing root", func(s *surgeon) []want {
			s.del(fsT, inodeKey(root))
			return []want{
				{code: RootMissing, ino: root},
				{code: InodeMissing, ino: root},
			}
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
		{"inode ref renamed", func(s *surgeon) []want {
			// The INODE_REF's name alone changes: its fingerprint must
			// hold the name, or it balances the DIR_INDEX.
			small := s.ino("/small")
			k := format.Key{ObjectID: small, Type: format.InodeRefKey, Offset: root}
			refs, err := format.UnmarshalInodeRefs(s.get(fsT, k))
			must(s.t, err)
			refs[0].Name = "smalm"
			s.put(fsT, k, format.MarshalInodeRefs(refs))
			return []want{
				{code: RefIndexOther, ino: small},
				{code: EntryNoRef, ino: root},
			}
		}},
		{"inode ref index changed", func(s *surgeon) []want {
			// The INODE_REF's index alone changes: its fingerprint must
			// hold the index, or it balances the DIR_INDEX.
			small := s.ino("/small")
			k := format.Key{ObjectID: small, Type: format.InodeRefKey, Offset: root}
			refs, err := format.UnmarshalInodeRefs(s.get(fsT, k))
			must(s.t, err)
			refs[0].Index += 1000
			s.put(fsT, k, format.MarshalInodeRefs(refs))
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
		{"name at DIR_INDEX 1", func(s *surgeon) []want {
			// Indexes start at 2: -y moves the name to a new index, and
			// /small keeps its path (TestRepairSurgery).
			small := s.ino("/small")
			idx, _ := s.entry(root, "small")
			s.move(fsT, format.Key{ObjectID: root, Type: format.DirIndexKey, Offset: idx}, format.Key{ObjectID: root, Type: format.DirIndexKey, Offset: 1})
			rk := format.Key{ObjectID: small, Type: format.InodeRefKey, Offset: root}
			s.put(fsT, rk, format.MarshalInodeRefs([]format.InodeRef{{Index: 1, Name: "small"}}))
			return []want{{code: DirIndexRange, ino: root}}
		}},
		{"directory name at DIR_INDEX 1", func(s *surgeon) []want {
			// As above for a directory: its one INODE_REF, which names
			// the index, moves with the name.
			dir := s.ino("/dir")
			idx, _ := s.entry(root, "dir")
			s.move(fsT, format.Key{ObjectID: root, Type: format.DirIndexKey, Offset: idx}, format.Key{ObjectID: root, Type: format.DirIndexKey, Offset: 1})
			rk := format.Key{ObjectID: dir, Type: format.InodeRefKey, Offset: root}
			s.put(fsT, rk, format.MarshalInodeRefs([]format.InodeRef{{Index: 1, Name: "dir"}}))
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
		{"prop item", func(s *surgeon) []want {
			mid := s.ino("/mid")
			s.put(fsT, format.Key{ObjectID: mid, Type: format.PropItemKey, Offset: 1}, []byte("x"))
			return []want{{code: PropItem, ino: mid}}
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
		{"an item of an unknown type", func(s *surgeon) []want {
			mid := s.ino("/mid")
			s.put(fsT, format.Key{ObjectID: mid, Type: 200, Offset: 1}, []byte("x"))
			return []want{{code: FSItemType, ino: mid}}
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
		{"file extent missing", func(s *surgeon) []want {
			mid := s.ino("/mid")
			l, _ := s.diskExtent(mid)
			s.del(fsT, format.Key{ObjectID: mid, Type: format.FileExtentKey})
			return []want{
				{code: ExtentUnreferenced, logical: l},
				{code: NBytes, ino: mid},
			}
		}},
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
