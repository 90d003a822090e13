package check

// The filesystem pass (FORMAT.md §5, §6): the namespace and file data of
// the fs tree against each other, against the data extents of the extent
// tree and against the csum tree.
//
// Memory stays bounded by a few compact maps. The walk hands the fs tree's
// items over in key order, so everything one inode owns (its inode item,
// names, xattrs, directory entries, file extents) arrives together and is
// checked when the next inode starts; only these survive an inode:
//
//   - names: per child inode, the balance of the DIR_INDEX entries naming
//     it (+1 and a fingerprint of parent, index, name and type) and its
//     own INODE_REF names (−1 and the same fingerprint with the child's
//     real type). An entry is dropped when it balances, so only names
//     whose two halves are still apart in the stream are held.
//   - dirParent: the parent of every directory, for the loop check.
//   - refs: per data extent, the file extent items that point at it.
//   - csums: the logical span of every csum item.
//
// A directory's DIR_ITEM and DIR_INDEX entries are compared by a
// fingerprint too. When a fingerprint does not balance, a second pass
// re-reads the fs tree and looks every name of the directories and inodes
// concerned up in its counterparts, so the report names the exact entry.

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sort"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
)

// fsState is what the filesystem pass gathers during the walk.
type fsState struct {
	started bool
	cur     inodeState
	names   balances        // child ino -> DIR_INDEX entries minus INODE_REF names
	dirFlag map[uint64]bool // directories whose DIR_ITEM and DIR_INDEX entries disagree
	// dirParent maps each directory with exactly one name to its parent.
	dirParent map[uint64]uint64
	rootSeen  bool
	extents   bigList[dataExtent] // data EXTENT_ITEMs, in walk (key) order
	// uses[i] counts the file extent items pointing at extents[i]
	// (refs.go); missing those pointing at no extent item.
	uses     bigList[extentUse]
	missing  map[extentID]*missingUse
	mismatch map[extentID]*readAs // the file extents that read an extent differently
	unsorted bool                 // extents is not strictly increasing: find by index
	index    map[extentID]int     // extents by id, when unsorted
	cursor   int                  // the extent found last
	csums    bigList[span]        // logical ranges of the csum items
	need     bigList[span]        // data extents that need checksums, when unsorted
	all      bigList[span]        // every data extent, when unsorted
	union    bigList[span]        // checkCsums' scratch
	lastCsum uint64               // end of the previous csum item
	// extentLost: a file extent item did not decode, so the reference
	// counts miss what it points at (their problems get no fix).
	extentLost bool
}

// inodeState is what the items of the current inode add up to.
type inodeState struct {
	ino        uint64
	items      int               // items of this inode seen
	orphaned   int               // items seen without an inode item before them
	hasItem    bool              // an INODE_ITEM key was seen (it may not decode)
	item       *format.InodeItem // the decoded inode item, nil if absent or bad
	itemBuf    format.InodeItem  // where item points
	names      uint32            // names in INODE_REF items
	parent     uint64            // parent directory of the last name
	entries    uint64            // DIR_INDEX items
	subdirs    uint64            // DIR_INDEX entries of type directory
	dir        balance           // DIR_ITEM entries minus DIR_INDEX entries
	nbytes     uint64            // num_bytes of non-hole extents plus inline lengths
	extEnd     uint64            // end of the previous file extent
	extents    int               // EXTENT_DATA items
	inline     bool              // the first extent is inline
	notDir     bool              // "has directory entries" already reported
	notFile    bool              // "has file extents" already reported
	extentLost bool              // an extent did not decode: nbytes is unknown
	linkData   uint64            // symlink: end of the data extents covering [0, linkData)
	linkNUL    bool              // symlink: an inline target holds a NUL byte
}

// balance is a multiset difference: a count and a sum of fingerprints.
type balance struct {
	n int64
	h uint64
}

func (b balance) zero() bool { return b.n == 0 && b.h == 0 }

type span struct{ start, end uint64 }

type extentID struct{ logical, length uint64 }

// dataExtent is a data EXTENT_ITEM as the check keeps it, 32 bytes a data
// extent (the decoder bounds length and ram by format.MaxExtentBytes).
type dataExtent struct {
	logical     uint64
	refs        uint64
	length, ram uint32
	compression format.Compression
}

func (e *dataExtent) id() extentID { return extentID{e.logical, uint64(e.length)} }
func (e *dataExtent) end() uint64  { return e.logical + uint64(e.length) }

// extentUse counts the file extent items pointing at one data extent
// (8 bytes: with the extent's own 32, what fsck holds per data extent;
// 4M small files fit in 256 MiB). Each item is compared with the extent
// item when it arrives, so no item's view is kept: the first that reads
// the extent otherwise is named in fsState.mismatch. No pointers: the
// list is in big memory (bigmem.go).
type extentUse struct {
	n        uint32 // items (saturates: more cannot fit in an fs tree fsck walks)
	mismatch bool   // an item reads the extent otherwise than its extent item
	matched  bool   // an item reads the extent as its extent item says
	regular  bool   // at least one regular (not prealloc) item: needs checksums
}

// missingUse counts the file extent items pointing at an extent that has
// no extent item, and the first of them for the message; its view of the
// extent (compression, decompressed size) is what a rebuilt item records.
type missingUse struct {
	n, ino, off uint64
	ram         uint64
	compression format.Compression
}

