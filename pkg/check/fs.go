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
	"cmp"
	"errors"
	"fmt"
	"iter"
	"slices"

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

// fsItemHandler checks one fs tree item of the current inode cur.
type fsItemHandler func(c *checker, cur *inodeState, it format.Item)

// fsItems holds the check of each item type the fs tree holds, indexed by
// key type (an array: fsItem runs for most items of a check); a type
// without one is FS_ITEM_TYPE. Each check lives in the file of its item.
var fsItems = [256]fsItemHandler{
	format.InodeItemKey:  (*checker).inodeItem,
	format.InodeRefKey:   (*checker).inodeRef,
	format.XattrItemKey:  (*checker).xattrItem,
	format.DirItemKey:    (*checker).dirItem,
	format.DirIndexKey:   (*checker).dirIndex,
	format.FileExtentKey: (*checker).fileExtentItem,
	format.PropItemKey:   (*checker).propItem,
}

// fsItem takes one item of the fs tree, in key order (called by item()),
// and hands it to the check of its type.
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
	if h := fsItems[k.Type]; h != nil {
		h(c, cur, it)
		return
	}
	c.fsFix(FSItemType, cur.ino, &fixData{key: k}, "item %v of a type the fs tree does not hold", k)
}

// fsItemBad reports an item of inode cur that does not decode.
func (c *checker) fsItemBad(cur *inodeState, k format.Key, err error) {
	c.fsFix(FSItemBad, cur.ino, &fixData{key: k}, "item %v: %s", k, errString(err))
}

// propItem: version 1 reserves PROP_ITEM keys and writes none.
func (c *checker) propItem(cur *inodeState, it format.Item) {
	c.fsFix(PropItem, cur.ino, &fixData{key: it.Key}, "PROP_ITEM %v (reserved: version 1 writes none)", it.Key)
}

// checkFS finishes the filesystem pass once every tree has been walked.
func (c *checker) checkFS() {
	c.data.finish(c) // the data problems are all in before dataOwners names them
	c.checkNames()
	c.lostData()
	c.parityRows()
	c.dataOwners()
	c.checkRefs()
	c.checkCsums()
}

// checkNames finishes the namespace checks: the last inode, the root,
// loops and the names whose halves did not balance.
func (c *checker) checkNames() {
	s := &c.fs
	s.init()
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
// that cannot be read (then nothing is concluded, and the fs tree is
// marked incomplete: a key behind a node that does not read is not
// absent, and what the check concludes without it must not be acted on).
// A repair's lookups have no checker: their errors abort the fix.
type lookup struct {
	c *checker // nil: a repair's
	t *btree.Tree
}

func (l lookup) get(k format.Key) (b []byte, ok bool, err error) {
	b, err = l.t.Get(k)
	if errors.Is(err, btree.ErrNotFound) {
		return nil, false, nil
	}
	if l.c != nil {
		l.c.unread(err)
	}
	return b, err == nil, err
}

// unread marks the fs tree incomplete when err, from a lookup or scan of
// it in a later pass, is a node that does not read (ErrNotFound is an
// answer, not a failure). The walk reads each node once and checks it
// against its parent; a reader (btree, as the filesystem) also refuses
// one the walk only reports (empty below the root, a first key off its
// parent's pointer, a newer generation), and a node no copy of which
// reads at the second read. Either way what lies behind it is unknown,
// as for a node the walk could not read (visit).
func (c *checker) unread(err error) {
	if err != nil && !errors.Is(err, btree.ErrNotFound) {
		c.rep.markIncomplete(format.FSTree.String())
	}
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
	l := lookup{c: c, t: t}
	flagged := func(dir, child uint64) bool {
		return s.names.has(child) || s.dirFlag[dir]
	}
	it := t.First()
	for ; it.Valid(); it.Next() {
		item := it.Item()
		k := item.Key
		switch k.Type {
		case format.DirItemKey:
			es, err := format.UnmarshalDirEntries(item.Data)
			if err != nil {
				continue // FS_ITEM_BAD, from the walk
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
	// The iteration stops at a node it cannot read: the names after it
	// are not matched, which is not their being matched.
	c.unread(it.Err())
}
