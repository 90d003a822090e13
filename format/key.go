package format

import (
	"encoding/binary"
	"fmt"
)

// TreeID names a B+tree (FORMAT.md §5 "Trees"). The superblock root set
// holds one root per tree id 1..NumTrees.
type TreeID uint64

const (
	ChunkTree     TreeID = 1 // device items and chunk items
	ExtentTree    TreeID = 2 // block groups, metadata and data extents with reference counts
	FSTree        TreeID = 3 // inodes, directories, file extents, xattrs
	CsumTree      TreeID = 4 // data checksums per sector
	DedupeTree    TreeID = 5 // dedupe index: hash -> data extent
	FreeSpaceTree TreeID = 6 // free ranges per block group (RoCompatFreeSpaceTree)
	DiscardTree   TreeID = 7 // freed ranges not yet discarded (CompatDiscardTree)
	SnapshotTree  TreeID = 8 // one SNAPSHOT_ITEM per snapshot (IncompatSnapshots)

	// NumTrees is the number of root slots in a root set.
	NumTrees = 8
)

var treeNames = map[TreeID]string{
	ChunkTree: "chunk", ExtentTree: "extent", FSTree: "fs", CsumTree: "csum",
	DedupeTree: "dedupe", FreeSpaceTree: "free-space", DiscardTree: "discard", SnapshotTree: "snapshot",
}

func (t TreeID) String() string {
	if n, ok := treeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("tree(%d)", uint64(t))
}

// KeyType is the middle component of a key; it says what the item holds
// (FORMAT.md §6 "Items").
type KeyType uint8

const (
	InodeItemKey     KeyType = 1   // FSTree: (ino, 1, 0) -> InodeItem
	InodeRefKey      KeyType = 12  // FSTree: (ino, 12, parent ino) -> name back-references
	XattrItemKey     KeyType = 24  // FSTree: (ino, 24, name hash) -> xattrs
	DirItemKey       KeyType = 84  // FSTree: (dir ino, 84, name hash) -> entries
	DirIndexKey      KeyType = 96  // FSTree: (dir ino, 96, sequence) -> entry
	FileExtentKey    KeyType = 108 // FSTree: (ino, 108, file offset) -> FileExtentItem
	CsumItemKey      KeyType = 128 // CsumTree: (CsumObjectID, 128, logical) -> sector sums
	DedupeItemKey    KeyType = 140 // DedupeTree: (hash prefix, 140, logical) -> DedupeItem
	ExtentItemKey    KeyType = 168 // ExtentTree: (logical, 168, disk length) -> ExtentItem
	MetadataItemKey  KeyType = 169 // ExtentTree: (logical, 169, level) -> MetadataItem
	ExtentDataRefKey KeyType = 178 // ExtentTree: (logical, 178, ref hash) -> ExtentDataRef
	SnapshotItemKey  KeyType = 190 // SnapshotTree: (snapshot id, 190, 0) -> SnapshotItem
	ReceiveItemKey   KeyType = 191 // SnapshotTree: (0, 191, 0) -> ReceiveItem (IncompatReceive)
	DropItemKey      KeyType = 193 // SnapshotTree: (first root logical, 193, 0) -> DropItem (IncompatDropping)
	BlockGroupKey    KeyType = 192 // ExtentTree: (chunk logical, 192, length) -> BlockGroupItem
	FreeSpaceInfoKey KeyType = 198 // FreeSpaceTree: (bg logical, 198, bg length)
	FreeSpaceExtKey  KeyType = 199 // FreeSpaceTree: (start, 199, length), no data
	DiscardItemKey   KeyType = 204 // DiscardTree: (start logical, 204, length), no data
	DevItemKey       KeyType = 216 // ChunkTree: (DevItemsObjectID, 216, devid) -> DevItem
	ChunkItemKey     KeyType = 228 // ChunkTree: (ChunkObjectID, 228, logical) -> ChunkItem
	PropItemKey      KeyType = 240 // FSTree: (ino, 240, name hash) -> property (reserved)
)

// Well-known object ids.
const (
	DevItemsObjectID uint64 = 1
	ChunkObjectID    uint64 = 256
	CsumObjectID     uint64 = 0xFFFFFFFFFFFFFFF6 // -10 as in btrfs
	RootDirIno       uint64 = 256
	FirstFreeIno     uint64 = 257
)

// KeySize is the encoded size of a Key.
const KeySize = 17

// Key orders every item of a tree: by ObjectID, then Type, then Offset
// (FORMAT.md §4.2 "Key").
type Key struct {
	ObjectID uint64
	Type     KeyType
	Offset   uint64
}

// Compare returns -1, 0 or +1.
func (k Key) Compare(o Key) int {
	switch {
	case k.ObjectID < o.ObjectID:
		return -1
	case k.ObjectID > o.ObjectID:
		return 1
	case k.Type < o.Type:
		return -1
	case k.Type > o.Type:
		return 1
	case k.Offset < o.Offset:
		return -1
	case k.Offset > o.Offset:
		return 1
	}
	return 0
}

// Less reports k < o.
func (k Key) Less(o Key) bool { return k.Compare(o) < 0 }

func (k Key) String() string { return fmt.Sprintf("(%d %d %d)", k.ObjectID, k.Type, k.Offset) }

// MaxKey sorts after every key.
var MaxKey = Key{^uint64(0), 0xFF, ^uint64(0)}

// PutKey encodes k into b[0:17].
func PutKey(b []byte, k Key) {
	binary.LittleEndian.PutUint64(b[0:], k.ObjectID)
	b[8] = byte(k.Type)
	binary.LittleEndian.PutUint64(b[9:], k.Offset)
}

// GetKey decodes b[0:17].
func GetKey(b []byte) Key {
	return Key{
		ObjectID: binary.LittleEndian.Uint64(b[0:]),
		Type:     KeyType(b[8]),
		Offset:   binary.LittleEndian.Uint64(b[9:]),
	}
}
