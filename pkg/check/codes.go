package check

import "sort"

// Code is the stable name of one kind of problem, like e2fsck's PR_*
// numbers or the error bits of btrfs check --mode=lowmem. Scripts and
// tests match codes, never messages; a code is never renamed or reused.
type Code string

// Pass is the part of the check that finds a problem.
type Pass string

// The passes, in the order the report lists them.
const (
	PassSuper  Pass = "superblock"
	PassDevice Pass = "device"
	PassChunk  Pass = "chunk"
	PassNode   Pass = "node"
	PassExtent Pass = "extent"
	PassCsum   Pass = "csum"
	PassFS     Pass = "fs"
	PassData   Pass = "data"
	PassDedupe Pass = "dedupe"
	PassDisc   Pass = "discard"
)

var passOrder = map[Pass]int{PassSuper: 0, PassDevice: 1, PassChunk: 2, PassNode: 3, PassExtent: 4, PassCsum: 5, PassFS: 6, PassData: 7, PassDedupe: 8, PassDisc: 9}

// Fix says which fsck mode repairs a problem.
type Fix int

const (
	// FixNone: no mode repairs it (reported only).
	FixNone Fix = iota
	// FixPreen: -p/-a repairs it; the fix cannot lose data (a copy
	// rewritten from a good one, a count recomputed).
	FixPreen
	// FixRepair: only -y/--repair; the fix drops or moves something
	// (an entry removed, an inode moved to lost+found).
	FixRepair
)

func (f Fix) String() string {
	return [...]string{"no", "preen", "repair"}[f]
}

// CodeInfo documents one code (fsck.ddfs --list-codes).
type CodeInfo struct {
	Code        Code   `json:"code"`
	Pass        Pass   `json:"pass"`
	Fix         string `json:"fix"` // "no", "preen" (-p and -y), "repair" (-y only)
	Description string `json:"description"`
	fix         Fix
}

var codeTable = map[Code]CodeInfo{}

// def registers a code. Adding a problem is one line below plus its use.
func def(name string, pass Pass, fix Fix, desc string) Code {
	c := Code(name)
	if _, dup := codeTable[c]; dup {
		panic("check: code " + name + " defined twice")
	}
	codeTable[c] = CodeInfo{Code: c, Pass: pass, Fix: fix.String(), Description: desc, fix: fix}
	return c
}

// Codes lists every problem code, by pass and then name.
func Codes() []CodeInfo {
	out := make([]CodeInfo, 0, len(codeTable))
	for _, ci := range codeTable {
		out = append(out, ci)
	}
	sort.Slice(out, func(i, j int) bool {
		if a, b := passOrder[out[i].Pass], passOrder[out[j].Pass]; a != b {
			return a < b
		}
		return out[i].Code < out[j].Code
	})
	return out
}

// Info returns the documentation of c (ok false for an unknown code).
func (c Code) Info() (CodeInfo, bool) { ci, ok := codeTable[c]; return ci, ok }

// Superblocks.
var (
	SuperBad        = def("SUPER_BAD", PassSuper, FixPreen, "a superblock copy is unreadable, missing or fails its checksum or validation")
	SuperForeign    = def("SUPER_FOREIGN", PassSuper, FixRepair, "a superblock copy belongs to another filesystem or device")
	SuperGeneration = def("SUPER_GENERATION", PassSuper, FixPreen, "a superblock copy is at another generation than the set")
	// Writers refuse such a set (FORMAT.md §3.7), so no mode can commit a fix.
	Counters = def("COUNTERS_WRONG", PassSuper, FixPreen, "the superblock's space counters differ from a recount of the trees (FORMAT.md §3.9; the repair stores the recount)")
	// Decided by reading the chunk tree's nodes through both (sysarray.go).
	SysArrayMismatch = def("SYS_ARRAY_MISMATCH", PassSuper, FixPreen, "a superblock copy's system chunk array disagrees with the chunk tree's system chunks (-p/-y rewrite the array of every copy from the chunk tree when its chunks read the chunk tree's nodes where the two differ; else nothing is repaired)")
	// Writers refuse such a set: its replay would guess.
	LogBad       = def("LOG_BAD", PassSuper, FixNone, "the pending fsync log (FORMAT.md §3.10) does not read or decode: the fsynced data it holds cannot be replayed")
	SuperDiffers = def("SUPER_DIFFERS", PassSuper, FixNone, "a superblock copy of the set's generation differs in a set-wide field (root set, system chunks, settings, sizes)")
)

