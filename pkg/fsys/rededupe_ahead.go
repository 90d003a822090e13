package fsys

import (
	"bytes"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/inband"
)

// BlockAhead reads, sums and hashes on a second goroutine the blocks a
// run of Rededupe will read next, while the FS's goroutine does the tree
// work of the blocks before: reading, verifying and hashing was 0.74 of
// the 1.5 CPU-seconds of a run on the bench set, all on one core.
//
// The FS's goroutine plans (Plan: the byte address of each block that
// will be read, which dedupe's prefilter found in its walk of the extent
// map) and takes (readBlock); the reader
// only reads the devices and computes. What it read is used only when the
// block still lies at the planned address when its turn comes, and only
// after its sector sums, computed by the reader, equal the stored ones
// (else the block is read as without BlockAhead). Until its turn a
// planned block is still referenced by its file, so its bytes cannot be
// freed and written over.
type BlockAhead struct {
	f     *FS
	pol   dataPolicy
	q     []*aheadBlock // planned, not yet taken or dropped, in order
	batch []*aheadBlock // planned, not yet sent to the reader
	work  chan []*aheadBlock
	ring  *aheadRing // the FS goroutine's; a planned block holds a piece
	exit  chan struct{}
	inUse *aheadBlock   // taken; its buffer is back in free at the next take
	late  []*aheadBlock // dropped while the reader read them: their buffers come back when done
	seq   int           // the file being deduped (Begin)
	ss    uint64
	csum  format.CsumType
}

// aheadBlock is one planned block and, once done is closed, what the
// reader got.
type aheadBlock struct {
	seq     int    // the file's place in the run's order
	off     uint64 // file offset
	addr, n uint64 // logical of its first byte; its bytes in the file
	piece   *ringPiece
	data    []byte       // its piece: the sector-rounded data, then room for their sums
	sums    []byte       // the sums the reader computed (when ok)
	state   atomic.Int32 // aheadPlanned, then reading and done, or cancelled
	ok      bool         // read (when done): buf holds the data and their sums
	hash    [format.CsumSize]byte
}

// A planned block is claimed once, by the reader (reading, then done) or
// by the FS goroutine (cancelled: it reads the block in turn itself). So
// neither waits for the other except for a block being read: the FS
// goroutine spins for that one (a wait that sleeps and wakes a block at
// a time cost more than the reads it moved), at most aheadWait.
const (
	aheadPlanned int32 = iota
	aheadReading
	aheadDone
	aheadCancelled
)

// The read-ahead holds aheadBuffers whole blocks' data and sums (1 MiB
// of 128 KiB blocks), and at most aheadSlots blocks: as many small ones
// as fit (a run of small files has the reader far ahead, where a few
// block-sized buffers let the FS goroutine catch up and read in turn).
// Six buffers had the bench set's reader get 1.31 of 1.84 GiB ahead,
// twelve 1.70 GiB and a run 7% faster (1.34 -> 1.25 s on tmpfs); eight
// keep most of that for 0.5 MB less peak RSS (dedupe-tool run's memory
// is a target against duperemove: 6 interleaved runs each, same time).
// The FS goroutine plans only when half the memory is free, so the
// reader wakes once for several blocks (a wake per block cost more than
// the reads it moved). No read-ahead for dedupe blocks bigger than
// aheadMaxBlock.
const (
	aheadBuffers  = 8
	aheadSlots    = 512
	aheadMaxBlock = 1 << 20
)

// NewBlockAhead starts the reader for runs with block size bs and hash h;
// nil (no read-ahead) for blocks over aheadMaxBlock. Close ends it.
func (f *FS) NewBlockAhead(bs uint64, h format.CsumType) *BlockAhead {
	if bs > aheadMaxBlock {
		return nil
	}
	sb := f.st.Super()
	ss := uint64(sb.SectorSize)
	// A batch holds at least one block: the channel never fills.
	r := &BlockAhead{f: f, pol: dataPolicy{dedupe: true, block: bs, hash: h}, ss: ss, csum: sb.CsumType,
		work: make(chan []*aheadBlock, aheadSlots), exit: make(chan struct{})}
	r.ring = newAheadRing(aheadBuffers * r.pieceSize(bs))
	go r.read()
	return r
}

