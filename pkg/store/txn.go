package store

import (
	"fmt"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/alloc"
	"github.com/ddfs/ddfs/pkg/btree"
)

type metaRef struct {
	owner format.TreeID
	level uint8
}

// Txn is the running transaction: every tree change lands in dirty nodes
// that reach the devices only at Commit. One at a time per FS.
type Txn struct {
	fs    *FS
	gen   uint64
	trees [format.NumTrees + 1]*btree.Tree
	dirty map[uint64]*format.Node
	// newMeta and freedMeta are the metadata extent items to add and
	// delete at commit.
	newMeta   map[uint64]metaRef
	freedMeta map[uint64]metaRef
	// refChanges are pending refs changes of shared nodes (snapshot.go).
	refChanges map[uint64]refChange
	pinned     []alloc.Range
	// freedStripes are device ranges a relocation took chunk stripes off:
	// the committed state still uses them, so nothing may be placed there
	// before the commit.
	freedStripes map[uint64][]alloc.Range
	// pinnedRecorded counts pinned ranges already in the discard records.
	pinnedRecorded int
	newChunks      []*BlockGroup
	// chunksFolded counts newChunks already recorded in the trees.
	chunksFolded int
	devDirty     bool
	// addedDevs are devices that become members in this commit.
	addedDevs map[uint64]bool
	hint      map[format.ChunkType]uint64
	// openRows are the parity rows this transaction may write since the
	// last durable point (parityrows.go); keyed by logical start.
	openRows map[uint64]bool
	// tierFull: tiers where a data chunk did not fit (AllocDataOn).
	tierFull map[int]bool
	// Fallbacks counts chunks the policy had to place outside its
	// preferred devices.
	Fallbacks  int
	dedupeHits uint64
	// counters run from the committed ones while countersKnown
	// (ItemChanged); see finalCounters.
	counters      format.Counters
	countersKnown bool
	// receiving: a receive parked the live tree; the fs tree's items
	// change no counter (counters.go).
	receiving bool
	settings  *format.Settings
	// incompat: features the commit's trees need (NeedIncompat).
	incompat format.IncompatFeatures
	// unparked: a receive ended in this transaction (receive.go).
	unparked bool
	// dropsDone: the last DROP_ITEM went in this transaction (drop.go).
	dropsDone bool
	// superChange edits the committed superblock (fsid change, §3.8).
	superChange func(*format.Superblock)
	// logBlocks are the fsync log blocks this transaction wrote, freed at
	// its commit; scratch: never commits (BeginScratch).
	logBlocks []alloc.Range
	scratch   bool
}

// SetSettings changes the filesystem settings from this commit on, and
// sets the incompat features they need.
func (tx *Txn) SetSettings(s format.Settings) { tx.settings = &s }

// NeedIncompat sets incompat features the trees of this commit need
// whatever the settings (offline dedupe fills the dedupe tree while
// inband dedupe is off).
func (tx *Txn) NeedIncompat(f format.IncompatFeatures) { tx.incompat |= f }

// AddDedupeHits adds to the dedupe hit counter the commit stores.
func (tx *Txn) AddDedupeHits(n uint64) { tx.dedupeHits += n }

// Begin starts a transaction.
func (fs *FS) Begin() (*Txn, error) {
	if fs.sb.LogRoot != 0 && !fs.replaying {
		return nil, fmt.Errorf("%w: replay it first (a writable open does)", ErrLogPending)
	}
	return fs.begin()
}

func (fs *FS) begin() (*Txn, error) {
	if !fs.Vol.Writable() && !fs.scratch {
		return nil, ErrReadOnly
	}
	if fs.tx != nil {
		return nil, ErrBusy
	}
	if fs.broken {
		return nil, fmt.Errorf("an earlier transaction failed; reopen the filesystem: %w", ErrBusy)
	}
	tx := &Txn{
		fs: fs, gen: fs.sb.Generation + 1,
		dirty: map[uint64]*format.Node{}, newMeta: map[uint64]metaRef{}, freedMeta: map[uint64]metaRef{},
		hint: map[format.ChunkType]uint64{},
	}
	tx.counters, tx.countersKnown = fs.Counters()
	for id := format.TreeID(1); id <= format.NumTrees; id++ {
		tx.trees[id] = btree.New(tx, id, fs.sb.Roots.Root(id))
	}
	if fs.sb.Incompat&format.IncompatReceive != 0 {
		_, ok, err := receivingIn(tx.trees[format.SnapshotTree])
		if err != nil {
			return nil, err
		}
		tx.receiving = ok
	}
	fs.tx = tx
	return tx, nil
}

// Generation is the generation this transaction commits.
func (tx *Txn) Generation() uint64 { return tx.gen }

