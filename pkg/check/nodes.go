package check

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/volume"
)

// item decodes the items fsck understands and gathers what the
// cross-checks need, by tree.
func (c *checker) item(id format.TreeID, node uint64, it format.Item) {
	switch id {
	case format.FSTree:
		if c.snaps.inSnapshot {
			c.snapshotFSItem(it)
			return
		}
		c.fsItem(it) // most items
	case format.SnapshotTree:
		c.snapshotItem(node, it)
	case format.ChunkTree:
		c.chunkTreeItem(node, it)
	case format.ExtentTree:
		c.extentTreeItem(node, it)
	case format.CsumTree:
		c.csumItem(it)
	case format.DedupeTree:
		c.counted.IndexEntries++ // format.ItemCounters: every item counts
		c.dedupeItem(it)
	case format.DiscardTree:
		c.discardItem(it)
	}
}

// itemBadFunc reports an item of tree id in node that does not decode.
func (c *checker) itemBadFunc(id format.TreeID, node uint64, it format.Item) func(error) {
	return func(err error) {
		c.add(Problem{Code: ItemBad, Tree: id.String(), Logical: node, Message: fmt.Sprintf("item %v: %s", it.Key, errString(err))})
	}
}

// chunkTreeItem takes the device and chunk items of the chunk tree.
func (c *checker) chunkTreeItem(node uint64, it format.Item) {
	bad := c.itemBadFunc(format.ChunkTree, node, it)
	switch it.Key.Type {
	case format.DevItemKey:
		d, err := format.UnmarshalDevItem(it.Data)
		if err != nil {
			bad(err)
			return
		}
		if d.DevID != it.Key.Offset {
			bad(fmt.Errorf("device item for devid %d", d.DevID))
		}
		c.devItems[d.DevID] = d
	case format.ChunkItemKey:
		ch, n, err := format.UnmarshalChunkItem(it.Data)
		if err == nil && n != len(it.Data) {
			err = fmt.Errorf("%d trailing bytes after the chunk item", len(it.Data)-n)
		}
		if err == nil {
			err = format.CheckChunkAgainst(ch, c.sb)
		}
		if err != nil {
			bad(err)
			return
		}
		if err := c.vol.AddChunk(it.Key.Offset, ch); err != nil {
			bad(err)
		}
		if ch.Type == format.ChunkSystem {
			c.sysTree[it.Key.Offset] = ch // against the superblocks' arrays (sysarray.go)
		}
	}
}

// extentTreeItem takes the metadata, data extent and block group items
// of the extent tree.
func (c *checker) extentTreeItem(node uint64, it format.Item) {
	bad := c.itemBadFunc(format.ExtentTree, node, it)
	switch it.Key.Type {
	case format.MetadataItemKey:
		var m format.MetadataItem
		if err := format.DecodeMetadataItem(it.Data, &m); err != nil {
			bad(err)
			return
		}
		c.counted.Add(format.MetadataCounters(&m))
		c.metaItems[it.Key.ObjectID] = it.Key
		c.metaRef(it.Key.ObjectID, &m)
	case format.ExtentItemKey:
		var e format.ExtentItem
		err := format.DecodeExtentItem(it.Data, &e)
		if err == nil {
			c.counted.Add(format.ExtentCounters(it.Key, &e))
			err = format.CheckExtentItemKey(it.Key) // its length sizes reads of the extent
		}
		if err != nil {
			bad(err)
			return
		}
		c.fs.dataExtent(it.Key, &e)
		if e.Flags&format.ExtentFlagDeduped != 0 {
			c.dedupe.extent(it.Key, &e)
		}
	case format.BlockGroupKey:
		g, err := format.UnmarshalBlockGroupItem(it.Data)
		if err != nil {
			bad(err)
			return
		}
		c.bgItems[it.Key.ObjectID] = g
		c.bgKeys[it.Key.ObjectID] = it.Key
	}
}