func (s *fsState) init() {
	if s.dirFlag == nil {
		s.dirFlag = map[uint64]bool{}
		s.dirParent = map[uint64]uint64{}
	}
}

// fsProblem reports a problem of the namespace or file contents of inode
// ino (0: none).
func (c *checker) fsProblem(code Code, ino uint64, msg string, args ...any) {
	c.fsFix(code, ino, nil, msg, args...)
}

// fsFix is fsProblem with what a repair needs.
func (c *checker) fsFix(code Code, ino uint64, f *fixData, msg string, args ...any) {
	c.add(Problem{Code: code, Tree: format.FSTree.String(), Ino: ino, Message: fmt.Sprintf(msg, args...), fix: f})
}

// nameMark is the fingerprint of one name of child in parent, the name
// given by its hash (format.NameHash: computed once per name, and a
// DIR_ITEM's check needs it anyway); DIR_INDEX entries use the entry's
// type, INODE_REFs the child's real type.
func nameMark(parent, child, index, nameHash uint64, t format.FileType) uint64 {
	return mark(parent, child, index, nameHash, t)
}

// entryMark is the fingerprint of a directory entry (DIR_ITEM or
// DIR_INDEX), its name given by its hash.
func entryMark(child uint64, t format.FileType, nameHash uint64) uint64 {
	return mark(0, child, 0, nameHash, t)
}

