package format

import "encoding/binary"

// Counters are the space statistics the superblock keeps exact at every
// commit while RoCompatCounters is set (FORMAT.md §3.9), so `ddfs df` and
// `dedupe-tool status` read them instead of scanning trees. Each is a sum
// over items (ItemCounters), which is what lets a writer keep them by
// adding and subtracting item contributions and fsck recount them.
type Counters struct {
	LogicalBytes       uint64 // file bytes that have data: EXTENT_DATA lengths, holes excluded
	PhysicalBytes      uint64 // disk lengths of data extents (one copy)
	DedupeSavedBytes   uint64 // (refs - 1) x ram_bytes of each deduped extent
	CompressSavedBytes uint64 // ram_bytes - disk length of each compressed extent that shrank
	IndexEntries       uint64 // items of the dedupe tree
	IndexNodes         uint64 // nodes of the dedupe tree (METADATA_ITEMs it owns)
}

// CountersSize is the size of the counters area (§3.9).
const CountersSize = 48

// Add adds o to c. Arithmetic wraps: a transaction subtracts an item's
// contribution before it adds the replacement's, and the sums come out
// exact when every change was seen.
func (c *Counters) Add(o Counters) {
	c.LogicalBytes += o.LogicalBytes
	c.PhysicalBytes += o.PhysicalBytes
	c.DedupeSavedBytes += o.DedupeSavedBytes
	c.CompressSavedBytes += o.CompressSavedBytes
	c.IndexEntries += o.IndexEntries
	c.IndexNodes += o.IndexNodes
}

// Sub subtracts o from c (wrapping, as Add).
func (c *Counters) Sub(o Counters) {
	c.LogicalBytes -= o.LogicalBytes
	c.PhysicalBytes -= o.PhysicalBytes
	c.DedupeSavedBytes -= o.DedupeSavedBytes
	c.CompressSavedBytes -= o.CompressSavedBytes
	c.IndexEntries -= o.IndexEntries
	c.IndexNodes -= o.IndexNodes
}

// ItemCounters is one item's contribution to the counters. An item that
// does not decode contributes nothing (fsck reports it on its own).
func ItemCounters(tree TreeID, key Key, data []byte) Counters {
	switch {
	case tree == DedupeTree:
		return Counters{IndexEntries: 1}
	case tree == FSTree && key.Type == FileExtentKey:
		var x FileExtentItem
		if DecodeFileExtentItem(data, &x) == nil {
			return FileExtentCounters(&x)
		}
	case tree == ExtentTree && key.Type == ExtentItemKey:
		var e ExtentItem
		if DecodeExtentItem(data, &e) == nil {
			return ExtentCounters(key, &e)
		}
	case tree == ExtentTree && key.Type == MetadataItemKey:
		var m MetadataItem
		if DecodeMetadataItem(data, &m) == nil {
			return MetadataCounters(&m)
		}
	}
	return Counters{}
}

// FileExtentCounters is ItemCounters of a decoded EXTENT_DATA item (for a
// reader that has decoded it already).
func FileExtentCounters(x *FileExtentItem) Counters {
	if x.Type == FileExtentInline || x.DiskLogical != 0 {
		return Counters{LogicalBytes: x.Len()}
	}
	return Counters{}
}

// ExtentCounters is ItemCounters of a decoded EXTENT_ITEM under key.
func ExtentCounters(key Key, e *ExtentItem) Counters {
	c := Counters{PhysicalBytes: key.Offset}
	if e.Flags&ExtentFlagDeduped != 0 && e.Refs > 0 {
		c.DedupeSavedBytes = (e.Refs - 1) * e.RAMBytes
	}
	if e.Compression != CompressNone && e.RAMBytes > key.Offset {
		c.CompressSavedBytes = e.RAMBytes - key.Offset
	}
	return c
}

// MetadataCounters is ItemCounters of a decoded METADATA_ITEM.
func MetadataCounters(m *MetadataItem) Counters {
	if m.Owner == DedupeTree {
		return Counters{IndexNodes: 1}
	}
	return Counters{}
}

func putCounters(b []byte, c *Counters) {
	le := binary.LittleEndian
	for i, v := range []uint64{c.LogicalBytes, c.PhysicalBytes, c.DedupeSavedBytes, c.CompressSavedBytes, c.IndexEntries, c.IndexNodes} {
		le.PutUint64(b[8*i:], v)
	}
}

func getCounters(b []byte) Counters {
	le := binary.LittleEndian
	return Counters{
		LogicalBytes: le.Uint64(b[0:]), PhysicalBytes: le.Uint64(b[8:]), DedupeSavedBytes: le.Uint64(b[16:]),
		CompressSavedBytes: le.Uint64(b[24:]), IndexEntries: le.Uint64(b[32:]), IndexNodes: le.Uint64(b[40:]),
	}
}