// discardItem checks a pending-discard record (FORMAT.md §6.10): records
// may be stale, so only their shape is checked — a range inside one chunk.
func (c *checker) discardItem(it format.Item) {
	k := it.Key
	ch, ok := c.vol.Chunks.Lookup(k.ObjectID)
	if k.Type != format.DiscardItemKey || len(it.Data) != 0 || k.Offset == 0 || !ok || k.Offset > ch.End()-k.ObjectID {
		c.add(Problem{Code: DiscardBad, Tree: format.DiscardTree.String(), Logical: k.ObjectID, fix: &fixData{key: k},
			Message: fmt.Sprintf("discard record %v is not a range inside one chunk", k)})
	}
}

// nodeRead is every copy of one node read and validated: the first good
// copy decoded, and per copy nil or why it is bad.
type nodeRead struct {
	node    *format.Node
	errs    []error
	targets []volume.Target
	parity  bool // in a raid5/raid6 chunk: copies 1.. are rebuilds
	// differ are the copies that validate but differ byte for byte from
	// copy first, the first that validates: a reader may get either.
	differ []int
	first  int
	// buf holds the copy node was decoded from (into mem): its items alias
	// it, so the read goes back to the pool only when the node's items
	// have been checked. other and otherMem are for the later copies.
	// Each is a view into run's buffers (run holds a reference until the
	// read goes back) or the read's own buffer (own, ownOther).
	buf, other    []byte
	mem, otherMem format.Node
	own, ownOther []byte
	run           *runRead
}

// readCopies reads and validates every copy of a node. It touches no
// checker state, so the prefetcher runs it beside the item checks; a node
// outside its chunk is not read (visit reports it).
// errMissingCopy marks a copy on a member the set was opened without
// (--degraded): not read, not counted, not a problem of its own.
var errMissingCopy = errors.New("copy on a missing device")

func (c *checker) readCopies(id format.TreeID, logical, gen uint64, level int, run *runRead) *nodeRead {
	r := c.reads.get()
	ch, ok := c.vol.Chunks.Lookup(logical)
	if !ok || logical%uint64(c.sb.NodeSize) != 0 || logical+uint64(c.sb.NodeSize) > ch.End() {
		return r
	}
	want := format.NodeExpect{FSID: c.sb.FSID, AltFSID: c.sb.NewFSID, Logical: logical, Generation: gen, Owner: id, Level: level}
	r.parity = ch.IsParity()
	if !r.parity { // a parity chunk's copy 0 rebuilds a missing strip itself
		r.targets, _ = c.vol.Locate(logical)
	}
	// The decoded node's items alias r.buf (format.UnmarshalNodeShared); a
	// later copy goes to r.other, and one equal to the good copy byte for
	// byte validates alike and is not decoded again.
	ns := int(c.sb.NodeSize)
	for m, copies := 0, c.vol.Copies(logical); m < copies; m++ {
		if m < len(r.targets) && c.vol.IsMissing(r.targets[m].DevID) {
			r.errs = append(r.errs, errMissingCopy)
			continue
		}
		buf, own := &r.buf, &r.own
		if r.node != nil {
			buf, own = &r.other, &r.ownOther
		}
		var err error
		if v := run.view(logical, ns, m); v != nil {
			*buf = v
			if r.run == nil {
				r.run = run
				run.refs.Add(1)
			}
		} else {
			if len(*own) != ns {
				*own = c.reads.arena.get(ns)
			}
			*buf = *own
			err = c.vol.ReadCopy(logical, *buf, m)
		}
		switch {
		case errors.Is(err, volume.ErrMissingDevice): // a parity copy rebuilt from a missing strip
			err = errMissingCopy
		case err != nil:
		case r.node != nil && bytes.Equal(r.other, r.buf):
		case r.node == nil:
			if _, err = format.UnmarshalNodeShared(r.buf, c.sb.CsumType, want, &r.mem); err == nil {
				r.node, r.first = &r.mem, m
			}
		default:
			// Compared past the checksum and fsid: while a fsid change
			// is in progress (FORMAT.md §3.8) a copy may validate with
			// either fsid; otherwise both copies carry the set's fsid
			// and the checksum of the rest.
			if _, err = format.UnmarshalNodeShared(r.other, c.sb.CsumType, want, &r.otherMem); err == nil && !bytes.Equal(r.other[format.NodeFSIDEnd:], r.buf[format.NodeFSIDEnd:]) {
				r.differ = append(r.differ, m)
			}
		}
		r.errs = append(r.errs, err)
	}
	return r
}