// Devices.
var (
	DevMissing   = def("DEV_MISSING", PassDevice, FixNone, "a member of the set is missing or cannot be used (--degraded checks the rest)")
	DevRemoved   = def("DEV_REMOVED", PassDevice, FixNone, "a device removed from the set still carries superblocks (ignored; the next writer wipes it)")
	DevCount     = def("DEV_COUNT", PassDevice, FixNone, "the superblock's device count differs from the device items")
	DevNoItem    = def("DEV_NO_ITEM", PassDevice, FixNone, "an open device has no device item in the chunk tree")
	DevUUID      = def("DEV_UUID", PassDevice, FixNone, "a device item's uuid differs from the device's superblock")
	DevSize      = def("DEV_SIZE", PassDevice, FixNone, "a device item says more bytes than the device has")
	DevBytesUsed = def("DEV_BYTES_USED", PassDevice, FixPreen, "a device item's bytes_used differs from its chunk stripes")
)

// Chunks.
var (
	ChunkNoDevice    = def("CHUNK_NO_DEVICE", PassChunk, FixNone, "a chunk stripe lies on a device with no device item")
	ChunkPastDevice  = def("CHUNK_PAST_DEVICE", PassChunk, FixNone, "a chunk stripe ends past its device")
	ChunkCoversSuper = def("CHUNK_COVERS_SUPER", PassChunk, FixNone, "a chunk stripe covers a superblock copy")
	ChunkOverlap     = def("CHUNK_OVERLAP", PassChunk, FixNone, "two chunk stripes overlap on a device")
	ChunkSysMissing  = def("CHUNK_SYS_MISSING", PassChunk, FixNone, "a system chunk of the superblock is not in the chunk tree")
	// ChunkBelowProfile is redundancy lost, not a broken mapping: -y
	// moves the chunk to the set's profile once nothing else is wrong.
	ChunkBelowProfile = def("CHUNK_BELOW_PROFILE", PassChunk, FixRepair, "a chunk made while a device was missing is below the set's profile (fewer copies than the set's other chunks of its kind)")
)

// Tree nodes (every tree).
var (
	TreeNoRoot       = def("TREE_NO_ROOT", PassNode, FixNone, "a tree that must exist has no root")
	NodeTwice        = def("NODE_TWICE", PassNode, FixNone, "a node is referenced twice")
	NodeNoChunk      = def("NODE_NO_CHUNK", PassNode, FixNone, "a node address lies in no chunk")
	NodeChunkType    = def("NODE_CHUNK_TYPE", PassNode, FixNone, "a node lies in a chunk of the wrong type")
	NodeAlign        = def("NODE_ALIGN", PassNode, FixNone, "a node is misaligned or crosses its chunk's end")
	TreeRootBad      = def("TREE_ROOT_BAD", PassNode, FixRepair, "no copy of a tree's root node reads (-y: a derived tree, the dedupe index or the discard records, is dropped and rebuilt from its sources; else the newest backup root set that checks clean replaces the roots; later generations are lost)")
	NodeCopyBad      = def("NODE_COPY_BAD", PassNode, FixPreen, "one copy of a node is unreadable or invalid (checksum, header, owner, generation)")
	NodeEmpty        = def("NODE_EMPTY", PassNode, FixNone, "a node below the root has no items")
	NodeFirstKey     = def("NODE_FIRST_KEY", PassNode, FixNone, "a node's first key differs from its parent's pointer")
	NodeOverflow     = def("NODE_OVERFLOW", PassNode, FixNone, "a node's contents overflow it")
	NodeKeyRange     = def("NODE_KEY_RANGE", PassNode, FixNone, "a key lies outside the range its parent gives")
	NodeCopiesDiffer = def("NODE_COPIES_DIFFER", PassNode, FixPreen, "two copies of a node both validate but differ byte for byte (both locations reported); the one that does not fit the node's place (its parent pointer's first key) is rewritten from the one that does, none when the place cannot decide")
	NodePtrGen       = def("NODE_PTR_GEN", PassNode, FixNone, "a child pointer is newer than its node")
	ItemBad          = def("ITEM_BAD", PassNode, FixNone, "a chunk, device, extent or snapshot tree item does not decode or contradicts its key")
	SnapshotBad      = def("SNAPSHOT_BAD", PassNode, FixNone, "a snapshot, receive or drop item contradicts the image: made after the filesystem's generation, a name or UUID another snapshot has, more than 4096 snapshots, or the snapshots (receive, dropping) feature off (its tree's nodes and data count as in use, its names are not checked, and a repair frees and re-counts nothing while it stands)")
)

