package fsys

import (
	"context"
	"sync"

	"golang.org/x/sync/semaphore"

	"github.com/ddfs/ddfs/pkg/volume"
)

// dataWriter writes data extents in the background, so hashing,
// compression and tree updates of the next blocks overlap the device
// writes of the previous ones. Writes go to space no committed state
// references, so their order does not matter; what matters is that all
// of them are done (and succeeded) before the commit that references
// them, and before anything reads them back: drain does both.
type dataWriter struct {
	vol      *volume.Volume
	inFlight *semaphore.Weighted
	queue    chan dataWrite
	wg       sync.WaitGroup
	mu       sync.Mutex
	err      error
	running  bool
	pending  sync.WaitGroup
	// batch gathers small writes that follow each other on the device
	// (the files of a tree copy are laid out in a row): one device write
	// and one hand-over to the goroutine per batch, not per file.
	batch    dataWrite
	batchEnd uint64 // the end of the batch's chunk: a batch stays in one
}

type dataWrite struct {
	logical uint64
	buf     []byte
}

// queueDepth and maxInFlight bound the writes and bytes in flight;
// writes below batchSmall are gathered into batches of up to ioSize.
const (
	queueDepth  = 256
	maxInFlight = 8 << 20
	batchSmall  = 64 << 10
)

func (w *dataWriter) start() {
	if w.running {
		return
	}
	w.running = true
	w.queue = make(chan dataWrite, queueDepth)
	if w.inFlight == nil {
		w.inFlight = semaphore.NewWeighted(maxInFlight)
	}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for d := range w.queue {
			if err := w.writeOut(d); err != nil {
				w.mu.Lock()
				if w.err == nil {
					w.err = err
				}
				w.mu.Unlock()
			}
			w.inFlight.Release(int64(min(len(d.buf), maxInFlight)))
			putBuffer(d.buf)
			w.pending.Done()
		}
	}()
}

// bufferPools recycle write buffers by size class (powers of two from
// 4 KiB to 8 MiB): a fresh buffer per extent costs an allocation that
// zeroes it, as much work as the copy itself.
var bufferPools [12]sync.Pool

func sizeClass(n int) int {
	c := 0
	for size := 4096; size < n && c < len(bufferPools)-1; size <<= 1 {
		c++
	}
	return c
}

// buffer returns an n-byte buffer (from the pool when it fits a class)
// holding p followed by zeros. write takes it over.
func buffer(n int, p []byte) []byte {
	b := rawBuffer(n)
	copy(b, p)
	clear(b[len(p):])
	return b
}

// rawBuffer is buffer without the copy and the zeroing: the caller fills
// all n bytes.
func rawBuffer(n int) []byte {
	c := sizeClass(n)
	var b []byte
	if n <= 4096<<c {
		if v, ok := bufferPools[c].Get().(*[]byte); ok {
			b = (*v)[:n]
		} else {
			b = make([]byte, n, 4096<<c)
		}
	} else {
		b = make([]byte, n)
	}
	return b
}

func putBuffer(b []byte) {
	if c := sizeClass(cap(b)); cap(b) == 4096<<c {
		bufferPools[c].Put(&b)
	}
}

// ioSize is the largest single device write. Big extents go out in
// pieces: on this machine an 8 MiB pwrite into a file the kernel is also
// writing back took up to twice as long per byte as 1 MiB ones.
const ioSize = 1 << 20

func (w *dataWriter) writeOut(d dataWrite) error {
	for off := 0; off < len(d.buf); off += ioSize {
		if err := w.vol.Write(d.logical+uint64(off), d.buf[off:min(off+ioSize, len(d.buf))]); err != nil {
			return err
		}
	}
	return nil
}

// write queues buf for logical and takes it over (it goes back to the
// pool once written); it reports an earlier write's failure.
func (w *dataWriter) write(logical uint64, buf []byte) error {
	if err := w.failed(); err != nil {
		return err
	}
	w.start()
	b := &w.batch
	if len(buf) < batchSmall {
		end := logical + uint64(len(buf))
		if b.buf != nil && b.logical+uint64(len(b.buf)) == logical && len(b.buf)+len(buf) <= ioSize && end <= w.batchEnd {
			b.buf = append(b.buf, buf...)
			putBuffer(buf)
			return nil
		}
		w.flush()
		// rawBuffer, not buffer: only b.buf[:len] is ever written out, and
		// zeroing a whole ioSize batch per small write cost 16% of the
		// mount's CPU on 4K random writes (a new batch per write).
		b.logical, b.buf, w.batchEnd = logical, append(rawBuffer(ioSize)[:0], buf...), end
		if c, ok := w.vol.Chunks.Lookup(logical); ok {
			w.batchEnd = c.End()
		}
		putBuffer(buf)
		return nil
	}
	w.queueOne(dataWrite{logical, buf})
	return nil
}

// flush queues the batch gathered so far.
func (w *dataWriter) flush() {
	if w.batch.buf != nil {
		w.queueOne(w.batch)
		w.batch = dataWrite{}
	}
}

func (w *dataWriter) queueOne(d dataWrite) {
	w.inFlight.Acquire(context.Background(), int64(min(len(d.buf), maxInFlight)))
	w.pending.Add(1)
	w.queue <- d
}

func (w *dataWriter) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// drain waits for every queued write and returns the first failure.
func (w *dataWriter) drain() error {
	w.flush()
	w.pending.Wait()
	return w.failed()
}

// stop drains and ends the background goroutine.
func (w *dataWriter) stop() error {
	err := w.drain()
	if w.running {
		close(w.queue)
		w.wg.Wait()
		w.running = false
	}
	return err
}

// writeNow writes buf at logical before it returns (the caller keeps
// buf). Queued writes go first: one of them may be to space freed and
// taken again since, which this write must land after.
func (w *dataWriter) writeNow(logical uint64, buf []byte) error {
	if err := w.drain(); err != nil {
		return err
	}
	return w.writeOut(dataWrite{logical, buf})
}