// read is the reader goroutine: it fills the planned blocks in order.
func (r *BlockAhead) read() {
	defer close(r.exit)
	for batch := range r.work {
		for _, b := range batch {
			if b.state.CompareAndSwap(aheadPlanned, aheadReading) {
				r.fill(b)
			}
		}
	}
}

// fill reads b once claimed for reading: a plain read of the first copy
// (a failure leaves the block to readVerified, which has the fallbacks),
// its sector sums and its dedupe hash. Pure but for b: any goroutine.
func (r *BlockAhead) fill(b *aheadBlock) {
	ss, c := r.ss, r.csum
	raw := b.data[:(b.n+ss-1)/ss*ss]
	if r.f.st.Vol.ReadCopy(b.addr, raw, 0) == nil {
		b.sums = b.data[len(raw):len(raw)]
		for s := uint64(0); s < uint64(len(raw)); s += ss {
			sum := format.Checksum(c, raw[s:s+ss])
			b.sums = append(b.sums, sum[:c.Len()]...)
		}
		b.hash = inband.BlockHash(r.pol.hash, raw[:b.n])
		b.ok = true
	}
	b.state.Store(aheadDone)
}

// help fills, on the FS goroutine, the furthest planned block the reader
// has not claimed: while the reader is the slower one, both cores read.
func (r *BlockAhead) help() bool {
	for i := len(r.q) - 1; i >= 0; i-- {
		if b := r.q[i]; b.state.CompareAndSwap(aheadPlanned, aheadReading) {
			r.fill(b)
			return true
		}
	}
	return false
}

// Begin says the blocks of file seq are taken next.
func (r *BlockAhead) Begin(seq int) {
	if r != nil {
		r.seq = seq
	}
}

// Room is how many more blocks Plan may queue now, at most: 0 until half
// of the memory and of the slots are free (Plan may still refuse a block
// that does not fit).
func (r *BlockAhead) Room() int {
	if r == nil || r.ring.free() < len(r.ring.mem)/2 || len(r.q)+len(r.late) > aheadSlots/2 {
		return 0
	}
	return aheadSlots - len(r.q) - len(r.late)
}

// pieceSize is the ring memory a block of n bytes takes: its sectors and
// their sums.
func (r *BlockAhead) pieceSize(n uint64) int {
	sectors := (n + r.ss - 1) / r.ss
	return int(sectors * (r.ss + uint64(r.csum.Len())))
}

// Flush sends the blocks planned so far to the reader.
func (r *BlockAhead) Flush() {
	if r != nil && len(r.batch) > 0 {
		r.work <- r.batch // never blocks: a batch holds at least one of the buffers
		r.batch = nil
	}
}

// Close drops what is planned and stops the reader.
func (r *BlockAhead) Close() {
	if r == nil {
		return
	}
	r.Flush()
	r.release()
	for _, b := range r.q {
		r.drop(b)
	}
	r.q = nil
	close(r.work)
	<-r.exit
}

// release gives the taken block's memory back.
func (r *BlockAhead) release() {
	if r.inUse != nil {
		r.ring.put(r.inUse.piece)
	}
	r.inUse = nil
}

// drop takes a planned block's buffer back, or once the reader is done
// with it (late) if it is reading it: dropping never waits.
func (r *BlockAhead) drop(b *aheadBlock) {
	if b.state.CompareAndSwap(aheadPlanned, aheadCancelled) || b.state.Load() == aheadDone {
		r.ring.put(b.piece)
	} else {
		r.late = append(r.late, b)
	}
}

// reclaim takes back the buffers of late blocks the reader is done with.
func (r *BlockAhead) reclaim() {
	keep := r.late[:0]
	for _, b := range r.late {
		if b.state.Load() == aheadDone {
			r.ring.put(b.piece)
		} else {
			keep = append(keep, b)
		}
	}
	r.late = keep
}

