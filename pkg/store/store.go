// Package store is an opened ddfs filesystem: the device set, the chunk
// map loaded from the chunk tree, the block groups and their free space,
// a node cache, and transactions that change the trees and commit them
// atomically (new nodes, flush, superblocks, flush).
package store

import (
	"bytes"
	"github.com/google/uuid"

	"errors"
	"fmt"
	"sort"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/alloc"
	"github.com/ddfs/ddfs/pkg/btree"
	"github.com/ddfs/ddfs/pkg/volume"
)

// Sentinel errors callers test with errors.Is.
var (
	ErrNoSpace  = alloc.ErrNoSpace
	ErrCorrupt  = format.ErrCorrupt
	ErrBusy     = errors.New("transaction already running")
	ErrReadOnly = errors.New("filesystem opened read-only")
	// ErrTruncated: a member is smaller than its device item says.
	ErrTruncated = errors.New("truncated")
)

// FS is an opened filesystem. It is not safe for concurrent use.
type FS struct {
	Vol   *volume.Volume
	sb    format.Superblock // the committed state
	cache *nodeCache
	hints [format.NumTrees]btree.Hints // leaves of each committed tree that lookups reached last
	// roTrees are the handles Tree gave out, each valid while its tree's
	// root is the committed one (a handle is read-only: sharing it is
	// safe; a new one per lookup was an allocation per 4K read on a mount).
	roTrees  [format.NumTrees]*btree.Tree
	bgs      []*BlockGroup // sorted by logical
	devItems map[uint64]*format.DevItem
	tx       *Txn
	// readerHold is the space commits freed that readers beside this
	// writer may still read (readers.go), oldest commit first.
	readerHold []freedAt
	// broken is set when a transaction failed half-way: the in-memory
	// state no longer matches the disk, so no new transaction may start.
	broken bool
	// sharedGen: fs-tree nodes of this generation or older may be shared
	// with a snapshot (the newest snapshot root's generation; §6.12).
	sharedGen uint64
	// Compact makes new chunks small and packed low on the devices (mkfs
	// --shrink); it is not stored.
	Compact bool
	// Profiles for new chunks, taken from the newest chunk of each kind.
	dataProfile, metaProfile format.Profile
	disc                     discardState
	fallbacks                int // chunks placed outside the policy's preference
	// tierCache ranks the devices for the policy; nil after a device
	// changes. tierEpoch counts rankings, so block groups know when
	// their cached tier is stale.
	tierCache *alloc.Tiers
	tierEpoch int
	// derivedNonces: commit nonces come from fsid and generation, not
	// chance (a filesystem being created: reproducible images).
	derivedNonces bool
	// missing lists the members a degraded open went without.
	missing []*volume.MissingDeviceError
	heal    healState
	ahead   readAhead // raw nodes after the last one read (read-only sets)
	// repair (OpenForRepair): a chunk may lack its block group item, and
	// space the trees use that the extent tree calls free is kept out of
	// the free map instead of failing the transaction.
	repair bool
	// replaying: the registered replayer runs (a pending log allows no
	// other transaction); scratch: BeginScratch on a read-only set.
	replaying, scratch bool
	// LogBlocks counts the fsync log blocks written since the open.
	LogBlocks int
	// leaving are devices new stripes must not use (device remove);
	// sizeCap lowers a device's usable size for placement (shrink).
	leaving map[uint64]bool
	sizeCap map[uint64]uint64
	reloc   RelocStats
	// sysArray is the superblock's system chunk array against the chunk
	// tree (ErrSysArray), nil when they agree.
	sysArray error
	// live caches liveNodes for one committed generation.
	live struct {
		gen   uint64
		nodes []uint64
	}
}

// cacheNodes bounds the clean node cache (x nodesize bytes of memory).
const cacheNodes = 2048

// Open opens the filesystem that specs belong to.
func Open(specs []string, opt volume.Options) (*FS, error) {
	vol, err := volume.Open(specs, opt)
	if err != nil {
		return nil, err
	}
	fs, err := openVolume(vol, opt)
	if err != nil {
		vol.Close()
		return nil, err
	}
	return fs, nil
}

func openVolume(vol *volume.Volume, opt volume.Options) (*FS, error) {
	return openVolumeWith(vol, opt, false)
}