// Tree returns the writable handle of tree id.
func (tx *Txn) Tree(id format.TreeID) *btree.Tree { return tx.trees[id] }

// ResetTree gives tree id no root in this transaction and returns its new
// handle: fsck rebuilds a tree some of whose nodes no copy reads from
// the items of the rest. The old nodes keep their metadata items (fsck
// frees them as leaked); the counters are recounted at the commit.
func (tx *Txn) ResetTree(id format.TreeID) *btree.Tree {
	tx.trees[id] = btree.New(tx, id, format.RootPtr{})
	tx.RecountCounters()
	return tx.trees[id]
}

// FS returns the filesystem.
func (tx *Txn) FS() *FS { return tx.fs }

// DirtyNodes is the number of nodes waiting for the commit; callers
// commit in batches to keep memory bounded.
func (tx *Txn) DirtyNodes() int { return len(tx.dirty) }

// ReadNode implements btree.Store.
func (tx *Txn) ReadNode(owner format.TreeID, logical, gen uint64, level int) (*format.Node, error) {
	if n, ok := tx.dirty[logical]; ok {
		return n, nil
	}
	return tx.fs.readNode(owner, logical, gen, level, nil)
}

// ReadChild implements btree.ChildReader.
func (tx *Txn) ReadChild(owner format.TreeID, p format.KeyPtr, level int) (*format.Node, error) {
	if n, ok := tx.dirty[p.Logical]; ok {
		return n, nil
	}
	return tx.fs.readNode(owner, p.Logical, p.Generation, level, &p.Key)
}

func chunkTypeOf(owner format.TreeID) format.ChunkType {
	if owner == format.ChunkTree {
		return format.ChunkSystem
	}
	return format.ChunkMetadata
}

// nodeFSID is the fsid new nodes carry: the new one while a change is in
// progress (FORMAT.md §3.8), so the change never has to revisit them.
func (fs *FS) nodeFSID() [16]byte {
	if fs.sb.NewFSID != [16]byte{} {
		return fs.sb.NewFSID
	}
	return fs.sb.FSID
}

// NewNode implements btree.Store.
func (tx *Txn) NewNode(owner format.TreeID, level uint8) (*format.Node, error) {
	ns := uint64(tx.fs.sb.NodeSize)
	logical, err := tx.allocExtent(chunkTypeOf(owner), ns, ns)
	if err != nil {
		return nil, fmt.Errorf("new %v tree node: %w", owner, err)
	}
	n := &format.Node{NodeHeader: format.NodeHeader{FSID: tx.fs.nodeFSID(), Logical: logical, Generation: tx.gen, Owner: owner, Level: level}}
	tx.dirty[logical] = n
	tx.newMeta[logical] = metaRef{owner, level}
	return n, nil
}

// IsDirty implements btree.Store.
func (tx *Txn) IsDirty(n *format.Node) bool { return tx.dirty[n.Logical] == n }

// FreeNode implements btree.Store.
func (tx *Txn) FreeNode(n *format.Node) error {
	ns := uint64(tx.fs.sb.NodeSize)
	if tx.IsDirty(n) {
		delete(tx.dirty, n.Logical)
		delete(tx.newMeta, n.Logical)
		return tx.freeExtent(n.Logical, ns, true)
	}
	if shared, err := tx.unshare(n); err != nil || shared {
		return err
	}
	return tx.freeCommittedNode(n)
}

// freeCommittedNode frees a node of the committed state: its space once
// the commit is durable, its metadata item at the commit.
func (tx *Txn) freeCommittedNode(n *format.Node) error {
	if _, dup := tx.freedMeta[n.Logical]; dup {
		return fmt.Errorf("node %d freed twice: %w", n.Logical, ErrCorrupt)
	}
	tx.freedMeta[n.Logical] = metaRef{n.Owner, n.Level}
	delete(tx.refChanges, n.Logical)
	tx.fs.cache.drop(n.Logical)
	return tx.freeExtent(n.Logical, uint64(tx.fs.sb.NodeSize), false)
}

// NodeSize implements btree.Store.
func (tx *Txn) NodeSize() uint32 { return tx.fs.sb.NodeSize }

// Abort drops the transaction. The in-memory allocation state may have
// moved on, so the FS must be closed afterwards.
func (tx *Txn) Abort() {
	tx.fs.tx = nil
	tx.fs.broken = true
}

// UpdateSettings changes the filesystem settings in a transaction of its
// own (dedupe-tool enable/disable, prop set on the image).
func (fs *FS) UpdateSettings(change func(*format.Settings) error) error {
	tx, err := fs.Begin()
	if err != nil {
		return err
	}
	s := fs.sb.Settings
	if err := change(&s); err != nil {
		tx.Abort()
		return err
	}
	tx.SetSettings(s)
	return tx.Commit()
}
