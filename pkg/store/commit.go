package store

import (
	"fmt"
	"sort"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/volume"
)

// maxCommitPasses bounds the loop that folds allocation changes into the
// extent tree (each pass may allocate nodes, which the next pass records).
const maxCommitPasses = 64

// Commit makes the transaction durable and visible: it records new chunks,
// device usage and metadata extents in the trees, writes every dirty node
// to all its copies, flushes, writes the superblocks of every device and
// flushes again. A crash before the superblocks are durable leaves the
// previous generation, whose nodes were never overwritten.
func (tx *Txn) Commit() error {
	fs := tx.fs
	if fs.tx != tx {
		return fmt.Errorf("commit of a finished transaction")
	}
	if tx.scratch {
		tx.Abort()
		return ErrReadOnly
	}
	if err := tx.releaseLog(); err != nil {
		tx.Abort()
		return err
	}
	if err := tx.foldAllocations(); err != nil {
		tx.Abort()
		return err
	}
	if err := tx.finalCounters(); err != nil {
		tx.Abort()
		return err
	}
	for _, id := range []format.TreeID{format.ChunkTree, format.ExtentTree, format.FSTree} {
		if tx.trees[id].Root().Logical == 0 {
			tx.Abort()
			return fmt.Errorf("commit: %v tree has no root", id)
		}
	}
	if checkInvariants {
		for id := format.TreeID(1); id <= format.NumTrees; id++ {
			if err := tx.trees[id].Verify(); err != nil {
				tx.Abort()
				return fmt.Errorf("commit: invariant check: %w", err)
			}
		}
	}
	if err := tx.writeNodes(); err != nil {
		tx.Abort()
		return err
	}
	if err := fs.Vol.Flush(); err != nil {
		tx.Abort()
		return err
	}
	sb := tx.nextSuper()
	if err := tx.writeSupers(&sb); err != nil {
		tx.Abort()
		return err
	}
	if err := fs.Vol.Flush(); err != nil {
		tx.Abort()
		return err
	}
	// Durable: now the pinned space is free and the dirty nodes are clean.
	fs.sb = sb
	released, err := fs.releaseFreed(tx.gen, tx.pinned)
	if err != nil {
		return err
	}
	for _, n := range tx.dirty {
		fs.cache.put(n)
	}
	for _, bg := range tx.newChunks {
		bg.isNew = false
	}
	fs.tx = nil
	fs.fallbacks += tx.Fallbacks
	tx.discardAfterCommit(released)
	return nil
}

// writeSupers writes every device's superblocks; those of devices this
// transaction adds go first and are flushed before any other device's
// superblock names them (writes between flushes may land in any order).
func (tx *Txn) writeSupers(sb *format.Superblock) error {
	vol := tx.fs.Vol
	if len(tx.addedDevs) == 0 {
		return vol.WriteSupers(sb)
	}
	if err := vol.WriteSupersOf(sb, func(d *volume.Dev) bool { return tx.addedDevs[d.ID] }); err != nil {
		return err
	}
	if err := vol.Flush(); err != nil {
		return err
	}
	return vol.WriteSupersOf(sb, func(d *volume.Dev) bool { return !tx.addedDevs[d.ID] })
}

// FallbackChunks counts the chunks committed since the FS was opened that
// the allocation policy had to place outside its preferred devices.
func (fs *FS) FallbackChunks() int { return fs.fallbacks }

// foldAllocations records chunk, device and extent changes in the trees
// until a pass changes nothing more.
func (tx *Txn) foldAllocations() error {
	fs := tx.fs
	chunk, ext := tx.trees[format.ChunkTree], tx.trees[format.ExtentTree]
	for pass := 0; ; pass++ {
		if pass == maxCommitPasses {
			return fmt.Errorf("commit: allocation changes did not settle after %d passes", pass)
		}
		progressed := false
		if chunks := tx.newChunks[tx.chunksFolded:]; len(chunks) > 0 {
			tx.chunksFolded = len(tx.newChunks)
			progressed = true
			for _, bg := range chunks {
				c := bg.Chunk
				k := format.Key{ObjectID: format.ChunkObjectID, Type: format.ChunkItemKey, Offset: c.Logical}
				if err := chunk.Insert(k, format.MarshalChunkItem(c.ChunkItem)); err != nil {
					return fmt.Errorf("record chunk %d: %w", c.Logical, err)
				}
				// Put, not Insert: a chunk made during an earlier pass may
				// already have its item from the usage loop below.
				item := &format.BlockGroupItem{Used: bg.Used, Type: c.Type, Profile: c.Profile, Flags: bg.flags}
				if err := ext.Put(bgKey(c), format.MarshalBlockGroupItem(item)); err != nil {
					return fmt.Errorf("record block group %d: %w", c.Logical, err)
				}
				// What was stored, not bg.Used: the Put itself may take a
				// node from this very group, and the usage loop below must
				// then see the difference and write the item again.
				bg.itemUsed = item.Used
			}
			tx.devDirty = true
		}
		if tx.devDirty {
			tx.devDirty = false
			progressed = true
			for _, d := range fs.DevItems() {
				k := format.Key{ObjectID: format.DevItemsObjectID, Type: format.DevItemKey, Offset: d.DevID}
				if err := chunk.Put(k, format.MarshalDevItem(d)); err != nil {
					return fmt.Errorf("record device %d: %w", d.DevID, err)
				}
			}
		}
		if folded, err := tx.foldRefChanges(); err != nil {
			return err
		} else if folded {
			progressed = true
		}
		if len(tx.newMeta) > 0 || len(tx.freedMeta) > 0 {
			progressed = true
			added, freed := tx.newMeta, tx.freedMeta
			tx.newMeta, tx.freedMeta = map[uint64]metaRef{}, map[uint64]metaRef{}
			for _, l := range sortedKeys(freed) {
				r := freed[l]
				if err := ext.Delete(format.Key{ObjectID: l, Type: format.MetadataItemKey, Offset: uint64(r.level)}); err != nil {
					return fmt.Errorf("drop metadata extent %d: %w", l, err)
				}
			}
			for _, l := range sortedKeys(added) {
				r := added[l]
				// A node added in an earlier pass may have been freed since.
				if _, live := tx.dirty[l]; !live {
					continue
				}
				item := format.MarshalMetadataItem(&format.MetadataItem{Refs: 1, Generation: tx.gen, Owner: r.owner})
				if err := ext.Insert(format.Key{ObjectID: l, Type: format.MetadataItemKey, Offset: uint64(r.level)}, item); err != nil {
					return fmt.Errorf("record metadata extent %d: %w", l, err)
				}
			}
		}
		tx.recordFreed()
		if changed, err := tx.reconcileDiscardTree(); err != nil {
			return err
		} else if changed {
			progressed = true
		}
		for _, bg := range fs.bgs {
			if bg.Used == bg.itemUsed {
				continue
			}
			progressed = true
			bg.itemUsed = bg.Used
			item := &format.BlockGroupItem{Used: bg.Used, Type: bg.Chunk.Type, Profile: bg.Chunk.Profile, Flags: bg.flags}
			if err := ext.Put(bgKey(bg.Chunk), format.MarshalBlockGroupItem(item)); err != nil {
				return fmt.Errorf("record block group %d: %w", bg.Chunk.Logical, err)
			}
		}
		if !progressed {
			return nil
		}
	}
}

