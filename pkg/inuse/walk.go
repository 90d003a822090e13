package inuse

import (
	"sort"

	"github.com/ddfs/ddfs/format"
)

// walk visits the node at l and its subtree. A child is referenced by
// its parent's pointer whether or not it reads.
func (w *walker) walk(id format.TreeID, l, gen uint64, level, depth int) {
	if w.seen[l] || depth > format.MaxLevel {
		return
	}
	w.seen[l] = true
	n, err := w.fs.ReadNode(id, l, gen, level)
	if err != nil {
		w.res.Unread = append(w.res.Unread, Unread{Tree: id, Logical: l, Err: err})
		return
	}
	if n.IsLeaf() {
		w.items(id, n.Items)
		return
	}
	for _, p := range n.Ptrs {
		w.ref(Ref{Tree: id, What: "node", Logical: p.Logical, Len: w.nodeLen})
	}
	for _, p := range n.Ptrs {
		w.walk(id, p.Logical, p.Generation, level-1, depth+1)
	}
}

// handlers are what each item type references, by tree.
var handlers = map[format.TreeID]map[format.KeyType]func(*walker, format.Item){
	format.FSTree:      {format.FileExtentKey: (*walker).fileExtent},
	format.CsumTree:    {format.CsumItemKey: (*walker).csums},
	format.DedupeTree:  {format.DedupeItemKey: (*walker).dedupe},
	format.ExtentTree:  {format.BlockGroupKey: (*walker).blockGroup},
	format.ChunkTree:   {},
	format.DiscardTree: {},
}

// The snapshot handler walks trees itself: set apart, or handlers would
// refer to itself through walk.
func init() {
	handlers[format.SnapshotTree] = map[format.KeyType]func(*walker, format.Item){
		format.SnapshotItemKey: (*walker).snapshot, format.ReceiveItemKey: (*walker).receive, format.DropItemKey: (*walker).dropping}
}

func (w *walker) items(id format.TreeID, items []format.Item) {
	hs := handlers[id]
	for _, it := range items {
		if h := hs[it.Key.Type]; h != nil {
			h(w, it)
		}
	}
}

// fileExtent: a regular or prealloc extent's disk range (a hole has
// logical 0; an item that does not decode references nothing fsck
// would keep, but its neighbours still count).
func (w *walker) fileExtent(it format.Item) {
	var x format.FileExtentItem
	if format.DecodeFileExtentItem(it.Data, &x) != nil || x.Type == format.FileExtentInline || x.DiskLogical == 0 {
		return
	}
	w.ref(Ref{Tree: format.FSTree, What: "file extent", Logical: x.DiskLogical, Len: x.DiskLen, Ino: it.Key.ObjectID})
}

// snapshot: a snapshot's fs tree (its nodes shared with the live one are
// walked once). An item that does not decode hides a whole tree: its
// references are unknown, as behind an unread node.
func (w *walker) snapshot(it format.Item) {
	w.rootItem(it, func(b []byte) (format.RootPtr, error) {
		s, err := format.UnmarshalSnapshotItem(b)
		return rootOf(s, err, func() format.RootPtr { return s.Root })
	})
}

// receive: the live fs tree a receive in progress parked (§6.13).
func (w *walker) receive(it format.Item) {
	w.rootItem(it, func(b []byte) (format.RootPtr, error) {
		r, err := format.UnmarshalReceiveItem(b)
		return rootOf(r, err, func() format.RootPtr { return r.Parked })
	})
}

// dropping: what is left of a tree being dropped (§6.12).
func (w *walker) dropping(it format.Item) {
	w.rootItem(it, func(b []byte) (format.RootPtr, error) {
		d, err := format.UnmarshalDropItem(b)
		return rootOf(d, err, func() format.RootPtr { return d.Root })
	})
}

func rootOf[T any](v *T, err error, root func() format.RootPtr) (format.RootPtr, error) {
	if err != nil {
		return format.RootPtr{}, err
	}
	return root(), nil
}

// rootItem walks the fs tree a snapshot-tree item keeps.
func (w *walker) rootItem(it format.Item, decode func([]byte) (format.RootPtr, error)) {
	r, err := decode(it.Data)
	if err != nil {
		w.res.Unread = append(w.res.Unread, Unread{Tree: format.SnapshotTree, Logical: it.Key.ObjectID, Err: err})
		return
	}
	w.fsTree(r)
}

// fsTree walks the fs tree at root (its root node referenced too).
func (w *walker) fsTree(root format.RootPtr) {
	w.ref(Ref{Tree: format.FSTree, What: "node", Logical: root.Logical, Len: w.nodeLen})
	w.walk(format.FSTree, root.Logical, root.Generation, int(root.Level), 0)
}

// csums: the sectors the item's sums cover.
func (w *walker) csums(it format.Item) {
	if w.csumLen == 0 {
		return
	}
	n := uint64(len(it.Data)) / w.csumLen
	w.ref(Ref{Tree: format.CsumTree, What: "checksums", Logical: it.Key.Offset, Len: n * w.sector})
}

// dedupe: the entry names its extent by its first byte; its first sector
// is what the walk can vouch for (the entry's length is of decompressed
// bytes).
func (w *walker) dedupe(it format.Item) {
	w.ref(Ref{Tree: format.DedupeTree, What: "dedupe entry", Logical: it.Key.Offset, Len: w.sector})
}

// blockGroup: a block group item whose chunk the map lacks means the map
// is missing a chunk.
func (w *walker) blockGroup(it format.Item) {
	c, ok := w.fs.Vol.Chunks.Lookup(it.Key.ObjectID)
	if !ok || c.Logical != it.Key.ObjectID || c.Length != it.Key.Offset {
		w.res.Outside = append(w.res.Outside, Ref{Tree: format.ExtentTree, What: "block group", Logical: it.Key.ObjectID, Len: it.Key.Offset})
	}
}

// ref records what of r lies in the free list, and r itself if any of
// it lies in no chunk.
func (w *walker) ref(r Ref) {
	if r.Len == 0 {
		return
	}
	end := r.Logical + r.Len
	if end < r.Logical {
		end = ^uint64(0) // wraps: a crafted length; the rest of the space
	}
	if !w.inChunks(r.Logical, end) {
		w.res.Outside = append(w.res.Outside, r)
	}
	i := sort.Search(len(w.free), func(i int) bool { return w.free[i].End() > r.Logical })
	for ; i < len(w.free) && w.free[i].Start < end; i++ {
		s, e := max(w.free[i].Start, r.Logical), min(w.free[i].End(), end)
		if len(w.res.Conflicts) >= maxReported {
			w.res.More++
			continue
		}
		c := r
		c.Logical, c.Len = s, e-s
		w.res.Conflicts = append(w.res.Conflicts, c)
	}
}

// inChunks reports whether [start, end) lies inside known chunks.
func (w *walker) inChunks(start, end uint64) bool {
	for start < end {
		c, ok := w.fs.Vol.Chunks.Lookup(start)
		if !ok {
			return false
		}
		start = c.End()
	}
	return true
}
