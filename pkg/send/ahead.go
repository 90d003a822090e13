package send

import (
	"errors"
	"io"
	"sync"
)

// aheadWriter writes a stream on a second goroutine: the walk and the
// image reads of the next records run beside the write of the last ones
// (send to a pipe spent as much time in write(2) as in reading the
// image). Memory: aheadBufs buffers of aheadBuf bytes.
type aheadWriter struct {
	w    io.Writer
	buf  []byte
	full chan []byte
	free chan []byte
	done chan struct{}
	mu   sync.Mutex
	err  error // the first write error; later writes are dropped
	shut bool
}

const (
	aheadBuf  = 1 << 20
	aheadBufs = 3
)

func newAheadWriter(w io.Writer) *aheadWriter {
	a := &aheadWriter{w: w, full: make(chan []byte, aheadBufs), free: make(chan []byte, aheadBufs), done: make(chan struct{})}
	for range aheadBufs - 1 {
		a.free <- make([]byte, 0, aheadBuf)
	}
	a.buf = make([]byte, 0, aheadBuf)
	go a.run()
	return a
}

func (a *aheadWriter) run() {
	defer close(a.done)
	for b := range a.full {
		if a.failed() == nil {
			if _, err := a.w.Write(b); err != nil {
				a.mu.Lock()
				a.err = err
				a.mu.Unlock()
			}
		}
		a.free <- b[:0]
	}
}

func (a *aheadWriter) failed() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// Write queues p; it returns the writer's first error, if one came.
func (a *aheadWriter) Write(p []byte) (int, error) {
	if a.shut {
		return 0, errShut
	}
	n := len(p)
	for len(p) > 0 {
		if err := a.failed(); err != nil {
			return n - len(p), err
		}
		k := copy(a.buf[len(a.buf):cap(a.buf)], p)
		a.buf, p = a.buf[:len(a.buf)+k], p[k:]
		if len(a.buf) == cap(a.buf) {
			a.full <- a.buf
			a.buf = <-a.free
		}
	}
	return n, nil
}

var errShut = errors.New("send: write after the stream ended")

// Flush writes what is queued, stops the goroutine and returns the first
// write error. Later calls return the same.
func (a *aheadWriter) Flush() error {
	if !a.shut {
		a.shut = true
		if len(a.buf) > 0 {
			a.full <- a.buf
		}
		close(a.full)
		<-a.done
	}
	return a.failed()
}