// Extents and block groups.
var (
	MetaMissing        = def("META_MISSING", PassExtent, FixPreen, "a node has no metadata extent item (the item is rebuilt from the node)")
	MetaRefs           = def("META_REFS", PassExtent, FixRepair, "a node's metadata item refs differs from the pointers to it (parent nodes, the root set, snapshots, trees being dropped); -y sets refs to the pointers every tree's walk counted (also on an image with snapshots)")
	MetaLeaked         = def("META_LEAKED", PassExtent, FixPreen, "a metadata extent item for a node no tree references (leaked space)")
	ExtentOutside      = def("EXTENT_OUTSIDE", PassExtent, FixNone, "an extent lies outside every chunk")
	ExtentOverlap      = def("EXTENT_OVERLAP", PassExtent, FixNone, "two extents overlap")
	BGMissing          = def("BG_MISSING", PassExtent, FixPreen, "a chunk has no block group item (made from the chunk, its usage the extents in it)")
	BGType             = def("BG_TYPE", PassExtent, FixNone, "a block group's type or profile differs from its chunk")
	BGUsed             = def("BG_USED", PassExtent, FixPreen, "a block group's used bytes differ from the extents in it")
	BGOrphan           = def("BG_ORPHAN", PassExtent, FixRepair, "a block group item has no chunk (-y deletes it: no chunk maps that space)")
	DataExtentAlign    = def("DATA_EXTENT_ALIGN", PassExtent, FixNone, "a data extent is not whole sectors")
	DataExtentChunk    = def("DATA_EXTENT_CHUNK", PassExtent, FixNone, "a data extent lies in a chunk that is not a data chunk")
	ExtentUnreferenced = def("EXTENT_UNREFERENCED", PassExtent, FixRepair, "no file extent points at a data extent (leaked space; -y frees it)")
	ExtentRefs         = def("EXTENT_REFS", PassExtent, FixPreen, "a data extent's reference count differs from the file extents that point at it")
	ExtentReadAs       = def("EXTENT_READ_AS", PassExtent, FixPreen, "a file extent reads a data extent with another compression or size (when every file extent that points at it reads it alike, as readers do, the extent item takes their view)")
	FileExtentNoItem   = def("FILE_EXTENT_NO_ITEM", PassExtent, FixPreen, "a file extent points at a data extent with no extent item (the item is rebuilt from the file extents that point there, where no other extent holds the space)")
)

// Checksums.
var (
	CsumItemBad = def("CSUM_ITEM_BAD", PassCsum, FixRepair, "a csum tree item is malformed (key, length, alignment)")
	CsumOverlap = def("CSUM_OVERLAP", PassCsum, FixNone, "checksum items overlap")
	CsumOrphan  = def("CSUM_ORPHAN", PassCsum, FixPreen, "checksums for space outside every data extent (freed space)")
	CsumMissing = def("CSUM_MISSING", PassCsum, FixNone, "sectors of a data extent have no checksum: reads refuse them; no mode invents sums for data nothing verified, only --rebuild-csums sums it as it reads now, naming each file it vouches for")
)

// Data (--check-data).
var (
	DataCopiesDiffer = def("DATA_COPIES_DIFFER", PassData, FixNone, "two copies of a data sector both match its checksum but differ byte for byte (both locations reported)")
	DataCopyBad      = def("DATA_COPY_BAD", PassData, FixPreen, "one copy of a data sector is unreadable or fails its checksum")
	ParityBad        = def("PARITY_BAD", PassNode, FixNone, "a raid5/raid6 parity strip does not match its row's data (a rebuilt copy of a node differs; with --check-data, a data row's P or Q): ddfs scrub --repair rewrites it after checking the row's data")
	DataLost         = def("DATA_LOST", PassData, FixNone, "part of a data extent has no copy on a present device (--degraded): its file reads EIO there")
)

