package check

// The system chunk array of a superblock (FORMAT.md §3.4) is a copy of
// the chunk tree's system chunk items: the one a reader maps the chunk
// tree's own nodes with before it has read them. A lie in it (a stripe
// moved, checksum recomputed) can go unnoticed by reads, which fall back
// to another copy, while a writer's rewrite of a copy lands on whatever
// else lies there. Which side lies is decided by reading: where the two
// put a copy of the chunk tree's nodes in different places, the side
// whose copy reads every node with a valid checksum and header verified.
// The array is rewritten only when the chunk tree's side verified
// everywhere they differ; else fsck reports and writes nothing.

import (
	"fmt"
	"slices"
	"sort"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// checkSysArrays compares the array of every superblock copy of the
// set's generation (other copies are SUPER_* problems) with the chunk
// tree's system chunks. Over a chunk tree that did not read whole
// there is nothing to compare with.
func (c *checker) checkSysArrays() {
	for _, t := range c.rep.Incomplete {
		if t == format.ChunkTree.String() {
			return
		}
	}
	tree := map[uint64][]byte{}
	for l, ch := range c.sysTree {
		tree[l] = format.MarshalChunkItem(ch)
	}
	for _, d := range c.vol.Devices() {
		for _, sc := range volume.ReadSuperCopies(d.Dev) {
			if sc.Err != nil || !volume.SameSet(sc.SB, c.sb) || sc.SB.DevID != d.ID || sc.SB.Generation != c.sb.Generation {
				continue
			}
			diff := store.SysArrayDiff(sc.SB, tree)
			if diff == nil {
				continue
			}
			p := Problem{Code: SysArrayMismatch, DevID: d.ID, Device: d.Path, Offset: sc.Offset}
			if why := c.sysVerdict(sc.SB.SysChunks); why != "" {
				p.Message = fmt.Sprintf("%v; not rewritten: %s", diff, why)
			} else {
				p.Message = fmt.Sprintf("%v; the chunk tree's system chunks read its nodes where the two differ", diff)
				p.fix = &fixData{sys: c.sysChunks()}
			}
			c.add(p)
		}
	}
}

// sysChunks is the chunk tree's system chunks as an array, by logical.
func (c *checker) sysChunks() []format.SysChunk {
	out := make([]format.SysChunk, 0, len(c.sysTree))
	for l, ch := range c.sysTree {
		out = append(out, format.SysChunk{Logical: l, Chunk: ch})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Logical < out[j].Logical })
	return out
}

// sysVerdict says why the chunk tree's system chunks cannot be put in
// place of the array arr ("" when they can).
func (c *checker) sysVerdict(arr []format.SysChunk) string {
	var nodes []uint64
	for l, id := range c.seen {
		if id == format.ChunkTree {
			nodes = append(nodes, l)
		}
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i] < nodes[j] })
	byLogical := map[uint64]*format.ChunkItem{}
	for _, sc := range arr {
		byLogical[sc.Logical] = sc.Chunk
		if _, ok := c.sysTree[sc.Logical]; !ok && len(nodesIn(nodes, sc.Logical, sc.Chunk.Length)) > 0 {
			return fmt.Sprintf("chunk tree nodes lie in the array's chunk %d, which the chunk tree does not list", sc.Logical)
		}
	}
	for _, sc := range c.sysChunks() {
		if why := c.copiesVerdict(sc.Logical, sc.Chunk, byLogical[sc.Logical], nodes); why != "" {
			return why
		}
	}
	return ""
}

// copiesVerdict compares, copy by copy, where the chunk tree's item t
// and the array's a (nil: none) put the chunk tree nodes of chunk l. A
// copy the two place alike is no evidence either way (a bad copy there
// is NODE_COPY_BAD); elsewhere t's copy must read every node.
func (c *checker) copiesVerdict(l uint64, t, a *format.ChunkItem, nodes []uint64) string {
	tc := &volume.Chunk{Logical: l, ChunkItem: t}
	in := nodesIn(nodes, l, t.Length)
	for m := 0; m < chunkCopies(tc); m++ {
		if c.readsAll(tc, m, in) {
			continue
		}
		if a == nil {
			return fmt.Sprintf("chunk %d copy %d: the chunk tree's stripe does not read its nodes", l, m)
		}
		ac := &volume.Chunk{Logical: l, ChunkItem: a}
		switch {
		case m < chunkCopies(ac) && c.samePlaces(tc, ac, m, in):
			continue
		case m < chunkCopies(ac) && c.readsAll(ac, m, in):
			return fmt.Sprintf("chunk %d copy %d: the array's stripe reads the chunk tree nodes, the chunk tree's does not", l, m)
		}
		return fmt.Sprintf("chunk %d copy %d: neither the chunk tree's stripe nor the array's reads the chunk tree nodes", l, m)
	}
	return ""
}

