package store

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/alloc"
)

// ErrSpaceInUse marks a block group whose extent tree calls space free
// that the other trees still use: a node that a tree points at, or data
// sectors that have checksums (every regular extent's do). Allocating
// there would write over live data, so the group's free space is not
// used: the transaction ends with this error (run fsck.ddfs).
var ErrSpaceInUse = errors.New("the extent tree calls space free that the trees use")

// verifyFree holds a block group's free-space map, just built from the
// extent tree, against what the committed trees use there. It reads the
// csum items over a data group's range, and for a metadata or system
// group the interior nodes of every tree (their child pointers name every
// node; fs.liveNodes keeps them per generation).
func (fs *FS) verifyFree(bg *BlockGroup, free *alloc.RangeSet) error {
	if bg.isNew || free.Total() == 0 {
		return nil
	}
	rs := free.Ranges()
	c := bg.Chunk
	if c.Type == format.ChunkData {
		return fs.verifyDataFree(c.Logical, c.End(), rs, free)
	}
	nodes, err := fs.liveNodes()
	if err != nil {
		return fmt.Errorf("block group %d: %w", c.Logical, err)
	}
	i := sort.Search(len(nodes), func(i int) bool { return nodes[i] >= c.Logical })
	for ; i < len(nodes) && nodes[i] < c.End(); i++ {
		if meets(rs, nodes[i], uint64(fs.sb.NodeSize)) {
			err := fmt.Errorf("block group %d: node at logical %d: %w: %w", c.Logical, nodes[i], ErrSpaceInUse, ErrCorrupt)
			if err = fs.keepInUse(free, nodes[i], uint64(fs.sb.NodeSize), err); err != nil {
				return err
			}
		}
	}
	return nil
}

// keepInUse is what becomes of space the trees use that the free map
// holds: a writer fails with err; a repair takes it out of the map, so
// that nothing is written over it while fsck rebuilds its items.
func (fs *FS) keepInUse(free *alloc.RangeSet, start, n uint64, err error) error {
	if !fs.repair {
		return err
	}
	for _, r := range free.Ranges() {
		if s, e := max(r.Start, start), min(r.End(), start+n); s < e {
			if err := free.Remove(s, e-s); err != nil {
				return err
			}
		}
	}
	return nil
}

// verifyDataFree looks for checksums over the free ranges of [start, end).
func (fs *FS) verifyDataFree(start, end uint64, rs []alloc.Range, free *alloc.RangeSet) error {
	csumLen := uint64(fs.sb.CsumType.Len())
	sector := uint64(fs.sb.SectorSize)
	from := format.Key{ObjectID: format.CsumObjectID, Type: format.CsumItemKey, Offset: start}
	if it, err := fs.Tree(format.CsumTree).SeekLE(from); err == nil && it.Key.Type == format.CsumItemKey {
		from.Offset = it.Key.Offset // an item that starts before the group may reach into it
	}
	to := format.Key{ObjectID: format.CsumObjectID, Type: format.CsumItemKey, Offset: end}
	if fs.sb.Roots.Root(format.CsumTree).Logical == 0 {
		return nil
	}
	return fs.Tree(format.CsumTree).Scan(from, to, func(it format.Item) (bool, error) {
		n := uint64(len(it.Data)) / csumLen * sector
		if meets(rs, it.Key.Offset, n) {
			err := fmt.Errorf("block group %d: checksums of %d+%d: %w: %w", start, it.Key.Offset, n, ErrSpaceInUse, ErrCorrupt)
			if err = fs.keepInUse(free, it.Key.Offset, n, err); err != nil {
				return false, err
			}
		}
		return true, nil
	})
}

// meets reports whether [start, start+n) overlaps one of rs (sorted).
func meets(rs []alloc.Range, start, n uint64) bool {
	i := sort.Search(len(rs), func(i int) bool { return rs[i].End() > start })
	return i < len(rs) && rs[i].Start < start+n
}

// liveNodes lists (sorted) the logical address of every node of every
// committed tree: the roots and the children interior nodes point at,
// read once per committed generation. A node that cannot be read is an
// error: what it points at is unknown.
func (fs *FS) liveNodes() ([]uint64, error) {
	if fs.live.gen == fs.sb.Generation && fs.live.nodes != nil {
		return fs.live.nodes, nil
	}
	var out []uint64
	// Snapshots share fs-tree nodes: an interior node is walked once. A
	// leaf named twice is listed twice and the sorted list keeps one (a
	// map of every leaf cost a writer's first allocation 10 ms at 1M
	// files).
	seen := map[uint64]bool{}
	var walk func(id format.TreeID, l, gen uint64, level, depth int) error
	walk = func(id format.TreeID, l, gen uint64, level, depth int) error {
		out = append(out, l)
		if level == 0 || depth > format.MaxLevel {
			return nil
		}
		if seen[l] {
			return nil
		}
		seen[l] = true
		n, err := fs.readNode(id, l, gen, level, nil)
		if err != nil {
			return err
		}
		for _, p := range n.Ptrs {
			if err := walk(id, p.Logical, p.Generation, level-1, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	for id := format.TreeID(1); id <= format.NumTrees; id++ {
		if r := fs.sb.Roots.Root(id); r.Logical != 0 {
			if err := walk(id, r.Logical, r.Generation, int(r.Level), 0); err != nil {
				return nil, err
			}
		}
	}
	roots, err := fs.SnapshotRoots()
	if err != nil {
		return nil, err
	}
	for _, r := range roots {
		if err := walk(format.FSTree, r.Logical, r.Generation, int(r.Level), 0); err != nil {
			return nil, err
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	fs.live.gen, fs.live.nodes = fs.sb.Generation, out
	return out, nil
}
