package rescue

import (
	"cmp"
	"fmt"
	"sort"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/store"
)

// hole is a key range [lo, hi) of the fs tree whose node did not read;
// gen is the generation its pointer gave (nothing in it is newer).
type hole struct {
	lo, hi format.Key
	gen    uint64
}

// gatherer collects the fs tree's readable items into a namespace.
type gatherer struct {
	st    *store.FS
	ns    *namespace
	rep   *Report
	seen  map[uint64]bool // nodes read (a node reached twice is read once)
	holes []hole
	// taken are the key spans of the scanned leaves used: items of
	// older nodes there are left out.
	taken spans
}

// gather reads the fs tree from the first root that reads (superblock,
// then backups). When the superblock's root is lost, the leaves a scan
// finds newer than the root used come first: they hold what the lost
// generations changed. Subtrees that did not read are filled from the
// scanned leaves no newer than their pointers.
func gather(st *store.FS, opt Options, rep *Report) (*namespace, error) {
	g := &gatherer{st: st, ns: newNamespace(), rep: rep, seen: map[uint64]bool{}}
	sb := st.Super()
	lost := sb.Roots.Root(format.FSTree)
	root, from, ok := pickRoot(st, format.FSTree)
	var leaves []leafRef
	if from != "superblock" {
		rep.NodesLost++
		rep.Problems = append(rep.Problems, Problem{Err: fmt.Errorf("the superblock's fs tree root (logical %d) does not read: keys from %s roots and scanned leaves", lost.Logical, cmp.Or(from, "no"))})
		leaves = g.scan(opt)
		g.fill(leaves, []hole{{format.Key{}, format.MaxKey, max(lost.Generation, root.Generation)}}, root.Generation)
	}
	if ok {
		rep.RootsFrom, rep.Generation = from, root.Generation
		g.walk(root.Logical, root.Generation, int(root.Level), format.Key{}, format.MaxKey)
	} else {
		rep.RootsFrom, rep.Generation = "scan", lost.Generation
	}
	if len(g.holes) > 0 && leaves == nil {
		leaves = g.scan(opt)
	}
	sort.Slice(g.holes, func(i, j int) bool { return g.holes[i].lo.Less(g.holes[j].lo) })
	g.fill(leaves, g.holes, 0)
	rep.Problems = append(rep.Problems, g.ns.unread...)
	return g.ns, nil
}

// scan finds the fs tree's leaves; a scan cut short is a problem, not a
// failure (what it found is used).
func (g *gatherer) scan(opt Options) []leafRef {
	limit := opt.ScanLimit
	if limit == 0 {
		limit = DefaultScanLimit
	}
	leaves, err := scanLeaves(g.st, format.FSTree, limit)
	if err != nil {
		g.rep.Problems = append(g.rep.Problems, Problem{Err: fmt.Errorf("node scan: %w", err)})
	}
	return leaves
}

// pickRoot returns tree id's root from the first root set whose root
// node reads.
func pickRoot(st *store.FS, id format.TreeID) (format.RootPtr, string, bool) {
	sb := st.Super()
	for _, rs := range rootSets(&sb) {
		r := rs.set.Root(id)
		if r.Logical == 0 {
			continue
		}
		if _, err := st.ReadNode(id, r.Logical, r.Generation, int(r.Level)); err == nil {
			return r, rs.from, true
		}
	}
	return format.RootPtr{}, "", false
}

// walk reads the subtree at logical, keeping the items in [lo, hi); a
// node that does not read becomes a hole. Levels fall by one per step
// (ReadNode checks each against its pointer), so the depth is bounded.
func (g *gatherer) walk(logical, gen uint64, level int, lo, hi format.Key) {
	if g.seen[logical] {
		return
	}
	g.seen[logical] = true
	n, err := g.st.ReadNode(format.FSTree, logical, gen, level)
	if err != nil {
		g.lose(logical, lo, hi, gen, err)
		return
	}
	if n.IsLeaf() {
		g.addItems(n, lo, hi)
		return
	}
	for i, p := range n.Ptrs {
		clo, chi := p.Key, hi
		if clo.Less(lo) {
			clo = lo
		}
		if i+1 < len(n.Ptrs) && n.Ptrs[i+1].Key.Less(chi) {
			chi = n.Ptrs[i+1].Key
		}
		g.walk(p.Logical, p.Generation, int(n.Level)-1, clo, chi)
	}
}

// lose records a node that did not read and the keys it held.
func (g *gatherer) lose(logical uint64, lo, hi format.Key, gen uint64, err error) {
	g.rep.NodesLost++
	g.holes = append(g.holes, hole{lo, hi, gen})
	g.rep.Problems = append(g.rep.Problems, Problem{Err: fmt.Errorf("fs tree node at logical %d (keys %v to %v) unread, its keys taken from scanned leaves: %w", logical, lo, hi, err)})
}

func (g *gatherer) addItems(n *format.Node, lo, hi format.Key) {
	for _, it := range n.Items {
		if !it.Key.Less(lo) && it.Key.Less(hi) && !g.taken.covers(it.Key, it.Key) {
			g.ns.add(it)
		}
	}
}

// fill takes, for the holes (disjoint, in key order), the scanned
// leaves with a generation in (above, the hole's], newest first, each
// only where no newer leaf already covered its keys (an old leaf must not
// bring back what a newer one deleted). Each leaf finds its holes by
// binary search: O(leaves x log holes), however many nodes were lost.
func (g *gatherer) fill(leaves []leafRef, holes []hole, above uint64) {
	for _, l := range leaves {
		if l.gen <= above || g.seen[l.logical] || g.taken.covers(l.first, l.last) {
			continue
		}
		i := sort.Search(len(holes), func(i int) bool { return l.first.Less(holes[i].hi) })
		var n *format.Node
		for ; i < len(holes) && !l.last.Less(holes[i].lo); i++ {
			h := holes[i]
			if l.gen > h.gen {
				continue
			}
			if n == nil {
				var err error
				if n, err = g.st.ReadNode(format.FSTree, l.logical, l.gen, 0); err != nil {
					break
				}
			}
			g.addItems(n, h.lo, h.hi)
		}
		if n != nil {
			g.seen[l.logical] = true
			g.taken.add(l.first, l.last)
		}
	}
}

// spans is a set of disjoint key ranges [first, last], sorted.
type spans []leafRef

// covers reports whether [a, b] meets a span.
func (s spans) covers(a, b format.Key) bool {
	i := sort.Search(len(s), func(i int) bool { return !s[i].last.Less(a) })
	return i < len(s) && !b.Less(s[i].first)
}

func (s *spans) add(a, b format.Key) {
	i := sort.Search(len(*s), func(i int) bool { return (*s)[i].first.Less(a) == false })
	*s = append(*s, leafRef{})
	copy((*s)[i+1:], (*s)[i:])
	(*s)[i] = leafRef{first: a, last: b}
}