// openVolumeWith is openVolume; repair opens for fsck's repair
// (OpenForRepair).
func openVolumeWith(vol *volume.Volume, opt volume.Options, repair bool) (*FS, error) {
	fs := &FS{Vol: vol, sb: *vol.Super, cache: newNodeCache(cacheNodes), devItems: map[uint64]*format.DevItem{}, disc: newDiscardState(), repair: repair}
	sb := &fs.sb
	if err := format.CheckFeatures(sb.Compat, sb.RoCompat, sb.Incompat, opt.Write); err != nil {
		return nil, err
	}
	if err := fs.loadChunkTree(); err != nil {
		return nil, err
	}
	if fs.sysArray != nil && opt.Write {
		return nil, fmt.Errorf("%w; writing could land on live data: run fsck.ddfs", fs.sysArray)
	}
	if err := fs.findDevices(opt); err != nil {
		return nil, err
	}
	if err := fs.loadBlockGroups(); err != nil {
		return nil, err
	}
	if opt.Write {
		if err := fs.refuseOlderReaders(opt.Wait); err != nil {
			return nil, err
		}
		if err := fs.loadDiscardRecords(); err != nil {
			return nil, err
		}
	}
	fs.setProfiles()
	if err := fs.loadSharedGen(); err != nil {
		return nil, err
	}
	if fs.sb.LogRoot != 0 && opt.Write {
		// Before anything can allocate over what the log references.
		if err := fs.replayLog(); err != nil {
			return nil, err
		}
	}
	return fs, nil
}

// Super returns a copy of the committed superblock.
func (fs *FS) Super() format.Superblock { return fs.sb }

// DevItems returns the device items sorted by devid.
func (fs *FS) DevItems() []*format.DevItem {
	out := make([]*format.DevItem, 0, len(fs.devItems))
	for _, d := range fs.devItems {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].DevID < out[j].DevID })
	return out
}

// AllocatedBytes is the device bytes given to chunks, summed over the
// devices (DevItems' BytesUsed), without DevItems' sorted copy: statfs
// asks on every write of a mount.
func (fs *FS) AllocatedBytes() uint64 {
	var n uint64
	for _, d := range fs.devItems {
		n += d.BytesUsed
	}
	return n
}

// BlockGroups returns the block groups in logical order.
func (fs *FS) BlockGroups() []*BlockGroup { return fs.bgs }

// Tree returns a read-only handle on the committed state of tree id. Its
// lookups share the FS's hints for the tree, so the handles a walk asks
// for one by one still find the leaves the previous ones reached.
func (fs *FS) Tree(id format.TreeID) *btree.Tree {
	root := fs.sb.Roots.Root(id)
	if t := fs.roTrees[id-1]; t != nil && t.Root() == root {
		return t
	}
	t := btree.New(readOnly{fs}, id, root)
	t.UseHints(&fs.hints[id-1])
	fs.roTrees[id-1] = t
	return t
}

// loadChunkTree adds the chunk tree's chunks to the map (replacing the
// bootstrap array's) and compares the array with the tree. Bad copies
// are left alone while it reads: the array it maps them with is not yet
// known to be true, and a heal would write a good copy wherever a lying
// array points.
func (fs *FS) loadChunkTree() error {
	defer fs.HoldHealing()()
	sys := map[uint64][]byte{}
	t := fs.Tree(format.ChunkTree)
	it := t.First()
	for ; it.Valid(); it.Next() {
		item := it.Item()
		switch {
		case item.Key.Type == format.DevItemKey:
			d, err := format.UnmarshalDevItem(item.Data)
			if err != nil {
				return fmt.Errorf("chunk tree: %w", err)
			}
			fs.devItems[d.DevID] = d
		case item.Key.Type == format.ChunkItemKey:
			c, n, err := format.UnmarshalChunkItem(item.Data)
			if err == nil && n != len(item.Data) {
				err = fmt.Errorf("%d trailing bytes: %w", len(item.Data)-n, ErrCorrupt)
			}
			if err == nil {
				err = format.CheckChunkAgainst(c, &fs.sb)
			}
			if err != nil {
				return fmt.Errorf("chunk tree: chunk %d: %w", item.Key.Offset, err)
			}
			if c.Type == format.ChunkSystem {
				sys[item.Key.Offset] = bytes.Clone(item.Data)
			}
			if err := fs.Vol.AddChunk(item.Key.Offset, c); err != nil {
				return err
			}
		}
	}
	// The walk's own error: a leaf that cannot be read mid-way must not
	// read as the end of the chunks.
	if err := it.Err(); err != nil {
		return fmt.Errorf("read chunk tree: %w", err)
	}
	fs.sysArray = sysArrayDiff(&fs.sb, sys)
	return nil
}