// nodesIn returns the nodes (sorted) in [l, l+n).
func nodesIn(nodes []uint64, l, n uint64) []uint64 {
	i := sort.Search(len(nodes), func(i int) bool { return nodes[i] >= l })
	j := sort.Search(len(nodes), func(i int) bool { return nodes[i]-l >= n && nodes[i] >= l })
	return nodes[i:max(i, j)]
}

func chunkCopies(ch *volume.Chunk) int {
	if pi, _ := ch.Profile.Info(); pi.Striped {
		return pi.SubStripes
	}
	return len(ch.Stripes)
}

// piece is one contiguous part of a copy of a node on a device.
type piece struct {
	at, n int // its part of the node's bytes
	volume.Target
}

// copyPlaces is where copy m of the node at logical lies under ch's
// layout (nil when the layout cannot hold it).
func copyPlaces(ch *volume.Chunk, logical uint64, ns, m int) []piece {
	segs, err := ch.Map(logical-ch.Logical, uint64(ns))
	if err != nil {
		return nil
	}
	out := make([]piece, 0, len(segs))
	for _, s := range segs {
		if m >= len(s.Targets) {
			return nil
		}
		out = append(out, piece{s.BufOff, s.Len, s.Targets[m]})
	}
	return out
}

// samePlaces reports whether a and b put copy m of every node alike.
func (c *checker) samePlaces(a, b *volume.Chunk, m int, nodes []uint64) bool {
	for _, l := range nodes {
		pa, pb := copyPlaces(a, l, int(c.sb.NodeSize), m), copyPlaces(b, l, int(c.sb.NodeSize), m)
		if pa == nil || !slices.Equal(pa, pb) {
			return false
		}
	}
	return true
}

// readsAll reports whether copy m of every node, placed by ch, reads
// and validates as a chunk tree node at its address.
func (c *checker) readsAll(ch *volume.Chunk, m int, nodes []uint64) bool {
	buf := make([]byte, c.sb.NodeSize)
	for _, l := range nodes {
		places := copyPlaces(ch, l, len(buf), m)
		if places == nil {
			return false
		}
		for _, p := range places {
			d, ok := c.vol.Device(p.DevID)
			if !ok {
				return false
			}
			if _, err := d.Dev.ReadAt(buf[p.at:p.at+p.n], int64(p.Physical)); err != nil {
				return false
			}
		}
		want := format.NodeExpect{FSID: c.sb.FSID, AltFSID: c.sb.NewFSID, Logical: l, Owner: format.ChunkTree, Level: -1}
		if _, err := format.UnmarshalNode(buf, c.sb.CsumType, want); err != nil {
			return false
		}
	}
	return true
}

// fixSysArrays rewrites the array of every superblock copy from the
// chunk tree when the check decided for it on every copy that differs
// and nothing else about the mapping is in doubt. It reports whether it
// wrote.
func fixSysArrays(vol *volume.Volume, ps []Problem) (bool, error) {
	var sys []format.SysChunk
	var rest []Problem
	for _, p := range ps {
		switch {
		case p.Code != SysArrayMismatch:
			rest = append(rest, p)
		case p.fix == nil:
			return false, nil // undecided for one copy: write none
		default:
			sys = p.fix.sys
		}
	}
	if sys == nil || mappingBroken(rest) {
		return false, nil
	}
	sb := *vol.Super
	sb.SysChunks = sys
	if err := vol.WriteSupers(&sb); err != nil {
		return false, fmt.Errorf("rewrite the system chunk arrays: %w", err)
	}
	return true, vol.Flush()
}