func sortedKeys(m map[uint64]metaRef) []uint64 {
	out := make([]uint64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// writeNodes writes every dirty node, in logical order, to all copies.
func (tx *Txn) writeNodes() error {
	fs := tx.fs
	logicals := make([]uint64, 0, len(tx.dirty))
	for l := range tx.dirty {
		logicals = append(logicals, l)
	}
	sort.Slice(logicals, func(i, j int) bool { return logicals[i] < logicals[j] })
	buf := make([]byte, fs.sb.NodeSize) // devices do not keep what they write
	for _, l := range logicals {
		n := tx.dirty[l]
		if n.SumUsedBytes() > int(fs.sb.NodeSize)-format.NodeHeaderSize {
			return fmt.Errorf("node %d overfull at commit: %w", l, ErrCorrupt)
		}
		if err := fs.Vol.Write(l, format.MarshalNodeTo(buf, n, fs.sb.CsumType)); err != nil {
			return fmt.Errorf("write %v tree node %d: %w", n.Owner, l, err)
		}
	}
	return nil
}

// nextSuper is the superblock of the committed transaction.
func (tx *Txn) nextSuper() format.Superblock {
	fs := tx.fs
	sb := fs.sb
	if sb.Generation > 0 {
		copy(sb.Backups[1:], sb.Backups[:format.NumBackupRoots-1])
		sb.Backups[0] = sb.Roots
	}
	sb.Generation = tx.gen
	if s := tx.settings; s != nil {
		hits := sb.Settings.DedupeHits
		sb.Settings = *s
		sb.Settings.DedupeHits = hits
		if s.Dedupe {
			sb.Incompat |= format.IncompatDedupe
		}
		if s.Compression != format.CompressNone {
			sb.Incompat |= format.IncompatCompression
		}
	}
	sb.Settings.DedupeHits += tx.dedupeHits
	sb.Counters = tx.counters
	sb.RoCompat |= format.RoCompatCounters
	sb.Incompat |= tx.incompat
	sb = format.WithoutLog(sb) // the commit holds what the log did
	sb.Roots = format.RootSet{Generation: tx.gen, Nonce: fs.commitNonce(tx.gen)}
	for id := format.TreeID(1); id <= format.NumTrees; id++ {
		sb.Roots.SetRoot(id, tx.trees[id].Root())
	}
	if sb.Roots.Root(format.SnapshotTree).Logical == 0 {
		// The last snapshot is gone, and with it every shared node: the
		// image is again one older builds and fsck read (§6.12).
		sb.Incompat &^= format.IncompatSnapshots | format.IncompatReceive | format.IncompatDropping
	}
	if tx.dropsDone {
		sb.Incompat &^= format.IncompatDropping // the last DROP_ITEM is gone
	}
	if tx.unparked {
		sb.Incompat &^= format.IncompatReceive // the RECEIVE_ITEM is gone (§6.13)
	}
	if tx.superChange != nil {
		tx.superChange(&sb)
	}
	if sb.Roots.Root(format.DiscardTree).Logical != 0 {
		sb.Compat |= format.CompatDiscardTree
	}
	sb.BytesUsed, sb.TotalBytes = 0, 0
	for _, bg := range fs.bgs {
		sb.BytesUsed += bg.Used
	}
	for _, d := range fs.devItems {
		sb.TotalBytes += d.TotalBytes
	}
	sb.NumDevices = uint64(len(fs.devItems))
	sb.SysChunks = nil
	for _, c := range fs.Vol.Chunks.All() {
		if c.Type == format.ChunkSystem {
			sb.SysChunks = append(sb.SysChunks, format.SysChunk{Logical: c.Logical, Chunk: c.ChunkItem})
		}
	}
	return sb
}
