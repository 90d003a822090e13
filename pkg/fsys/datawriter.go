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
}

type dataWrite struct {
	logical uint64
	buf     []byte
}

// queueDepth and maxInFlight bound the writes and bytes in flight.
const (
	queueDepth  = 256
	maxInFlight = 8 << 20
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
			if err := w.vol.Write(d.logical, d.buf); err != nil {
				w.mu.Lock()
				if w.err == nil {
					w.err = err
				}
				w.mu.Unlock()
			}
			w.inFlight.Release(int64(min(len(d.buf), maxInFlight)))
			w.pending.Done()
		}
	}()
}

// write queues buf for logical; it reports an earlier write's failure.
func (w *dataWriter) write(logical uint64, buf []byte) error {
	if err := w.failed(); err != nil {
		return err
	}
	w.start()
	w.inFlight.Acquire(context.Background(), int64(min(len(buf), maxInFlight)))
	w.pending.Add(1)
	w.queue <- dataWrite{logical, buf}
	return nil
}

func (w *dataWriter) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// drain waits for every queued write and returns the first failure.
func (w *dataWriter) drain() error {
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