// aheadWait is how long take waits for a block the reader is reading
// (helping meanwhile) before reading it in turn itself: about a block's
// read and hash. On a machine whose other core is busy the reader may not
// run for milliseconds; waiting on it then made runs slower than without.
const aheadWait = 100 * time.Microsecond

// claim cancels b unless the reader has claimed it, or waits up to
// aheadWait for the reader to be done with it. True: done, use it;
// false: read it in turn (b is dropped).
func (r *BlockAhead) claim(b *aheadBlock) bool {
	if b.state.CompareAndSwap(aheadPlanned, aheadCancelled) {
		r.ring.put(b.piece) // the reader is behind
		return false
	}
	var deadline time.Time
	for b.state.Load() == aheadReading {
		if r.help() {
			continue
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(aheadWait)
		} else if time.Now().After(deadline) {
			r.drop(b)
			return false
		}
		runtime.Gosched()
	}
	return true
}

// take returns the sector-rounded bytes of the block of n bytes at file
// offset off of the current file, when they were planned at addr and the
// reader's sums equal the stored sums of those sectors; nil: read it.
// The bytes stay valid until the next take.
func (r *BlockAhead) take(off, addr, n uint64) ([]byte, [format.CsumSize]byte, error) {
	var none [format.CsumSize]byte
	if r == nil {
		return nil, none, nil
	}
	r.Flush() // the block may still be in the batch being planned
	r.release()
	r.reclaim()
	for len(r.q) > 0 && (r.q[0].seq < r.seq || (r.q[0].seq == r.seq && r.q[0].off < off)) {
		r.drop(r.q[0])
		r.q = r.q[1:]
	}
	if len(r.q) == 0 || r.q[0].seq != r.seq || r.q[0].off != off {
		return nil, none, nil
	}
	b := r.q[0]
	r.q = r.q[1:]
	if b.addr != addr || b.n != n {
		r.drop(b) // the block moved, or its extent changed: read it
		return nil, none, nil
	}
	if !r.claim(b) {
		return nil, none, nil
	}
	r.inUse = b
	if !b.ok {
		return nil, none, nil
	}
	ok, err := r.f.storedSumsEqual(addr, b.sums)
	if err != nil || !ok {
		return nil, none, err // readVerified reads it again, with its fallbacks
	}
	return b.data[:(n+r.ss-1)/r.ss*r.ss], b.hash, nil
}

// storedSumsEqual reports whether sums are the stored sums of the
// sectors from logical on (false when one has none).
func (f *FS) storedSumsEqual(logical uint64, sums []byte) (bool, error) {
	sb := f.st.Super()
	ss, cl := uint64(sb.SectorSize), sb.CsumType.Len()
	c := &sumCache{f: f}
	for i := 0; i < len(sums); i += cl {
		want, err := c.get(logical + uint64(i/cl)*ss)
		if err != nil || want == nil || !bytes.Equal(want, sums[i:i+cl]) {
			return false, err
		}
	}
	return true, nil
}

// Plan queues the block of n bytes at file offset off of file seq (the
// run's order), whose first byte lies at logical addr, and reports
// whether it did: false when its memory is not free now (plan it again
// later). A block it cannot read ahead (bigger than the dedupe block, or
// empty) counts as planned: it is read in turn. The caller's plan
// (dedupe's prefilter knows the addresses from its walk) costs no tree
// work here.
func (r *BlockAhead) Plan(seq int, off, addr, n uint64) bool {
	if r == nil || n > r.pol.block || n == 0 {
		return true
	}
	if len(r.q)+len(r.late) >= aheadSlots {
		return false
	}
	piece, mem := r.ring.get(r.pieceSize(n))
	if piece == nil {
		return false
	}
	b := &aheadBlock{seq: seq, off: off, addr: addr, n: n, piece: piece, data: mem}
	r.q = append(r.q, b)
	r.batch = append(r.batch, b)
	return true
}
