package format

import "fmt"

// Version is the on-disk format version (FORMAT.md §2 "Versions and
// features"). Versions are ordered; a reader supports [MinSupported, Current].
type Version uint32

const (
	// Version1 is the first format: superblock, chunk tree, COW B+trees.
	Version1 Version = 1

	MinSupportedVersion = Version1
	CurrentVersion      = Version1
)

// Feature flag sets (FORMAT.md §2). A reader that finds an unknown bit in
// Incompat must refuse the image; unknown RoCompat bits allow read-only
// access; unknown Compat bits are ignored.
type (
	CompatFeatures   uint64
	RoCompatFeatures uint64
	IncompatFeatures uint64
)

const (
	// RoCompatFreeSpaceTree: free ranges of each block group are cached in
	// the free-space tree (tree 6). Writers unaware of it would leave it stale.
	RoCompatFreeSpaceTree RoCompatFeatures = 1 << 0
	// CompatDiscardTree: the discard tree (tree 7) records freed ranges
	// not yet discarded. Records are hints intersected with free space
	// before use, so a writer unaware of the tree stays safe (it only
	// leaves some space untrimmed).
	// RoCompatCounters: the superblock's counters (FORMAT.md §3.9) are
	// exact. A writer unaware of them would leave them stale.
	RoCompatCounters  RoCompatFeatures = 1 << 1
	CompatDiscardTree CompatFeatures   = 1 << 0

	// IncompatCompression: file extents may be compressed (zstd, s2).
	IncompatCompression IncompatFeatures = 1 << 0
	// IncompatDedupe: data extents may be shared through the dedupe tree.
	IncompatDedupe IncompatFeatures = 1 << 1
	// IncompatRaid56: chunks may use the raid5/raid6 profiles.
	IncompatRaid56 IncompatFeatures = 1 << 2
	// IncompatFSIDChange: a change of the filesystem UUID is in progress
	// (FORMAT.md §3.8): node headers may carry fsid or new_fsid. A reader
	// that does not know it would take half the nodes for foreign blocks.
	IncompatFSIDChange IncompatFeatures = 1 << 3
	// IncompatFsyncLog: an fsync log is pending (FORMAT.md §3.10): files
	// have data only its replay makes visible. Set exactly while the
	// superblock's log_root is non-zero.
	IncompatFsyncLog IncompatFeatures = 1 << 4
	// IncompatSnapshots: the image may hold snapshots (FORMAT.md §6.12):
	// the snapshot tree and fs-tree nodes and data extents shared by
	// several trees.
	IncompatSnapshots IncompatFeatures = 1 << 5
	// IncompatReceive: a receive is in progress (FORMAT.md §6.13): the
	// root set's fs tree is the tree being received, the live one is
	// parked in the RECEIVE_ITEM. Set exactly while that item exists.
	IncompatReceive IncompatFeatures = 1 << 6
	// IncompatDropping: a deleted tree is being freed in steps (FORMAT.md
	// §6.12): the snapshot tree holds DROP_ITEMs. Set exactly while one
	// exists.
	IncompatDropping IncompatFeatures = 1 << 7
)

// Feature sets this build understands.
const (
	SupportedCompat   CompatFeatures   = CompatDiscardTree
	SupportedRoCompat RoCompatFeatures = RoCompatCounters
	SupportedIncompat IncompatFeatures = IncompatCompression | IncompatDedupe | IncompatFSIDChange | IncompatFsyncLog | IncompatSnapshots | IncompatReceive | IncompatRaid56 | IncompatDropping
)

// CheckFeatures reports whether a reader (write=false) or writer may use an
// image with these features.
func CheckFeatures(c CompatFeatures, ro RoCompatFeatures, in IncompatFeatures, write bool) error {
	if unknown := in &^ SupportedIncompat; unknown != 0 {
		return fmt.Errorf("image uses incompatible features 0x%x that this ddfs does not support: %w", uint64(unknown), ErrUnsupported)
	}
	if unknown := ro &^ SupportedRoCompat; write && unknown != 0 {
		return fmt.Errorf("image uses read-only-compatible features 0x%x: it can be read but not written by this ddfs: %w", uint64(unknown), ErrUnsupported)
	}
	return nil
}
