package dedupe

import (
	"fmt"
	"io"
	"io/fs"
	"sync"

	"github.com/ddfs/ddfs/pkg/cdc"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/units"
)

// sparseFile is a file that knows where its data lies (the image view's
// files): an estimate of it reads the chunks holding data and accounts
// for the holes without reading them, so a file of 2^63 bytes costs its
// extents, not its size.
type sparseFile interface {
	io.ReaderAt
	Stat() (fs.FileInfo, error)
	DataRanges() ([]fsys.Range, error)
}

// zeroChunk feeds holes to the cdc rows; made on first use (8 MiB).
var zeroChunk = sync.OnceValue(func() []byte { return make([]byte, chunkSize) })

// addSparse adds f when some whole chunk of it is a hole; false: read it
// as any file.
func (e *Estimator) addSparse(f sparseFile) (bool, error) {
	st, err := f.Stat()
	if err != nil {
		return false, err
	}
	rs, err := f.DataRanges()
	if err != nil {
		return false, err
	}
	size, chunks := uint64(st.Size()), uint64(0)
	eachChunk(rs, func(uint64) { chunks++ })
	if chunks >= (size+chunkSize-1)/chunkSize {
		return false, nil
	}
	e.files++
	b := <-e.bufs
	defer func() { e.bufs <- b }()
	pos := uint64(0) // where the bytes not yet added start
	eachChunk(rs, func(c uint64) {
		if err != nil {
			return
		}
		if err = e.hole(c - pos); err != nil {
			return
		}
		n := min(chunkSize, size-c)
		if m, rerr := f.ReadAt(b[:n], int64(c)); uint64(m) < n {
			err = fmt.Errorf("read at %d: %d of %d bytes: %w", c, m, n, rerr)
			return
		}
		pos, err = c+n, e.chunk(b[:n], c+n == size)
	})
	if err != nil || pos == size {
		return true, err
	}
	if err := e.hole(size - pos); err != nil {
		return true, err
	}
	return true, e.chunk(nil, true)
}

// eachChunk calls fn with the offset of each chunk holding part of rs
// (sorted, not overlapping), in order, once.
func eachChunk(rs []fsys.Range, fn func(off uint64)) {
	next := uint64(0) // the first chunk not yet passed to fn
	for _, r := range rs {
		for c := max(next, r.Off/chunkSize*chunkSize); c < r.Off+r.Len; c += chunkSize {
			fn(c)
			next = c + chunkSize
		}
	}
}

// hole adds n zero bytes at a chunk boundary: nothing for the fixed rows
// (all-zero blocks are holes), and for a cdc row only the bytes where its
// cuts may depend on what is around the hole.
func (e *Estimator) hole(n uint64) error {
	if n == 0 {
		return nil
	}
	e.logical = units.SatAdd(e.logical, n)
	if e.o.Progress != nil {
		e.o.Progress(int64(n))
	}
	for _, r := range e.rows {
		if !r.cdc {
			continue
		}
		for _, en := range e.cdcZeros(r, n) {
			if err := r.t.add(en); err != nil {
				return err
			}
		}
	}
	return nil
}

// cdcZeros feeds z zero bytes to cdc row r. A cut reads at most Max
// bytes from the chunk's start, so once the carry is all zero (after Max
// zeros), every chunk starting with Max zeros ahead has the same length,
// holds zeros only and gives no entry: whole ones are passed over.
func (e *Estimator) cdcZeros(r *row, z uint64) []entry {
	par := cdc.ForAverage(int(r.block))
	zeroLen := uint64(cdc.Cut(zeroChunk()[:par.Max+1], par))
	var out []entry
	feed := func(n uint64) {
		for n > 0 {
			k := min(n, chunkSize)
			out = append(out, e.cutCDC(r, zeroChunk()[:k], false)...)
			n -= k
		}
	}
	lead := min(z, uint64(par.Max))
	feed(lead)
	z -= lead
	if ahead := uint64(len(r.carry)) + z; ahead > uint64(par.Max) {
		z -= (ahead - uint64(par.Max)) / zeroLen * zeroLen
	}
	feed(z)
	return out
}