// readPool recycles node reads with their buffers (from the big memory
// arena) and decoded nodes: a check reads every copy of every node. It
// keeps every read given back, so it holds at most as many as were in use
// at once (the prefetchers' depth per tree level).
type readPool struct {
	mu    sync.Mutex
	free  []*nodeRead
	runs  [2][]*runRead // runs of one node, longer runs (their buffers differ)
	arena bufArena
}

func (p *readPool) get() *nodeRead {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		r := p.free[n-1]
		p.free = p.free[:n-1]
		*r = nodeRead{errs: r.errs[:0], differ: r.differ[:0], own: r.own, ownOther: r.ownOther, mem: r.mem, otherMem: r.otherMem}
		return r
	}
	return &nodeRead{}
}

// put gives r back once nothing uses it, its node or its items.
func (p *readPool) put(r *nodeRead) {
	if r.run != nil {
		p.putRun(r.run)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free = append(p.free, r)
}

// getRun is a run read of n nodes for copies copies, its buffers kept
// from earlier.
func (p *readPool) getRun(n, copies int) *runRead {
	p.mu.Lock()
	defer p.mu.Unlock()
	long := min(n-1, 1)
	r := &runRead{long: long}
	if k := len(p.runs[long]); k > 0 {
		r = p.runs[long][k-1]
		p.runs[long] = p.runs[long][:k-1]
	}
	r.bufs = r.bufs[:min(len(r.bufs), copies)]
	r.data = make([][]byte, copies)
	r.refs.Store(1) // the prefetcher's, until it has handed out every node
	return r
}

// putRun drops a reference to r; the last one gives it back.
func (p *readPool) putRun(r *runRead) {
	if r == nil || r.n == 0 || r.refs.Add(-1) > 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.runs[r.long] = append(p.runs[r.long], r)
}

// buf is the buffer of n bytes for copy m.
func (r *runRead) buf(m, n int, a *bufArena) []byte {
	for len(r.bufs) <= m {
		r.bufs = append(r.bufs, nil)
	}
	if len(r.bufs[m]) < n {
		// Sized for the longest run, so that a buffer is never replaced
		// (the arena frees only at the end); a run of one keeps its size.
		r.bufs[m] = a.get(n / r.n * (1 + r.long*(runMax-1)))
	}
	return r.bufs[m][:n]
}

// prefetchDepth bounds the children read ahead of the checks (memory:
// this many nodes, all copies read, per tree level being walked).
const prefetchDepth = 16

// prefetcher reads the children of an inner node, in order, on a second
// goroutine: node verification (reads, checksums, decoding) runs beside
// the item checks of the namespace and extent passes on the first.
type prefetcher struct {
	out  chan *nodeRead
	done chan struct{}
	wg   sync.WaitGroup
}

func (c *checker) prefetch(id format.TreeID, parent *format.Node, level int) *prefetcher {
	pf := &prefetcher{out: make(chan *nodeRead, prefetchDepth), done: make(chan struct{})}
	pf.wg.Add(1)
	go func() {
		defer pf.wg.Done()
		defer close(pf.out)
		ptrs := parent.Ptrs
		for i := 0; i < len(ptrs); {
			run := c.readRun(ptrs[i:])
			for _, p := range ptrs[i : i+max(run.n, 1)] {
				r := c.readCopies(id, p.Logical, p.Generation, level, run)
				select {
				case pf.out <- r:
				case <-pf.done:
					c.reads.putRun(run)
					return
				}
			}
			i += max(run.n, 1)
			c.reads.putRun(run)
		}
	}()
	return pf
}

// runMax bounds the sibling nodes read with one request per copy.
const runMax = 16

// runRead is every copy of n nodes that lie back to back, each copy read
// with one request (a tree written in order has its leaves side by side):
// data[m] is copy m, nil where that read failed (the nodes' copies are
// then read one by one, so each gets its own error).
type runRead struct {
	start uint64
	n     int
	data  [][]byte
	bufs  [][]byte // data's buffers, kept with the run for the next
	long  int      // 0: a run of one node, 1: longer (readPool.runs)
	// refs counts the prefetcher and the node reads whose copies are
	// views into data.
	refs atomic.Int32
}

// noRun is the run read of a node outside its chunk (visit reports it).
var noRun = &runRead{}

// readRun reads the run of nodes that starts with ptrs[0] (a single node
// is a run of one; n 0: not read, the node lies outside its chunk). The
// later copies are read on goroutines of their own beside copy 0: on a
// mirrored image half the reading is theirs, and the namespace pass on
// the first goroutine waits for none of it.
func (c *checker) readRun(ptrs []format.KeyPtr) *runRead {
	ns := uint64(c.sb.NodeSize)
	n := 1
	for n < len(ptrs) && n < runMax && ptrs[n].Logical == ptrs[n-1].Logical+ns {
		n++
	}
	start := ptrs[0].Logical
	ch, ok := c.vol.Chunks.Lookup(start)
	if !ok || start%ns != 0 || start+uint64(n)*ns > ch.End() {
		return noRun
	}
	run := c.reads.getRun(n, c.vol.Copies(start))
	run.start, run.n = start, n
	var targets []volume.Target
	if !ch.IsParity() {
		targets, _ = c.vol.Locate(start)
	}
	bufs := make([][]byte, len(run.data))
	for m := range bufs {
		if m >= len(targets) || !c.vol.IsMissing(targets[m].DevID) {
			bufs[m] = run.buf(m, n*int(ns), &c.reads.arena)
		}
	}
	read := func(m int) {
		if bufs[m] != nil && c.vol.ReadCopy(start, bufs[m], m) == nil {
			run.data[m] = bufs[m]
		}
	}
	var wg sync.WaitGroup
	for m := 1; m < len(bufs); m++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			read(m)
		}()
	}
	if len(bufs) > 0 {
		read(0)
	}
	wg.Wait()
	return run
}

