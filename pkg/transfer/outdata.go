package transfer

import (
	"fmt"
	"io"
	"sync/atomic"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// writeData writes the data of in to w: only its data ranges are read (a
// sparse file costs O(extents)), and within them only runs of non-zero
// blocks are written; the caller sets the size, leaving holes that
// SEEK_HOLE finds. It returns the write error and the read error.
//
// A file of more than half the buffer is read into one half while a
// second goroutine writes the other: reading (and verifying) and writing
// each took half of a 1 GiB copy-out's time, one after the other.
func (c *outCopier) writeData(in *fsys.Inode, w *fdWriter) (werr, rerr error) {
	half := len(c.buf) / 2
	if in.Size <= uint64(half) {
		rerr = c.f.ReadData(in, c.buf, func(p []byte, off uint64) error {
			if werr = writeNonZero(w, p, int64(off)); werr != nil {
				return werr
			}
			c.progress(len(p))
			return nil
		})
		return werr, rerr
	}
	type piece struct {
		p   []byte
		off uint64
	}
	free := make(chan []byte, 2)
	free <- c.buf[:half:half]
	free <- c.buf[half : 2*half : 2*half]
	work := make(chan piece, 2)
	done := make(chan error, 1)
	var failed atomic.Bool // the writer's error stops the reader
	go func() {
		var err error
		for pc := range work {
			if err == nil {
				if err = writeNonZero(w, pc.p, int64(pc.off)); err != nil {
					failed.Store(true)
				}
			}
			free <- pc.p[:cap(pc.p)]
		}
		done <- err
	}()
	rerr = c.readPieces(in, half, free, &failed, func(p []byte, off uint64) {
		work <- piece{p, off}
		c.progress(len(p))
	})
	close(work)
	return <-done, rerr
}

// readPieces reads the data ranges of in, in pieces of at most size
// bytes each into a buffer taken from free, and hands it to fn (which
// gives the buffer back to free once written); it stops early once failed
// is set.
func (c *outCopier) readPieces(in *fsys.Inode, size int, free chan []byte, failed *atomic.Bool, fn func(p []byte, off uint64)) error {
	rs, err := c.f.DataRanges(in)
	if err != nil {
		return err
	}
	for _, r := range rs {
		for off, end := r.Off, r.Off+r.Len; off < end; {
			if failed.Load() {
				return nil
			}
			buf := <-free
			n, err := c.f.ReadAt(in, buf[:min(uint64(size), end-off)], off)
			if n > 0 {
				fn(buf[:n], off)
				off += uint64(n)
			} else {
				free <- buf
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
			if n == 0 { // never spin on a read that makes no progress
				return fmt.Errorf("data ends at %d of %d bytes: %w", off, end, format.ErrCorrupt)
			}
		}
	}
	return nil
}

func (c *outCopier) progress(n int) {
	if c.o.Progress != nil {
		c.o.Progress(int64(n))
	}
}
