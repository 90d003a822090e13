package check

import (
	"fmt"
	"sort"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/codec"
)

// dedupeState gathers the dedupe tree and the extents marked as indexed.
type dedupeState struct {
	extents map[uint64]dedupedExtent // logical -> marked extent
	entries []dedupeEntry
}

type dedupedExtent struct {
	diskLen, ram uint64
	prefix       uint64
	compression  format.Compression
	entries      int
}

type dedupeEntry struct {
	key  format.Key
	item *format.DedupeItem
}

func (d *dedupeState) extent(k format.Key, e *format.ExtentItem) {
	if d.extents == nil {
		d.extents = map[uint64]dedupedExtent{}
	}
	d.extents[k.ObjectID] = dedupedExtent{diskLen: k.Offset, ram: e.RAMBytes, prefix: e.HashPrefix, compression: e.Compression}
}

func (c *checker) dedupeItem(it format.Item) {
	p := Problem{Code: DedupeItemBad, Tree: format.DedupeTree.String(), Logical: it.Key.Offset, fix: &fixData{key: it.Key}}
	if it.Key.Type != format.DedupeItemKey {
		p.Message = fmt.Sprintf("unknown item %v in the dedupe tree", it.Key)
		c.add(p)
		return
	}
	d, err := format.UnmarshalDedupeItem(it.Key.ObjectID, it.Data)
	if err != nil {
		p.Message = fmt.Sprintf("item %v: %s", it.Key, errString(err))
		c.add(p)
		return
	}
	c.dedupe.entries = append(c.dedupe.entries, dedupeEntry{it.Key, d})
}

// checkDedupe: every index entry points at a live extent marked as
// indexed under the same hash prefix (so no entry outlives its extent),
// every marked extent has exactly one entry, and with CheckData the
// extent's data hashes to the entry.
func (c *checker) checkDedupe() {
	s := &c.dedupe
	if len(s.entries) > 0 && c.sb.Incompat&format.IncompatDedupe == 0 {
		c.add(Problem{Code: DedupeFeature, Tree: "dedupe", Message: "dedupe entries but the dedupe feature is not enabled"})
	}
	for _, e := range s.entries {
		p := Problem{Tree: "dedupe", Logical: e.key.Offset, fix: &fixData{key: e.key}}
		x, ok := s.extents[e.key.Offset]
		switch {
		case !ok:
			p.Code, p.Message = DedupeStale, "entry points at no live extent marked as indexed (stale index entry)"
		case x.prefix != e.key.ObjectID:
			p.Code, p.Message = DedupePrefix, fmt.Sprintf("entry prefix %#x, the extent says %#x", e.key.ObjectID, x.prefix)
		case e.item.Length == 0 || e.item.Length > max(x.ram, x.diskLen):
			p.Code, p.Message = DedupeLength, fmt.Sprintf("entry for %d bytes, the extent holds %d", e.item.Length, x.ram)
		default:
			x.entries++
			s.extents[e.key.Offset] = x
			if c.opt.CheckData {
				c.checkDedupeData(e, x, p)
			}
			continue
		}
		c.add(p)
	}
	logicals := make([]uint64, 0, len(s.extents))
	for l := range s.extents {
		logicals = append(logicals, l)
	}
	sort.Slice(logicals, func(i, j int) bool { return logicals[i] < logicals[j] })
	for _, l := range logicals {
		if n := s.extents[l].entries; n != 1 {
			k := format.Key{ObjectID: l, Type: format.ExtentItemKey, Offset: s.extents[l].diskLen}
			c.add(Problem{Code: DedupeEntries, Tree: "extent", Logical: l, fix: &fixData{key: k, want: uint64(n)}, Message: fmt.Sprintf("extent is marked as indexed but has %d index entries", n)})
		}
	}
}

// checkDedupeData reads the block back and compares its hash; any copy
// that matches is enough (a bad copy is the data pass's to report).
func (c *checker) checkDedupeData(e dedupeEntry, x dedupedExtent, p Problem) {
	var last string
	for m := 0; m < max(c.vol.Copies(e.key.Offset), 1); m++ {
		disk := make([]byte, x.diskLen)
		if err := c.vol.ReadCopy(e.key.Offset, disk, m); err != nil {
			last = "read: " + errString(err)
			continue
		}
		data := disk
		if x.compression != format.CompressNone {
			var err error
			if data, err = codec.Decompress(disk, x.compression, x.ram); err != nil {
				last = errString(err)
				continue
			}
		}
		if uint64(len(data)) < e.item.Length || format.DedupeHash(format.Checksum(e.item.HashAlgo, data[:e.item.Length])) != e.item.Hash {
			last = "the extent's data no longer hashes to its index entry"
			continue
		}
		// A strong tail that lies would let a writer share this extent
		// for a block it does not hold (§6.8).
		if e.item.Strong != nil && format.StrongDedupeHash(data[:e.item.Length]) != *e.item.Strong {
			last = "the extent's data does not hash to its index entry's strong tail"
			continue
		}
		return
	}
	p.Code, p.Message = DedupeHash, last
	c.add(p)
}