// The namespace and file layout (fs tree).
var (
	InoReserved      = def("INO_RESERVED", PassFS, FixNone, "an fs tree item uses a reserved object id")
	FSItemBad        = def("FS_ITEM_BAD", PassFS, FixRepair, "an fs tree item does not decode (-y drops it; what it held is rebuilt from the rest where possible)")
	InodeKeyOffset   = def("INODE_KEY_OFFSET", PassFS, FixRepair, "an inode item's key offset is not 0 (-y moves it to 0, or drops it when 0 holds one)")
	RootNotDir       = def("ROOT_NOT_DIR", PassFS, FixNone, "the root inode is not a directory")
	RootHasName      = def("ROOT_HAS_NAME", PassFS, FixNone, "the root directory has a name")
	RefSelfParent    = def("REF_SELF_PARENT", PassFS, FixRepair, "an INODE_REF names the inode as its own parent (-y removes the name; the inode goes to lost+found if it has no other)")
	XattrHash        = def("XATTR_HASH", PassFS, FixPreen, "an xattr is under a key that is not its name hash")
	DirItemHash      = def("DIR_ITEM_HASH", PassFS, FixPreen, "a DIR_ITEM entry is under a key that is not its name hash")
	DirIndexRange    = def("DIR_INDEX_RANGE", PassFS, FixRepair, "a DIR_INDEX is outside [2, the directory's seq) (-y raises seq past it; an index below 2 loses its name, the inode goes to lost+found if it has no other)")
	DirEntrySelf     = def("DIR_ENTRY_SELF", PassFS, FixRepair, "a directory entry names its own directory (-y removes the name)")
	NotDirEntries    = def("NOT_DIR_ENTRIES", PassFS, FixRepair, "an inode that is no directory has directory entries (-y removes them; their inodes go to lost+found)")
	NotFileExtents   = def("NOT_FILE_EXTENTS", PassFS, FixRepair, "an inode that is no file or symlink has file extents (-y drops them)")
	FileExtentWraps  = def("FILE_EXTENT_WRAPS", PassFS, FixRepair, "a file extent passes the end of the offset space (-y drops it)")
	FileExtentTooBig = def("FILE_EXTENT_TOO_BIG", PassFS, FixRepair, "a file extent passes the largest file size (FORMAT.md limits; -y drops it)")
	FileExtentOvlp   = def("FILE_EXTENT_OVERLAP", PassFS, FixRepair, "a file extent overlaps the previous one (-y cuts its overlapping head, or drops it when nothing is left)")
	InlineNotOnly    = def("INLINE_NOT_ONLY", PassFS, FixRepair, "an extent follows an inline extent (-y drops it)")
	InlineOffset     = def("INLINE_OFFSET", PassFS, FixRepair, "an inline extent is not at offset 0 (-y drops it)")
	ExtentBeyondSize = def("EXTENT_BEYOND_SIZE", PassFS, FixRepair, "a file extent lies wholly beyond the file size (-y grows the size over it)")
	CompressFeature  = def("COMPRESS_FEATURE", PassFS, FixNone, "a compressed extent without the compression feature")
	FileExtentAlign  = def("FILE_EXTENT_ALIGN", PassFS, FixNone, "a file extent points at partial sectors")
	PropItem         = def("PROP_ITEM", PassFS, FixRepair, "a PROP_ITEM (reserved)")
	FSItemType       = def("FS_ITEM_TYPE", PassFS, FixRepair, "an item of a type the fs tree does not hold (-y drops it)")
	InodeMissing     = def("INODE_MISSING", PassFS, FixRepair, "items of an inode without its inode item (a new inode item is made from them)")
	RootMissing      = def("ROOT_MISSING", PassFS, FixRepair, "the root directory has no inode item")
	Orphan           = def("ORPHAN", PassFS, FixRepair, "an inode has no name (reconnected under /lost+found/#INO)")
	DirNames         = def("DIR_NAMES", PassFS, FixRepair, "a directory has more than one name (-y keeps the first)")
	Nlink            = def("NLINK", PassFS, FixPreen, "a file's nlink differs from its names")
	DirNlink         = def("DIR_NLINK", PassFS, FixPreen, "a directory's nlink differs from 2 + its subdirectories")
	DirSize          = def("DIR_SIZE", PassFS, FixPreen, "a directory's size differs from its entries")
	DirSeq           = def("DIR_SEQ", PassFS, FixPreen, "a directory's seq is below 2 (set past its highest index)")
	SpecialSize      = def("SPECIAL_SIZE", PassFS, FixPreen, "a directory-less, file-less inode (device, fifo, socket) has a size")
	Rdev             = def("RDEV", PassFS, FixPreen, "an inode that is no device has a device number")
	SymlinkTarget    = def("SYMLINK_TARGET", PassFS, FixNone, "a symlink target is empty, has holes or holds a NUL byte (readers refuse it)")
	InodeFlags       = def("INODE_FLAGS", PassFS, FixRepair, "an inode has unknown flags (-y clears them)")
	NBytes           = def("NBYTES", PassFS, FixPreen, "an inode's nbytes differs from its extents")
	DirLoop          = def("DIR_LOOP", PassFS, FixRepair, "directories are each other's ancestors (-y moves the lowest to /lost+found)")
	EntryDangling    = def("ENTRY_DANGLING", PassFS, FixRepair, "a directory entry names an inode that does not exist")
	EntryNoRef       = def("ENTRY_NO_REF", PassFS, FixRepair, "a directory entry's inode has no INODE_REF for it (-y makes the name whole; a DIR_ITEM entry with no DIR_INDEX, of an inode named elsewhere, goes instead)")
	EntryMismatch    = def("ENTRY_MISMATCH", PassFS, FixPreen, "a DIR_INDEX and its DIR_ITEM entry disagree (fixed when both name the same inode, or one's inode has the name's INODE_REF at this index: the other is pointed at it)")
	EntryType        = def("ENTRY_TYPE", PassFS, FixPreen, "a directory entry's type differs from its inode")
	IndexNoItem      = def("INDEX_NO_ITEM", PassFS, FixRepair, "a DIR_INDEX has no DIR_ITEM entry")
	RefIndexOther    = def("REF_INDEX_OTHER", PassFS, FixRepair, "an INODE_REF's index names another DIR_INDEX (-y points it at the name's own DIR_INDEX, made anew when there is none; a name the DIR_INDEX at that index gives the same inode under another name goes instead)")
	RefNoDir         = def("REF_NO_DIR", PassFS, FixRepair, "an INODE_REF names a directory that does not exist")
	RefNoIndex       = def("REF_NO_INDEX", PassFS, FixRepair, "an INODE_REF has no DIR_INDEX")
)

// The dedupe index.
var (
	DedupeItemBad = def("DEDUPE_ITEM_BAD", PassDedupe, FixPreen, "a dedupe tree item is unknown or does not decode")
	DedupeFeature = def("DEDUPE_FEATURE", PassDedupe, FixNone, "dedupe entries without the dedupe feature")
	DedupeStale   = def("DEDUPE_STALE", PassDedupe, FixPreen, "an index entry points at no live extent marked as indexed")
	DedupePrefix  = def("DEDUPE_PREFIX", PassDedupe, FixPreen, "an index entry's hash prefix differs from its extent")
	DedupeLength  = def("DEDUPE_LENGTH", PassDedupe, FixPreen, "an index entry's length does not fit its extent")
	DedupeHash    = def("DEDUPE_HASH", PassDedupe, FixPreen, "an extent's data no longer hashes to its index entry (the entry is dropped)")
	DedupeEntries = def("DEDUPE_ENTRIES", PassDedupe, FixPreen, "an extent marked as indexed has not exactly one index entry (with none, the entry is rebuilt from the extent's data, or the mark cleared if the data no longer matches)")
	DiscardBad    = def("DISCARD_BAD", PassDisc, FixPreen, "a discard record is not a range inside one chunk")
)