// mark folds the fields of a name into a fingerprint: each field times
// its own odd constant (so a change of any one field changes the sum),
// then murmur3's 64-bit finalizer, which makes every bit depend on every
// input bit, so that the balances' sums do not cancel by structure. It
// inlines: xxhash of the same bytes was ~8% of a check of small files.
func mark(a, b, c, nameHash uint64, t format.FileType) uint64 {
	h := nameHash ^ a*0x9e3779b97f4a7c15 ^ b*0xc2b2ae3d27d4eb4f ^ c*0x165667b19e3779f9 ^ uint64(t)*0xd6e8feb86659fd93
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

func (in *inodeState) fileType() format.FileType {
	if in.item == nil {
		return 0
	}
	return in.item.FileType()
}

// fsItem takes one item of the fs tree, in key order (called by item()).
func (c *checker) fsItem(it format.Item) {
	s := &c.fs
	s.init()
	k := it.Key
	if !s.started || k.ObjectID != s.cur.ino {
		if s.started {
			c.finishInode()
		}
		s.started = true
		s.cur = inodeState{ino: k.ObjectID}
	}
	cur := &s.cur
	cur.items++
	if k.ObjectID < format.RootDirIno {
		c.counted.Add(format.ItemCounters(format.FSTree, k, it.Data))
		if cur.items == 1 {
			c.fsProblem(InoReserved, 0, "item %v: object id %d is reserved (inodes start at %d)", k, k.ObjectID, format.RootDirIno)
		}
		return
	}
	if k.Type != format.InodeItemKey && !cur.hasItem {
		cur.orphaned++
	}
	bad := func(err error) {
		c.fsFix(FSItemBad, cur.ino, &fixData{key: k}, "item %v: %s", k, errString(err))
	}
	switch k.Type {
	case format.InodeItemKey:
		cur.hasItem = true
		if cur.ino == format.RootDirIno {
			s.rootSeen = true
		}
		var dec format.InodeItem
		if err := format.DecodeInodeItem(it.Data, &dec); err != nil {
			bad(err)
			return
		}
		if k.Offset != 0 {
			c.fsFix(InodeKeyOffset, cur.ino, &fixData{key: k}, "inode item key offset %d, want 0", k.Offset)
		}
		// A second inode item (another key offset) replaces the first, as
		// a pointer to a fresh decode would; in stays the same place.
		cur.itemBuf = dec
		in := &cur.itemBuf
		cur.item = in
		if cur.ino == format.RootDirIno && in.FileType() != format.FileTypeDir {
			c.fsProblem(RootNotDir, cur.ino, "the root directory is a %v", in.FileType())
		}
	case format.InodeRefKey:
		// fn runs only on a valid item, so the item is walked once.
		parent := k.Offset
		if err := format.EachInodeRef(it.Data, func(r format.InodeRefView) {
			cur.names++
			cur.parent = parent
			s.names.add(cur.ino, nameMark(parent, cur.ino, r.Index, format.NameHash(r.Name), cur.fileType()), -1)
		}); err != nil {
			bad(err)
			return
		}
		if cur.ino == format.RootDirIno {
			c.fsProblem(RootHasName, cur.ino, "the root directory has a name in directory %d", parent)
		}
		if parent == cur.ino {
			c.fsFix(RefSelfParent, cur.ino, &fixData{}, "INODE_REF names the inode as its own parent")
		}
	case format.XattrItemKey:
		xs, err := format.UnmarshalXattrs(it.Data)
		if err != nil {
			bad(err)
			return
		}
		for _, x := range xs {
			if h := format.NameHash([]byte(x.Name)); h != k.Offset {
				c.fsFix(XattrHash, cur.ino, &fixData{key: k, name: x.Name}, "xattr %q is under key offset %#x, its name hash is %#x", x.Name, k.Offset, h)
			}
		}
	case format.DirItemKey:
		// fn runs only on a valid item, so the item is walked once;
		// dirEntries reports once, before the entries' problems.
		if err := format.EachDirEntry(it.Data, func(e format.DirEntryView) {
			c.dirEntries(cur)
			h := format.NameHash(e.Name)
			if h != k.Offset {
				c.fsFix(DirItemHash, cur.ino, &fixData{key: k, name: string(e.Name), want: e.Ino}, "DIR_ITEM entry %q is under key offset %#x, its name hash is %#x", e.Name, k.Offset, h)
			}
			cur.dir.n++
			cur.dir.h += entryMark(e.Ino, e.Type, h)
		}); err != nil {
			bad(err)
			return
		}
	case format.DirIndexKey:
		e, err := format.UnmarshalDirEntryView(it.Data)
		if err != nil {
			bad(err)
			return
		}
		c.dirEntries(cur)
		idx := k.Offset
		if in := cur.item; in != nil && in.FileType() == format.FileTypeDir && (idx < 2 || idx >= in.Seq) {
			c.fsFix(DirIndexRange, cur.ino, &fixData{dir: cur.ino, index: idx}, "DIR_INDEX %d (%q) is outside [2, seq %d)", idx, e.Name, in.Seq)
		}
		if e.Ino == cur.ino {
			c.fsFix(DirEntrySelf, cur.ino, &fixData{dir: cur.ino, index: idx}, "directory entry %q names the directory itself", e.Name)
		}
		cur.entries++
		if e.Type == format.FileTypeDir {
			cur.subdirs++
		}
		cur.dir.n--
		h := format.NameHash(e.Name)
		cur.dir.h -= entryMark(e.Ino, e.Type, h)
		s.names.add(e.Ino, nameMark(cur.ino, e.Ino, idx, h, e.Type), +1)
	case format.FileExtentKey:
		var x format.FileExtentItem
		if err := format.DecodeFileExtentItem(it.Data, &x); err != nil {
			cur.extentLost = true
			s.extentLost = true
			bad(err)
			return
		}
		c.counted.Add(format.FileExtentCounters(&x))
		c.fileExtent(cur, k.Offset, &x)
	case format.PropItemKey:
		c.fsFix(PropItem, cur.ino, &fixData{key: k}, "PROP_ITEM %v (reserved: version 1 writes none)", k)
	default:
		c.fsFix(FSItemType, cur.ino, &fixData{key: k}, "item %v of a type the fs tree does not hold", k)
	}
}

// dirEntries reports directory entries of an inode that is no directory.
func (c *checker) dirEntries(cur *inodeState) {
	if t := cur.fileType(); t != 0 && t != format.FileTypeDir && !cur.notDir {
		cur.notDir = true
		c.fsFix(NotDirEntries, cur.ino, &fixData{}, "a %v has directory entries", t)
	}
}

// fileExtent checks one EXTENT_DATA item against the inode's others and
// counts its data extent reference.
func (c *checker) fileExtent(cur *inodeState, off uint64, x *format.FileExtentItem) {
	s := &c.fs
	key := format.Key{ObjectID: cur.ino, Type: format.FileExtentKey, Offset: off}
	prevEnd := cur.extEnd
	// Made only for a problem: this runs for every file extent.
	at := func() *fixData { return &fixData{key: key, want: prevEnd} }
	ss := uint64(c.sb.SectorSize)
	t := cur.fileType()
	if t != 0 && t != format.FileTypeRegular && t != format.FileTypeSymlink && !cur.notFile {
		cur.notFile = true
		c.fsFix(NotFileExtents, cur.ino, &fixData{}, "a %v has file extents", t)
	}
	n := x.Len()
	end := off + n
	switch {
	case end < off:
		c.fsFix(FileExtentWraps, cur.ino, at(), "extent at %d of %d bytes passes the end of the offset space", off, n)
	case format.CheckFileExtentRange(off, x) != nil:
		c.fsFix(FileExtentTooBig, cur.ino, at(), "extent at %d of %d bytes passes the largest file size %d", off, n, uint64(format.MaxFileSize))
	case cur.extents > 0 && off < cur.extEnd:
		c.fsFix(FileExtentOvlp, cur.ino, at(), "extent at %d overlaps the previous extent, which ends at %d", off, cur.extEnd)
	}
	if cur.inline && cur.extents > 0 {
		c.fsFix(InlineNotOnly, cur.ino, at(), "extent at %d follows an inline extent (inline must be the only extent)", off)
	}
	if x.Type == format.FileExtentInline {
		if off != 0 {
			c.fsFix(InlineOffset, cur.ino, at(), "inline extent at %d (inline extents live at offset 0 only)", off)
		} else if cur.extents == 0 {
			cur.inline = true
		}
	}
	if in := cur.item; in != nil {
		if limit := (in.Size + ss - 1) / ss * ss; off >= limit {
			c.fsFix(ExtentBeyondSize, cur.ino, &fixData{want: end, key: key}, "extent at %d lies wholly beyond the size %d", off, in.Size)
		}
	}
	if x.Compression != format.CompressNone && c.sb.Incompat&format.IncompatCompression == 0 {
		c.fsProblem(CompressFeature, cur.ino, "extent at %d is compressed (%v) but the compression feature is not enabled", off, x.Compression)
	}
	cur.extents++
	cur.extEnd = max(cur.extEnd, end)
	if t == format.FileTypeSymlink {
		symlinkExtent(cur, off, end, x)
	}
	if x.Type == format.FileExtentInline {
		cur.nbytes += n
		return
	}
	if x.DiskLogical == 0 {
		return // a hole
	}
	cur.nbytes += n
	if x.DiskLogical%ss != 0 || x.DiskLen%ss != 0 {
		c.fsProblem(FileExtentAlign, cur.ino, "extent at %d points at %d+%d, not whole sectors of %d bytes", off, x.DiskLogical, x.DiskLen, ss)
	}
	s.use(extentID{x.DiskLogical, x.DiskLen}, cur.ino, off, x)
}

// symlinkExtent notes what extent [off, end) adds to a symlink's target:
// data from where the covered part ends (holes and prealloc are none), and
// a NUL in inline bytes (a target larger than the inline limit is read,
// and refused, by the readers).
func symlinkExtent(cur *inodeState, off, end uint64, x *format.FileExtentItem) {
	if off == cur.linkData && x.Type != format.FileExtentPrealloc && !x.IsHole() {
		cur.linkData = end
	}
	if x.Type == format.FileExtentInline && bytes.IndexByte(x.Inline, 0) >= 0 {
		cur.linkNUL = true
	}
}

// finishInode checks what the items of the inode add up to.
func (c *checker) finishInode() {
	s := &c.fs
	cur := &s.cur
	if cur.ino < format.RootDirIno {
		return
	}
	if !cur.dir.zero() {
		s.dirFlag[cur.ino] = true
	}
	if !cur.hasItem {
		c.fsFix(InodeMissing, cur.ino, &fixData{}, "%d items but no inode item", cur.orphaned)
		return
	}
	in := cur.item
	if in == nil {
		return // the inode item did not decode (reported)
	}
	t := in.FileType()
	isDir := t == format.FileTypeDir
	switch {
	case cur.ino == format.RootDirIno:
		// no name (reported with the INODE_REF otherwise)
	case cur.names == 0:
		c.fsFix(Orphan, cur.ino, &fixData{ftype: t}, "a %v with nlink %d has no name (orphan)", t, in.Nlink)
	case isDir && cur.names > 1:
		c.fsFix(DirNames, cur.ino, &fixData{}, "directory has %d names, want 1", cur.names)
	case !isDir && in.Nlink != cur.names:
		c.fsFix(Nlink, cur.ino, &fixData{want: uint64(cur.names)}, "nlink %d, the inode has %d names", in.Nlink, cur.names)
	}
	if isDir {
		if uint64(in.Nlink) != 2+cur.subdirs {
			c.fsFix(DirNlink, cur.ino, &fixData{want: 2 + cur.subdirs}, "directory nlink %d, want %d (2 + %d subdirectories)", in.Nlink, 2+cur.subdirs, cur.subdirs)
		}
		if in.Size != cur.entries {
			c.fsFix(DirSize, cur.ino, &fixData{want: cur.entries}, "directory size %d, it has %d entries", in.Size, cur.entries)
		}
		if in.Seq < 2 {
			c.fsFix(DirSeq, cur.ino, &fixData{}, "directory seq %d, want >= 2", in.Seq)
		}
		if cur.names == 1 && cur.ino != format.RootDirIno {
			s.dirParent[cur.ino] = cur.parent
		}
	}
	if t != format.FileTypeRegular && t != format.FileTypeSymlink && !isDir && in.Size != 0 {
		c.fsFix(SpecialSize, cur.ino, &fixData{}, "a %v with size %d, want 0", t, in.Size)
	}
	if t == format.FileTypeSymlink && (in.Size == 0 || cur.linkData < in.Size || cur.linkNUL) {
		c.fsProblem(SymlinkTarget, cur.ino, "symlink target of %d bytes: %d of them data from offset 0, NUL %v (want a non-empty target without holes or NUL)", in.Size, min(cur.linkData, in.Size), cur.linkNUL)
	}
	if t != format.FileTypeCharDev && t != format.FileTypeBlockDev && in.Rdev != 0 {
		c.fsFix(Rdev, cur.ino, &fixData{}, "a %v with device number %#x, want 0", t, in.Rdev)
	}
	if in.Flags&^format.KnownInodeFlags != 0 {
		c.fsFix(InodeFlags, cur.ino, &fixData{}, "unknown flags %#x", in.Flags)
	}
	if !cur.extentLost && in.NBytes != cur.nbytes {
		c.fsFix(NBytes, cur.ino, &fixData{want: cur.nbytes}, "nbytes %d, its extents hold %d", in.NBytes, cur.nbytes)
	}
}

// csumItem takes one item of the csum tree (called by item()).
func (c *checker) csumItem(it format.Item) {
	s := &c.fs
	k := it.Key
	ss, cl := uint64(c.sb.SectorSize), uint64(c.sb.CsumType.Len())
	var p Problem // filled in only for a problem: this runs for every csum item
	switch {
	case k.ObjectID != format.CsumObjectID || k.Type != format.CsumItemKey:
		p.Message = fmt.Sprintf("item %v is no checksum item", k)
	case len(it.Data) == 0 || uint64(len(it.Data))%cl != 0:
		p.Message = fmt.Sprintf("checksum item of %d bytes, not a positive multiple of %d", len(it.Data), cl)
	case k.Offset%ss != 0:
		p.Message = fmt.Sprintf("checksum item starts inside a sector of %d bytes", ss)
	case k.Offset+uint64(len(it.Data))/cl*ss < k.Offset:
		p.Message = "checksum item passes the end of the address space"
	}
	at := func(code Code) {
		p.Code, p.Tree, p.Logical, p.fix = code, format.CsumTree.String(), k.Offset, &fixData{key: k}
		c.add(p)
	}
	if p.Message != "" {
		at(CsumItemBad)
		return
	}
	end := k.Offset + uint64(len(it.Data))/cl*ss
	if len(s.csums.list) > 0 && k.Offset < s.lastCsum {
		p.Message = fmt.Sprintf("checksum item overlaps the previous one, which ends at %d", s.lastCsum)
		at(CsumOverlap)
	}
	s.lastCsum = max(s.lastCsum, end)
	// An item that starts where the previous one ends extends its span:
	// writers put one item per extent written (16 bytes a small file).
	if n := len(s.csums.list); n > 0 && s.csums.list[n-1].end == k.Offset {
		s.csums.list[n-1].end = end
	} else {
		s.csums.push(span{k.Offset, end})
	}
	if c.opt.CheckData {
		c.data.verify(c, k.Offset, it.Data)
	}
}

// checkFS finishes the filesystem pass once every tree has been walked.
func (c *checker) checkFS() {
	s := &c.fs
	s.init()
	c.data.finish(c) // the data problems are all in before dataOwners names them
	if s.started {
		c.finishInode()
	}
	if !s.rootSeen {
		c.fsFix(RootMissing, format.RootDirIno, &fixData{}, "the root directory has no inode item")
	}
	c.checkLoops()
	if s.names.len() > 0 || len(s.dirFlag) > 0 {
		c.matchNames()
	}
	c.lostData()
	c.dataOwners()
	c.checkRefs()
	c.checkCsums()
}

// checkLoops reports directories whose parent chain loops instead of
// reaching the root.
func (c *checker) checkLoops() {
	s := &c.fs
	const (
		unknown = iota
		walking
		done
	)
	state := map[uint64]int{}
	dirs := make([]uint64, 0, len(s.dirParent))
	for d := range s.dirParent {
		dirs = append(dirs, d)
	}
	sort.Slice(dirs, func(i, j int) bool { return dirs[i] < dirs[j] })
	var path []uint64
	for _, d := range dirs {
		path = path[:0]
		for x := d; ; {
			if state[x] == done {
				break
			}
			if state[x] == walking {
				var loop []uint64
				for i := len(path) - 1; i >= 0; i-- {
					loop = append(loop, path[i])
					if path[i] == x {
						break
					}
				}
				sort.Slice(loop, func(i, j int) bool { return loop[i] < loop[j] })
				c.fsFix(DirLoop, loop[0], &fixData{}, "directories %v are each other's ancestors, not connected to the root", loop)
				break
			}
			p, ok := s.dirParent[x]
			if !ok {
				break // the root, or a parent reported otherwise
			}
			state[x] = walking
			path = append(path, x)
			x = p
		}
		for _, x := range path {
			state[x] = done
		}
	}
}

// refFix is f, or nil when a file extent item did not decode: then the
// counted references may miss it, and freeing an "unreferenced" extent
// or lowering a count could lose a file's data.
func (s *fsState) refFix(f *fixData) *fixData {
	if s.extentLost {
		return nil
	}
	return f
}

// checkRefs compares every data extent's reference count with the file
// extent items that point at it.
func (c *checker) checkRefs() {
	s := &c.fs
	ss := uint64(c.sb.SectorSize)
	missing := slices.Collect(s.missingSpans())
	for i, e := range s.extents.list {
		p := Problem{Tree: format.ExtentTree.String(), Logical: e.logical}
		if e.logical%ss != 0 || uint64(e.length)%ss != 0 {
			p.Code, p.Message = DataExtentAlign, fmt.Sprintf("data extent of %d bytes is not whole sectors of %d bytes", e.length, ss)
			c.add(p)
		}
		if ch, ok := c.vol.Chunks.Lookup(e.logical); ok && ch.Type != format.ChunkData {
			p.Code, p.Message = DataExtentChunk, fmt.Sprintf("data extent lives in a %v chunk", ch.Type)
			c.add(p)
		}
		u := s.usedBy(i)
		switch {
		case u.n == 0:
			p.Code, p.Message = ExtentUnreferenced, fmt.Sprintf("data extent of %d bytes (refs %d): no file extent points at it", e.length, e.refs)
			if pointed(missing, span{e.logical, e.end()}) {
				// A file extent points into it, by another length: in use.
				p.Message += " as a whole, but one points into it (kept)"
			} else {
				p.fix = s.refFix(&fixData{key: format.Key{ObjectID: e.logical, Type: format.ExtentItemKey, Offset: uint64(e.length)}})
			}
			c.add(p)
		case uint64(u.n) != e.refs:
			p.Code, p.Message = ExtentRefs, fmt.Sprintf("data extent of %d bytes has refs %d, %d file extents point at it", e.length, e.refs, u.n)
			p.fix = s.refFix(&fixData{want: uint64(u.n), key: format.Key{ObjectID: e.logical, Type: format.ExtentItemKey, Offset: uint64(e.length)}})
			c.add(p)
		case u.mismatch:
			// A file extent that reads the extent as something else
			// (compressed or not, another size) would read garbage.
			m := s.mismatch[e.id()]
			p.Code, p.Message = ExtentReadAs, fmt.Sprintf("data extent is %v with %d bytes decompressed, but %s reads it differently", e.compression, e.ram, m.where)
			if !u.matched && !m.differ {
				// Readers go by the file extents, and they all agree:
				// the item's copy of their view is what is wrong.
				p.fix = s.refFix(&fixData{key: format.Key{ObjectID: e.logical, Type: format.ExtentItemKey, Offset: uint64(e.length)}, want: m.ram, comp: m.compression})
			}
			c.add(p)
		}
	}
	for _, id := range s.missingRefs() {
		u := s.missing[id]
		// Rebuilt from the file extents, as btrfs check
		// --init-extent-tree does: the references are what points at it.
		e := &format.ExtentItem{Refs: u.n, Generation: c.sb.Generation, RAMBytes: u.ram, Compression: u.compression}
		key := format.Key{ObjectID: id.logical, Type: format.ExtentItemKey, Offset: id.length}
		c.add(Problem{Code: FileExtentNoItem, Tree: format.FSTree.String(), Ino: u.ino, Logical: id.logical, fix: s.refFix(&fixData{key: key, item: format.MarshalExtentItem(e)}), Message: fmt.Sprintf(
			"extent at %d points at data extent %d+%d, which has no extent item (%d file extents point there)", u.off, id.logical, id.length, u.n)})
	}
}

// missingSpans yields, sorted, the data extents file extents point at
// that have no extent item: in use all the same.
func (s *fsState) missingSpans() iter.Seq[span] {
	return func(yield func(span) bool) {
		for _, id := range s.missingRefs() {
			if !yield(span{id.logical, id.logical + id.length}) {
				return
			}
		}
	}
}

// pointed reports whether a span of missing (sorted by start, each at
// most format.MaxExtentBytes) overlaps x.
func pointed(missing []span, x span) bool {
	i, _ := slices.BinarySearchFunc(missing, x.start-min(x.start, format.MaxExtentBytes), func(m span, v uint64) int { return cmp.Compare(m.start, v) })
	for ; i < len(missing) && missing[i].start < x.end; i++ {
		if missing[i].end > x.start {
			return true
		}
	}
	return false
}

// mergeSpans yields the spans of two sorted sequences in start order.
func mergeSpans(a, b iter.Seq[span]) iter.Seq[span] {
	return func(yield func(span) bool) {
		nb, stop := iter.Pull(b)
		defer stop()
		y, ok := nb()
		for x := range a {
			for ; ok && y.start < x.start; y, ok = nb() {
				if !yield(y) {
					return
				}
			}
			if !yield(x) {
				return
			}
		}
		for ; ok; y, ok = nb() {
			if !yield(y) {
				return
			}
		}
	}
}

// checkCsums requires exactly one checksum for every sector of the data
// extents that regular file extents use, and none outside data extents.
// Extents that are only preallocated (or not referenced at all) may have
// sums. The extents come sorted from the walk: their spans are read off
// the list in place (a copy each, 32 bytes an extent, was half of what a
// check of 4M files held); only keys out of order take copies to sort.
func (c *checker) checkCsums() {
	s := &c.fs
	csums := s.csums.list
	sortSpans(csums)
	all, need := s.spans(false), s.spans(true)
	if s.unsorted {
		for i, e := range s.extents.list {
			s.all.push(span{e.logical, e.end()})
			if s.usedBy(i).regular {
				s.need.push(span{e.logical, e.end()})
			}
		}
		sortSpans(s.all.list)
		sortSpans(s.need.list)
		all, need = slices.Values(s.all.list), slices.Values(s.need.list)
	}
	tree := format.CsumTree.String()
	// Sums over space a file extent points at are not orphans, item or
	// not: "in use" wins (FILE_EXTENT_NO_ITEM rebuilds the item).
	uncovered(slices.Values(csums), union(mergeSpans(all, s.missingSpans()), &s.union), func(x span, a, b uint64) {
		c.add(Problem{Code: CsumOrphan, Tree: tree, Logical: a, fix: &fixData{end: b}, Message: fmt.Sprintf("checksums for [%d, %d) outside every data extent and every file extent", a, b)})
	})
	s.union.list = s.union.list[:0]
	uncovered(need, union(slices.Values(csums), &s.union), func(x span, a, b uint64) {
		c.add(Problem{Code: CsumMissing, Tree: tree, Logical: x.start, fix: &fixData{index: a, end: b}, Message: fmt.Sprintf("data extent of %d bytes: [%d, %d) has no checksum", x.end-x.start, a, b)})
	})
}

// spans yields the spans of the data extents in list order: all of
// them, or only those a regular file extent uses (they need sums).
func (s *fsState) spans(needed bool) iter.Seq[span] {
	return func(yield func(span) bool) {
		for i, e := range s.extents.list {
			if (!needed || s.usedBy(i).regular) && !yield(span{e.logical, e.end()}) {
				return
			}
		}
	}
}

// sortSpans sorts by start (the lists come sorted from the walk, unless
// keys are out of order across nodes).
func sortSpans(s []span) {
	byStart := func(a, b span) int { return cmp.Compare(a.start, b.start) }
	if !slices.IsSortedFunc(s, byStart) {
		slices.SortFunc(s, byStart)
	}
}

// union merges sorted spans into disjoint ones, into out (empty).
func union(s iter.Seq[span], out *bigList[span]) []span {
	for x := range s {
		if n := len(out.list); n > 0 && x.start <= out.list[n-1].end {
			out.list[n-1].end = max(out.list[n-1].end, x.end)
			continue
		}
		out.push(x)
	}
	return out.list
}

// uncovered calls fn for every piece [a, b) of a span of s (sorted) that no
// span of cover (sorted, disjoint) covers.
func uncovered(s iter.Seq[span], cover []span, fn func(x span, a, b uint64)) {
	j := 0
	for x := range s {
		for j < len(cover) && cover[j].end <= x.start {
			j++
		}
		pos := x.start
		for k := j; k < len(cover) && cover[k].start < x.end && pos < x.end; k++ {
			if cover[k].start > pos {
				fn(x, pos, cover[k].start)
			}
			pos = max(pos, cover[k].end)
		}
		if pos < x.end {
			fn(x, pos, x.end)
		}
	}
}

// nodeReader reads committed nodes from the first copy that validates;
// the second pass uses it through a btree.
type nodeReader struct {
	c     *checker
	cache map[uint64]*format.Node
}

var errReadOnly = errors.New("fsck reads only")

func (r *nodeReader) ReadNode(owner format.TreeID, logical, gen uint64, level int) (*format.Node, error) {
	if n := r.cache[logical]; n != nil {
		return n, nil
	}
	want := format.NodeExpect{FSID: r.c.sb.FSID, AltFSID: r.c.sb.NewFSID, Logical: logical, Generation: gen, Owner: owner, Level: level}
	buf := make([]byte, r.c.sb.NodeSize)
	err := fmt.Errorf("logical %d: no copy", logical)
	for m := 0; m < r.c.vol.Copies(logical); m++ {
		if err = r.c.vol.ReadCopy(logical, buf, m); err != nil {
			continue
		}
		var n *format.Node
		if n, err = format.UnmarshalNode(buf, r.c.sb.CsumType, want); err == nil {
			if len(r.cache) >= 256 {
				clear(r.cache)
			}
			r.cache[logical] = n
			return n, nil
		}
	}
	return nil, err
}
func (r *nodeReader) NewNode(format.TreeID, uint8) (*format.Node, error) { return nil, errReadOnly }
func (r *nodeReader) IsDirty(*format.Node) bool                          { return false }
func (r *nodeReader) FreeNode(*format.Node) error                        { return errReadOnly }
func (r *nodeReader) NodeSize() uint32                                   { return r.c.sb.NodeSize }

// lookup is one item of the fs tree; ok false if absent, err for a node
// that cannot be read (then nothing is concluded).
type lookup struct{ t *btree.Tree }

func (l lookup) get(k format.Key) (b []byte, ok bool, err error) {
	b, err = l.t.Get(k)
	if errors.Is(err, btree.ErrNotFound) {
		return nil, false, nil
	}
	return b, err == nil, err
}

// inode returns the inode item of ino: exists says whether the key is
// there; in is nil if it is absent or does not decode.
func (l lookup) inode(ino uint64) (in *format.InodeItem, exists bool, err error) {
	b, ok, err := l.get(format.Key{ObjectID: ino, Type: format.InodeItemKey})
	if !ok {
		return nil, false, err
	}
	in, _ = format.UnmarshalInodeItem(b)
	return in, true, nil
}

// refIndex finds name among child's names in parent.
func (l lookup) refIndex(child, parent uint64, name string) (idx uint64, ok bool, err error) {
	b, ok, err := l.get(format.Key{ObjectID: child, Type: format.InodeRefKey, Offset: parent})
	if !ok {
		return 0, false, err
	}
	refs, err := format.UnmarshalInodeRefs(b)
	if err != nil {
		return 0, false, err
	}
	for _, r := range refs {
		if r.Name == name {
			return r.Index, true, nil
		}
	}
	return 0, false, nil
}

// dirItem finds name in the DIR_ITEM of dir.
func (l lookup) dirItem(dir uint64, name string) (e format.DirEntry, ok bool, err error) {
	b, ok, err := l.get(format.Key{ObjectID: dir, Type: format.DirItemKey, Offset: format.NameHash([]byte(name))})
	if !ok {
		return e, false, err
	}
	es, err := format.UnmarshalDirEntries(b)
	if err != nil {
		return e, false, err
	}
	for _, e := range es {
		if e.Name == name {
			return e, true, nil
		}
	}
	return e, false, nil
}

// matchNames is the second pass: it re-reads the fs tree and checks each
// name of the directories and inodes whose fingerprints disagree against
// its counterparts (DIR_ITEM, DIR_INDEX, INODE_REF, the child's inode).
func (c *checker) matchNames() {
	s := &c.fs
	root := c.sb.Roots.Root(format.FSTree)
	t := btree.New(&nodeReader{c: c, cache: map[uint64]*format.Node{}}, format.FSTree, root)
	l := lookup{t}
	flagged := func(dir, child uint64) bool {
		return s.names.has(child) || s.dirFlag[dir]
	}
	for it := t.First(); it.Valid(); it.Next() {
		item := it.Item()
		k := item.Key
		switch k.Type {
		case format.DirItemKey:
			es, err := format.UnmarshalDirEntries(item.Data)
			if err != nil {
				continue
			}
			for _, e := range es {
				if flagged(k.ObjectID, e.Ino) {
					c.matchDirItem(l, k.ObjectID, e)
				}
			}
		case format.DirIndexKey:
			e, err := format.UnmarshalDirEntry(item.Data)
			if err == nil && flagged(k.ObjectID, e.Ino) {
				c.matchDirIndex(l, k.ObjectID, k.Offset, e)
			}
		case format.InodeRefKey:
			refs, err := format.UnmarshalInodeRefs(item.Data)
			if err != nil {
				continue
			}
			for _, r := range refs {
				if flagged(k.Offset, k.ObjectID) {
					c.matchInodeRef(l, k.ObjectID, k.Offset, r)
				}
			}
		}
	}
}

// matchDirItem: a DIR_ITEM entry needs an existing child with an
// INODE_REF of its name (the INODE_REF's own check then finds the
// DIR_INDEX).
func (c *checker) matchDirItem(l lookup, dir uint64, e format.DirEntry) {
	_, exists, err := l.inode(e.Ino)
	if err != nil {
		return
	}
	if !exists {
		c.fsFix(EntryDangling, dir, entryFix(dir, noIndex, e), "directory entry %q names inode %d, which does not exist", e.Name, e.Ino)
		return
	}
	if _, ok, err := l.refIndex(e.Ino, dir, e.Name); err == nil && !ok {
		c.fsFix(EntryNoRef, dir, entryFix(dir, noIndex, e), "directory entry %q names inode %d, which has no INODE_REF for it", e.Name, e.Ino)
	}
}

// noIndex marks a name whose DIR_INDEX is not known.
const noIndex = ^uint64(0)

// entryFix is the fix data of directory entry e of dir.
func entryFix(dir, idx uint64, e format.DirEntry) *fixData {
	return &fixData{dir: dir, index: idx, name: e.Name, ftype: e.Type, want: e.Ino}
}

// matchDirIndex: a DIR_INDEX entry needs the same entry in the DIR_ITEM,
// a child of its type, and (when the DIR_ITEM is missing, so that
// matchDirItem does not look) the child's INODE_REF.
func (c *checker) matchDirIndex(l lookup, dir, idx uint64, e format.DirEntry) {
	de, hasItem, err := l.dirItem(dir, e.Name)
	if err != nil {
		return
	}
	if hasItem && (de.Ino != e.Ino || de.Type != e.Type) {
		c.fsFix(EntryMismatch, dir, entryFix(dir, idx, e), "DIR_INDEX %d names %q inode %d (%v), its DIR_ITEM entry inode %d (%v)", idx, e.Name, e.Ino, e.Type, de.Ino, de.Type)
	}
	in, exists, err := l.inode(e.Ino)
	if err != nil {
		return
	}
	if !exists {
		if !hasItem { // else matchDirItem reports it
			c.fsFix(EntryDangling, dir, entryFix(dir, idx, e), "DIR_INDEX %d %q names inode %d, which does not exist", idx, e.Name, e.Ino)
		}
		return
	}
	if in != nil && in.FileType() != e.Type {
		c.fsFix(EntryType, dir, &fixData{dir: dir, index: idx, name: e.Name, ftype: in.FileType(), want: e.Ino},
			"directory entry %q says %v, inode %d is a %v", e.Name, e.Type, e.Ino, in.FileType())
	}
	if hasItem {
		return
	}
	ri, hasRef, err := l.refIndex(e.Ino, dir, e.Name)
	if err != nil {
		return
	}
	missing := "DIR_ITEM entry"
	if !hasRef || ri != idx {
		missing += " and no INODE_REF with this index"
	}
	c.fsFix(IndexNoItem, dir, entryFix(dir, idx, e), "DIR_INDEX %d %q (inode %d) has no %s", idx, e.Name, e.Ino, missing)
}

// matchInodeRef: each name of an inode needs the DIR_INDEX its index names.
func (c *checker) matchInodeRef(l lookup, child, dir uint64, r format.InodeRef) {
	b, ok, err := l.get(format.Key{ObjectID: dir, Type: format.DirIndexKey, Offset: r.Index})
	if err != nil {
		return
	}
	if ok {
		e, err := format.UnmarshalDirEntry(b)
		if err != nil || (e.Ino == child && e.Name == r.Name) {
			return
		}
		c.fsFix(RefIndexOther, child, &fixData{dir: dir, index: r.Index, name: r.Name, want: child}, "name %q in directory %d has index %d, but that DIR_INDEX is %q (inode %d)", r.Name, dir, r.Index, e.Name, e.Ino)
		return
	}
	if _, exists, err := l.inode(dir); err == nil && !exists {
		c.fsFix(RefNoDir, child, &fixData{dir: dir, index: r.Index, name: r.Name, want: child}, "name %q is in directory %d, which does not exist", r.Name, dir)
		return
	}
	c.fsFix(RefNoIndex, child, &fixData{dir: dir, index: r.Index, name: r.Name, want: child}, "name %q in directory %d (index %d) has no DIR_INDEX", r.Name, dir, r.Index)
}
