package transfer

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/zeros"
)

// tarPipe runs TarOut on two cores. The walk (directories, inodes,
// headers) stays on the caller's goroutine; the file data is read from a
// second read-only instance of the image (fsys.FS is not safe for
// concurrent use), checked, and laid into output blocks between the
// headers by an assembler goroutine; a writer goroutine writes the blocks
// out. tar-out of the Go tree spent about half its CPU on each side.
type tarPipe struct {
	data   *fsys.FS
	items  chan []pipeItem // walker -> assembler, in stream order, in batches
	batch  []pipeItem      // the walker's items not sent yet
	queued uint64          // header and file bytes in batch
	blocks chan []byte     // assembler -> writer
	free   chan []byte     // writer -> assembler
	chunk  []byte          // the walker's stream bytes since the last item
	sent   int             // chunk[:sent] went out in items
	failed atomic.Bool
	skips  *skipList // files whose data did not read
	side   []byte    // the assembler's buffer for verified items
	mu     sync.Mutex
	err    error
	done   sync.WaitGroup
}

// pipeItem is the stream bytes (headers, padding) before a file's data,
// the file, or a chunk the assembler is done with.
type pipeItem struct {
	hdr     []byte
	in      *fsys.Inode  // its data follows hdr; nil for none
	rs      []fsys.Range // only these ranges of it, one after the other (sparse entry); nil: all
	src     string       // in's image path, for errors
	hlen    int          // >0: hdr ends in in's header of hlen bytes, out only if in reads (verified)
	skip    error        // an entry the walk left out: reported in stream order
	release []byte       // every item of this chunk is handled: reuse it
}

const (
	pipeBlock  = 1 << 20  // output block: w gets writes of this size
	pipeBlocks = 4        // blocks in flight: the memory bound is about 4 MiB + chunks
	pipeChunk  = 64 << 10 // the walker's header chunks
	pipeBatch  = 256      // items per hand-over to the assembler
)

var chunkPool = sync.Pool{New: func() any { return make([]byte, 0, pipeChunk) }}

func newTarPipe(data *fsys.FS, w io.Writer, skips *skipList) *tarPipe {
	p := &tarPipe{data: data, skips: skips, items: make(chan []pipeItem, 4), blocks: make(chan []byte, pipeBlocks-2),
		free: make(chan []byte, pipeBlocks), chunk: chunkPool.Get().([]byte)[:0]}
	for range pipeBlocks {
		p.free <- make([]byte, pipeBlock)
	}
	p.done.Add(2)
	go p.assemble()
	go p.write(w)
	return p
}

// errPipeFailed stops the walk once the assembler or the writer failed;
// close returns their error.
var errPipeFailed = errors.New("tar-out stream failed")

// Write takes stream bytes from the walker (tar.Writer and raw entries).
func (p *tarPipe) Write(b []byte) (int, error) {
	if p.failed.Load() {
		return 0, errPipeFailed
	}
	if len(p.chunk)+len(b) > cap(p.chunk) {
		p.flushChunk()
	}
	if len(b) > cap(p.chunk) { // a big raw write (sparse entry data): an item of its own
		p.send(pipeItem{hdr: append([]byte(nil), b...)})
		return len(b), nil
	}
	p.chunk = append(p.chunk, b...)
	return len(b), nil
}

// send queues an item; the assembler gets them in batches (a hand-over
// per file cost a cross-CPU wake-up each: ~13 us on this VM, slower than
// reading the file).
func (p *tarPipe) send(it pipeItem) {
	p.batch = append(p.batch, it)
	// Header bytes count too: a crafted image's files with 1 MiB of
	// xattrs each would otherwise queue 256 MiB a batch.
	p.queued += uint64(len(it.hdr))
	if it.in != nil {
		p.queued += it.in.Size // for a sparse entry, more than it reads: fine
	}
	if len(p.batch) >= pipeBatch || p.queued >= pipeBlock {
		p.sendBatch()
	}
}

func (p *tarPipe) sendBatch() {
	if len(p.batch) > 0 {
		p.items <- p.batch
		p.batch, p.queued = make([]pipeItem, 0, pipeBatch), 0
	}
}

// flushChunk sends what the chunk holds and hands it back for reuse.
func (p *tarPipe) flushChunk() {
	p.sendHdr(nil, nil, "")
	p.send(pipeItem{release: p.chunk})
	p.chunk, p.sent = chunkPool.Get().([]byte)[:0], 0
}

func (p *tarPipe) sendHdr(in *fsys.Inode, rs []fsys.Range, src string) {
	if len(p.chunk) > p.sent || in != nil {
		p.send(pipeItem{hdr: p.chunk[p.sent:len(p.chunk):len(p.chunk)], in: in, rs: rs, src: src})
		p.sent = len(p.chunk)
	}
}

// ranges queues the data ranges rs of in (a sparse entry's data, after
// its map, already written), or all of it for rs nil.
func (p *tarPipe) ranges(in *fsys.Inode, rs []fsys.Range, src string) {
	c := *in
	p.sendHdr(&c, rs, src)
}

