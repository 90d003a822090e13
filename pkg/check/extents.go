package check

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/ddfs/ddfs/format"
)

// checkExtents compares the extent tree with what the walk found: one
// metadata item per reachable node, a block group per chunk, and block
// group usage equal to the extents inside it.
func (c *checker) checkExtents() {
	used := map[uint64]uint64{} // chunk -> bytes its extents use
	metas := c.checkMetaItems(used)
	for _, e := range c.fs.extents.list {
		c.account(used, e.logical, uint64(e.length), "data extent")
	}
	c.checkBlockGroups(used)
	c.checkOverlaps(metas)
}

// account adds extent [start, start+n) to the usage of its chunk.
func (c *checker) account(used map[uint64]uint64, start, n uint64, what string) {
	ch, ok := c.vol.Chunks.Lookup(start)
	if !ok || start+n > ch.End() {
		c.add(Problem{Code: ExtentOutside, Logical: start, Message: what + " outside every chunk"})
		return
	}
	used[ch.Logical] += n
}

// checkMetaItems requires a metadata item for every node the walk
// reached and a node for every metadata item, and returns the items'
// addresses, sorted.
func (c *checker) checkMetaItems(used map[uint64]uint64) []uint64 {
	nodes := make([]uint64, 0, len(c.seen))
	for l := range c.seen {
		nodes = append(nodes, l)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i] < nodes[j] })
	for _, l := range nodes {
		if _, ok := c.metaItems[l]; !ok {
			// Rebuilt with the pointers counted (a node snapshots share has several).
			c.add(Problem{Code: MetaMissing, Tree: c.seen[l].String(), Logical: l, fix: &fixData{owner: c.seen[l], want: 1 + c.snaps.shared[l]}, Message: "node has no metadata extent item"})
		} else {
			c.checkMetaRef(l)
		}
	}
	metas := make([]uint64, 0, len(c.metaItems))
	for l := range c.metaItems {
		metas = append(metas, l)
	}
	sort.Slice(metas, func(i, j int) bool { return metas[i] < metas[j] })
	for _, l := range metas {
		if _, ok := c.seen[l]; !ok {
			c.add(Problem{Code: MetaLeaked, Tree: format.ExtentTree.String(), Logical: l, fix: &fixData{key: c.metaItems[l]}, Message: "metadata extent item for a node no tree references (leaked space)"})
		}
		c.account(used, l, uint64(c.sb.NodeSize), "metadata extent")
	}
	return metas
}

// checkBlockGroups requires a block group item of the chunk's type and
// usage for every chunk, and a chunk for every block group item.
func (c *checker) checkBlockGroups(used map[uint64]uint64) {
	for _, ch := range c.vol.Chunks.All() {
		g, ok := c.bgItems[ch.Logical]
		switch {
		case !ok:
			c.add(Problem{Code: BGMissing, Logical: ch.Logical, fix: &fixData{want: used[ch.Logical]}, Message: "chunk has no block group item"})
		case g.Type != ch.Type || g.Profile != ch.Profile:
			c.add(Problem{Code: BGType, Logical: ch.Logical, Message: fmt.Sprintf("block group says %v/%v, chunk is %v/%v", g.Type, g.Profile, ch.Type, ch.Profile)})
		case g.Used != used[ch.Logical]:
			c.add(Problem{Code: BGUsed, Logical: ch.Logical, fix: &fixData{want: used[ch.Logical]}, Message: fmt.Sprintf("block group says %d bytes used, extents use %d", g.Used, used[ch.Logical])})
		}
	}
	for _, l := range slices.Sorted(maps.Keys(c.bgItems)) {
		if ch, ok := c.vol.Chunks.Lookup(l); !ok || ch.Logical != l {
			c.add(Problem{Code: BGOrphan, Tree: format.ExtentTree.String(), Logical: l, fix: &fixData{key: c.bgKeys[l]}, Message: "block group item without a chunk"})
		}
	}
}

// checkOverlaps requires that no two extents overlap.
func (c *checker) checkOverlaps(metas []uint64) {
	// Extents must not overlap each other: the metadata and the data
	// extents, both in address order (data extents in the walk's key
	// order), merged, each against the one before it.
	ns := uint64(c.sb.NodeSize)
	ext := c.fs.extents.list
	if c.fs.unsorted { // keys out of order across nodes (reported)
		ext = slices.Clone(ext)
		sort.SliceStable(ext, func(i, j int) bool { return ext[i].logical < ext[j].logical })
	}
	var prev span
	for i, j, n := 0, 0, 0; i < len(metas) || j < len(ext); n++ {
		var x span
		if j == len(ext) || i < len(metas) && metas[i] <= ext[j].logical {
			x = span{metas[i], metas[i] + ns}
			i++
		} else {
			x = span{ext[j].logical, ext[j].end()}
			j++
		}
		if n > 0 && x.start < prev.end {
			c.add(Problem{Code: ExtentOverlap, Logical: x.start, Message: fmt.Sprintf("extent overlaps the extent at %d", prev.start)})
		}
		prev = x
	}
}
