package store

import (
	"fmt"

	"github.com/ddfs/ddfs/format"
)

const mib = 1 << 20

// Shrink cuts the unused tail of every non-striped chunk and sets each
// device's size to the end of its last stripe (mkfs --shrink). It commits
// twice: once for the chunks, once for the device sizes, so the second
// transaction has the space the first one freed. It returns the new size
// of each device.
func (fs *FS) Shrink() (map[uint64]uint64, error) {
	tx, err := fs.Begin()
	if err != nil {
		return nil, err
	}
	if err := tx.trimChunks(); err != nil {
		tx.Abort()
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	sizes := map[uint64]uint64{}
	for _, d := range fs.DevItems() {
		end := uint64(format.SuperblockOffsets[0] + format.SuperblockSize)
		for _, e := range fs.Vol.Chunks.DevExtents(d.DevID) {
			end = max(end, e.Physical+e.Length)
		}
		sizes[d.DevID] = (end + mib - 1) / mib * mib
	}
	if tx, err = fs.Begin(); err != nil {
		return nil, err
	}
	for id, size := range sizes {
		d := fs.devItems[id]
		d.TotalBytes = min(d.TotalBytes, size)
	}
	tx.devDirty = true
	if err := tx.Commit(); err != nil {
		return nil, err
	}
	for _, d := range fs.DevItems() {
		for _, e := range fs.Vol.Chunks.DevExtents(d.DevID) {
			if e.Physical+e.Length > d.TotalBytes {
				return nil, fmt.Errorf("shrink: device %d: chunk %d ends past the new size", d.DevID, e.ChunkLogical)
			}
		}
	}
	return sizes, nil
}

// trimChunks shortens chunks to their last used byte plus a MiB of slack
// (metadata keeps room for the commits that follow).
func (tx *Txn) trimChunks() error {
	fs := tx.fs
	chunk, ext := tx.trees[format.ChunkTree], tx.trees[format.ExtentTree]
	for _, bg := range fs.bgs {
		c := bg.Chunk
		if pi, _ := c.Profile.Info(); pi.Striped {
			continue
		}
		if err := fs.verifiedFree(bg); err != nil {
			return err
		}
		usedEnd := c.Logical
		if rs := bg.free.Ranges(); len(rs) > 0 && rs[len(rs)-1].End() == c.End() {
			usedEnd = rs[len(rs)-1].Start
		} else {
			usedEnd = c.End()
		}
		slack := uint64(0)
		if c.Type != format.ChunkData {
			slack = mib
		}
		newLen := (usedEnd - c.Logical + slack + mib - 1) / mib * mib
		newLen = max(newLen, mib)
		if newLen >= c.Length {
			continue
		}
		if err := bg.free.Remove(c.Logical+newLen, c.Length-newLen); err != nil {
			return err
		}
		// Pending discards past the new end go with the cut.
		if rs := fs.disc.pending[c.Logical]; len(rs) > 0 {
			fs.disc.setPending(c.Logical, clipRanges(rs, c.Logical+newLen))
		}
		oldKey := bgKey(c)
		cut := c.Length - newLen
		c.Length = newLen // the chunk map shares this item
		for _, s := range c.Stripes {
			fs.devItems[s.DevID].BytesUsed -= cut
		}
		k := format.Key{ObjectID: format.ChunkObjectID, Type: format.ChunkItemKey, Offset: c.Logical}
		if err := chunk.Put(k, format.MarshalChunkItem(c.ChunkItem)); err != nil {
			return err
		}
		if err := ext.Delete(oldKey); err != nil {
			return err
		}
		item := &format.BlockGroupItem{Used: bg.Used, Type: c.Type, Profile: c.Profile, Flags: bg.flags}
		if err := ext.Insert(bgKey(c), format.MarshalBlockGroupItem(item)); err != nil {
			return err
		}
		bg.itemUsed = bg.Used
	}
	tx.devDirty = true
	return nil
}