// skip reports err after what is queued, so skips come in stream order.
func (p *tarPipe) skip(err error) {
	p.sendHdr(nil, nil, "")
	p.send(pipeItem{skip: err})
}

// verified queues a file of up to tarVerifyMax bytes with its header
// hb: the assembler reads the file first and writes header, data and
// padding only if it reads.
func (p *tarPipe) verified(hb []byte, in *fsys.Inode, src string) {
	c := *in
	if len(hb) > cap(p.chunk) { // big xattrs: a header of its own
		p.sendHdr(nil, nil, "")
		p.send(pipeItem{hdr: append([]byte(nil), hb...), in: &c, src: src, hlen: len(hb)})
		return
	}
	if len(p.chunk)+len(hb) > cap(p.chunk) {
		p.flushChunk()
	}
	p.chunk = append(p.chunk, hb...)
	p.send(pipeItem{hdr: p.chunk[p.sent:len(p.chunk):len(p.chunk)], in: &c, src: src, hlen: len(hb)})
	p.sent = len(p.chunk)
}

// close sends the rest, waits for it to be written and returns the
// first failure of the assembler or the writer.
func (p *tarPipe) close() error {
	p.flushChunk()
	p.sendBatch()
	close(p.items)
	p.done.Wait()
	return p.err
}

func (p *tarPipe) fail(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.mu.Unlock()
	p.failed.Store(true)
}

// assemble fills output blocks with the stream bytes and the files' data,
// in item order.
func (p *tarPipe) assemble() {
	defer p.done.Done()
	a := &assembly{p: p, blk: <-p.free}
	stopped := false
	for batch := range p.items {
		for _, it := range batch {
			stopped = a.item(it, stopped)
		}
	}
	if a.n > 0 {
		p.blocks <- a.blk[:a.n]
	} else {
		p.free <- a.blk
	}
	close(p.blocks)
}

// item handles one item; stopped: a failure came before it (what was
// assembled still goes out, nothing more).
func (a *assembly) item(it pipeItem, stopped bool) bool {
	switch {
	case it.release != nil:
		chunkPool.Put(it.release[:0]) //nolint:staticcheck // a slice header: fine for a pool of buffers
	case stopped || a.p.failed.Load():
		return true
	case it.skip != nil:
		a.p.skips.add(it.skip)
	case it.hlen > 0:
		a.verified(it)
	default:
		a.put(it.hdr)
		if it.in != nil {
			a.data(it.in, it.rs, it.src)
		}
	}
	return stopped
}

// verified writes a small file's header, data and padding if its data
// reads, else only the stream bytes before its header.
func (a *assembly) verified(it pipeItem) {
	h := len(it.hdr) - it.hlen
	a.put(it.hdr[:h])
	if a.p.side == nil {
		a.p.side = make([]byte, tarVerifyMax)
	}
	p := a.p.side[:it.in.Size]
	if err := readFull(a.p.data, it.in, p, 0); err != nil {
		a.p.skips.add(leftOut(it.src, err))
		return
	}
	a.put(it.hdr[h:])
	a.put(p)
	a.put(zeros.Block(int(padLen(int64(it.in.Size)))))
}

type assembly struct {
	p   *tarPipe
	blk []byte
	n   int
}

// room returns the free part of the current block, sending a full one.
func (a *assembly) room() []byte {
	if a.n == len(a.blk) {
		a.p.blocks <- a.blk
		a.blk, a.n = <-a.p.free, 0
	}
	return a.blk[a.n:]
}

func (a *assembly) put(b []byte) {
	for len(b) > 0 {
		c := copy(a.room(), b)
		a.n += c
		b = b[c:]
	}
}

// data reads in's data (or its ranges rs) into the blocks, checked like
// every read; from the first block that does not read on, zeros.
func (a *assembly) data(in *fsys.Inode, rs []fsys.Range, src string) {
	if rs == nil {
		rs = []fsys.Range{{Off: 0, Len: in.Size}}
	}
	for i, r := range rs {
		if off, err := a.read(in, r.Off, r.Off+r.Len); err != nil {
			a.p.skips.add(zeroed(src, off, in.Size, err))
			a.zeros(r.Off + r.Len - off + rangeBytes(rs[i+1:]))
			return
		}
	}
}

// read reads bytes [off, end) of in into the blocks; on a failure it
// returns where the data stopped.
func (a *assembly) read(in *fsys.Inode, off, end uint64) (uint64, error) {
	for off < end {
		r := a.room()
		k := min(uint64(len(r)), end-off)
		n, err := readSalvage(a.p.data, in, r[:k], off)
		a.n += n
		off += uint64(n)
		if err != nil {
			return off, err
		}
	}
	return off, nil
}

func (a *assembly) zeros(n uint64) {
	for n > 0 {
		k := min(n, uint64(zeros.BlockSize))
		a.put(zeros.Block(int(k)))
		n -= k
	}
}

// write writes the blocks out; after a failure it only recycles them.
func (p *tarPipe) write(w io.Writer) {
	defer p.done.Done()
	var failed bool
	for b := range p.blocks {
		if !failed {
			if _, err := w.Write(b); err != nil {
				p.fail(err)
				failed = true
			}
		}
		p.free <- b[:cap(b)]
	}
}