// findDevices opens devices named by path hints and reports missing ones
// (degraded.go decides whether the set may open without them).
func (fs *FS) findDevices(opt volume.Options) error {
	var missing []*volume.MissingDeviceError
	for _, d := range fs.DevItems() {
		if _, ok := fs.Vol.Device(d.DevID); ok {
			continue
		}
		hint, follow := fs.Vol.HintPath(d.Path)
		err := fs.Vol.Unusable(d.DevID)
		if follow && err == nil {
			if err = fs.Vol.AddDevice(hint, d.DevID, opt); err == nil {
				continue
			}
			if volume.Refused(err) {
				return err // found but must not be used: never degraded away
			}
		}
		m := missingDevice(d, err)
		if m.Err == nil {
			m.Unread = fs.Vol.Unread()
		}
		missing = append(missing, m)
	}
	for _, d := range fs.DevItems() {
		if err := fs.Vol.CheckOwnHint(d.DevID, d.Path); err != nil {
			return err
		}
	}
	missing = append(missing, fs.dropTruncated()...)
	if err := fs.acceptMissing(missing, opt); err != nil {
		return err
	}
	if uint64(len(fs.devItems)) != fs.sb.NumDevices {
		return fmt.Errorf("superblock says %d devices, chunk tree has %d: %w", fs.sb.NumDevices, len(fs.devItems), ErrCorrupt)
	}
	for _, d := range fs.Vol.Devices() {
		item, ok := fs.devItems[d.ID]
		if !ok && d.Super != nil && d.Super.Generation < fs.sb.Generation {
			// Removed from the set by a commit that a crash kept from
			// wiping its superblocks (device remove): not a member. A
			// writer finishes the wipe before its first commit, while the
			// device's generation is still in the set's backup roots.
			gone := fs.Vol.DetachDevice(d.ID)
			if opt.Write {
				_ = wipeSupers(gone) // best effort: readers ignore it either way
			}
			gone.Dev.Close()
			continue
		}
		if !ok {
			return fmt.Errorf("%s: device %d is not in the chunk tree: %w", d.Path, d.ID, ErrCorrupt)
		}
		// A writer writes only to devices the set knows by UUID as well
		// (FORMAT.md §3.7 step 6); fsck reports a mismatch.
		if opt.Write && item.UUID != d.UUID {
			return fmt.Errorf("%s: device %d has uuid %s, the chunk tree says %s: %w", d.Path, d.ID, uuid.UUID(d.UUID), uuid.UUID(item.UUID), ErrCorrupt)
		}
	}
	return nil
}

// dropTruncated sets aside the members smaller than their device items
// say (a truncated image file): a write into the lost tail would fail in
// the middle of a commit, so such a member counts as missing.
func (fs *FS) dropTruncated() []*volume.MissingDeviceError {
	var out []*volume.MissingDeviceError
	for _, d := range fs.Vol.Devices() {
		item, ok := fs.devItems[d.ID]
		if !ok || d.Dev.Size() < 0 || item.TotalBytes <= uint64(d.Dev.Size()) {
			continue
		}
		err := fmt.Errorf("%s is %d bytes, the set gave it %d: %w", d.Path, d.Dev.Size(), item.TotalBytes, ErrTruncated)
		fs.Vol.DetachDevice(d.ID).Dev.Close()
		out = append(out, missingDevice(item, err))
	}
	return out
}

// Close releases the devices. An uncommitted transaction is dropped.
func (fs *FS) Close() error {
	if fs.tx != nil {
		// An uncommitted transaction is dropped; its in-memory state
		// must not reach the disk through the discard cleanup below.
		fs.tx.Abort()
	}
	var err error
	if fs.sb.Settings.Discard == format.DiscardAsync && !fs.broken && fs.Vol.Writable() {
		// The command ends: discard what async batched (the last commit
		// made it free and durable).
		fs.discardPending()
	}
	if fs.disc.dirty() && !fs.broken && fs.Vol.Writable() {
		// Drop the records of what was discarded since the last commit,
		// or the next writer repeats those discards.
		var tx *Txn
		if tx, err = fs.Begin(); err == nil {
			err = tx.Commit()
		}
	}
	return errors.Join(err, fs.Vol.Close())
}