// view is copy m of the node of ns bytes at logical in r, nil when r
// does not hold it (then it is read on its own).
func (r *runRead) view(logical uint64, ns, m int) []byte {
	if r == nil || r.n == 0 || logical < r.start || logical >= r.start+uint64(r.n*ns) || m >= len(r.data) || r.data[m] == nil {
		return nil
	}
	off := int(logical - r.start)
	return r.data[m][off : off+ns : off+ns]
}

// next is the read of the next child.
func (pf *prefetcher) next() *nodeRead { return <-pf.out }

// stop ends the prefetcher (early return: cancelled) and waits for it.
func (pf *prefetcher) stop() {
	close(pf.done)
	pf.wg.Wait()
}

// locate puts where copy m lives into p.
func (c *checker) locate(p *Problem, targets []volume.Target, m int) {
	if m < len(targets) {
		p.DevID, p.Offset = targets[m].DevID, targets[m].Physical
		if d, ok := c.vol.Device(p.DevID); ok {
			p.Device = d.Path
		}
	}
}

// copyPlace names where copy m lives, for a message naming a second copy.
func (c *checker) copyPlace(targets []volume.Target, m int) string {
	if m >= len(targets) {
		return ""
	}
	return fmt.Sprintf(" (devid %d at offset %d)", targets[m].DevID, targets[m].Physical)
}

// nodesTotal is what the progress of the node pass counts up to: the
// metadata bytes the superblock counts (bytes_used less the data
// extents' counter) in nodes, at least the nodes seen; 0 (no total)
// without exact counters. Display only: the superblock is not trusted
// for anything else here.
func (c *checker) nodesTotal() uint64 {
	sb := c.sb
	if sb.RoCompat&format.RoCompatCounters == 0 || sb.NodeSize == 0 || sb.BytesUsed < sb.Counters.PhysicalBytes {
		return 0
	}
	return max((sb.BytesUsed-sb.Counters.PhysicalBytes)/uint64(sb.NodeSize), uint64(len(c.seen)))
}