// readOnly is the btree.Store for committed trees.
type readOnly struct{ fs *FS }

func (r readOnly) ReadNode(owner format.TreeID, logical, gen uint64, level int) (*format.Node, error) {
	return r.fs.readNode(owner, logical, gen, level, nil)
}

// ReadChild implements btree.ChildReader.
func (r readOnly) ReadChild(owner format.TreeID, p format.KeyPtr, level int) (*format.Node, error) {
	return r.fs.readNode(owner, p.Logical, p.Generation, level, &p.Key)
}
func (r readOnly) NewNode(format.TreeID, uint8) (*format.Node, error) { return nil, ErrReadOnly }
func (r readOnly) IsDirty(*format.Node) bool                          { return false }
func (r readOnly) FreeNode(*format.Node) error                        { return ErrReadOnly }
func (r readOnly) NodeSize() uint32                                   { return r.fs.sb.NodeSize }

// NodeError locates a node that could not be read from any copy.
type NodeError struct {
	Tree    format.TreeID
	Logical uint64
	Err     error
}

func (e *NodeError) Error() string {
	return fmt.Sprintf("%v tree node at logical %d: %v", e.Tree, e.Logical, e.Err)
}
func (e *NodeError) Unwrap() error { return e.Err }

// readNode reads a committed node: the copy that fits its place (first
// is the parent pointer's key, nil for a root or when not known).
func (fs *FS) readNode(owner format.TreeID, logical, gen uint64, level int, first *format.Key) (*format.Node, error) {
	if n := fs.cache.get(logical); n != nil && (gen == 0 || n.Generation == gen) && n.Owner == owner && (level < 0 || int(n.Level) == level) {
		return n, nil
	}
	want := format.NodeExpect{FSID: fs.sb.FSID, AltFSID: fs.sb.NewFSID, Logical: logical, Generation: gen, Owner: owner, Level: level}
	n, err := fs.readNodeHealing(Place{want, first})
	if err != nil {
		return nil, &NodeError{owner, logical, err}
	}
	fs.cache.put(n)
	return n, nil
}

// ReadNodeCopy reads a node from copy mirror (-1: the first copy that
// validates) without the cache; fsck uses it to check every copy.
func (fs *FS) ReadNodeCopy(want format.NodeExpect, mirror int) (*format.Node, error) {
	buf := make([]byte, fs.sb.NodeSize)
	copies := fs.Vol.Copies(want.Logical)
	if copies == 0 {
		return nil, fmt.Errorf("logical %d is in no chunk: %w", want.Logical, ErrCorrupt)
	}
	first, last := 0, copies-1
	if mirror >= 0 {
		first, last = mirror, mirror
	}
	var errs error
	for m := first; m <= last; m++ {
		if err := fs.Vol.ReadCopy(want.Logical, buf, m); err != nil {
			errs = errors.Join(errs, fmt.Errorf("copy %d: %w", m, err))
			continue
		}
		n, err := format.UnmarshalNode(buf, fs.sb.CsumType, want)
		if err == nil {
			return n, nil
		}
		errs = errors.Join(errs, fmt.Errorf("copy %d: %w", m, err))
	}
	return nil, errs
}

// OpenVolume opens the filesystem on an already opened volume (tests,
// crash replay). On failure the volume stays open.
func OpenVolume(vol *volume.Volume) (*FS, error) {
	return openVolume(vol, volume.Options{Write: vol.Writable(), NoScan: true})
}

// OpenForRepair is OpenVolume for fsck's repair: a chunk without a block
// group item (BG_MISSING) gets a block group with nothing used whose item
// the next commit writes (fsck sets Used to the extents' sum first). Every
// other open refuses such a filesystem. Space that the trees use and the
// extent tree calls free (a lost METADATA_ITEM or EXTENT_ITEM) is never
// allocated: "in use" wins, where a writer's transaction fails with
// ErrSpaceInUse.
func OpenForRepair(vol *volume.Volume) (*FS, error) {
	return openVolumeWith(vol, volume.Options{Write: vol.Writable(), NoScan: true}, true)
}

// ReadNode reads a committed node through the node cache, every copy
// tried until one validates against what its parent expects (gen 0 and
// level -1: not known).
func (fs *FS) ReadNode(owner format.TreeID, logical, gen uint64, level int) (*format.Node, error) {
	return fs.readNode(owner, logical, gen, level, nil)
}
