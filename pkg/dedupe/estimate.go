// Package dedupe is offline dedupe of ddfs images: estimating what dedupe
// would save on any data (Estimator), deduping data already written in an
// image (Run), and the dedupe index's maintenance (Rebuild, Prune).
package dedupe

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"

	"github.com/zeebo/blake3"
	"golang.org/x/sync/errgroup"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/cdc"
	"github.com/ddfs/ddfs/pkg/codec"
	"github.com/ddfs/ddfs/pkg/units"
	"github.com/ddfs/ddfs/pkg/zeros"
)

// chunkSize is the unit of reading: a multiple of every block size
// (at most 8 MiB), so fixed blocks never straddle two reads.
const chunkSize = 8 << 20

// indexEntryDisk is what one entry costs in the dedupe tree: a 59-byte
// DEDUPE_ITEM in a full leaf (FORMAT.md §6.8) plus the 8-byte hash prefix
// of its extent item (§4.7).
const indexEntryDisk = 59 + 8

// DefaultMemory bounds the block tables of an estimate (EntryBytes per
// block); past it they spill to a temporary file.
const DefaultMemory = 64 << 20

// EstimateOptions choose the chunkings an estimate reports.
type EstimateOptions struct {
	Blocks   []uint64           // fixed block sizes, powers of two 4K..8M
	CDC      uint64             // average chunk of the content-defined row; 0: no such row
	Compress format.Compression // with a level: also the stored bytes
	Level    uint8
	Memory   int    // bytes of block tables before spilling; 0: DefaultMemory
	TempDir  string // where spills go ("": os.TempDir)
	Progress func(n int64)
}

// Row is one chunking's figures.
type Row struct {
	BlockSize    uint64  `json:"block_size"` // 0 for content-defined
	Chunking     string  `json:"chunking"`   // "fixed" or "cdc"
	UniqueBytes  uint64  `json:"unique_bytes"`
	Ratio        float64 `json:"ratio"` // logical / unique
	IndexEntries uint64  `json:"index_entries"`
	IndexBytes   uint64  `json:"index_bytes"` // entries × indexEntryDisk
	StoredBytes  *uint64 `json:"stored_bytes,omitempty"`
}

// Estimate is the result: all-zero blocks count as logical but not as
// unique (ddfs stores them as holes).
type Estimate struct {
	LogicalBytes uint64 `json:"logical_bytes"`
	Files        uint64 `json:"files"`
	Sizes        []Row  `json:"sizes"`
}

type row struct {
	block uint64 // fixed size, or the cdc average
	cdc   bool
	t     tally
	carry []byte // cdc: bytes after the last cut of the current file
}

// Estimator reads data once and counts distinct blocks for every
// chunking at the same time, hashing on every core.
type Estimator struct {
	o       EstimateOptions
	rows    []*row
	logical uint64
	files   uint64
	bufs    chan []byte
}

// NewEstimator checks the options and starts an estimate.
func NewEstimator(o EstimateOptions) (*Estimator, error) {
	if o.Memory == 0 {
		o.Memory = DefaultMemory
	}
	e := &Estimator{o: o, bufs: make(chan []byte, 3)}
	for _, b := range o.Blocks {
		if b < 4<<10 || b > chunkSize || b&(b-1) != 0 {
			return nil, fmt.Errorf("block size %d: want a power of two 4K..8M", b)
		}
		e.rows = append(e.rows, &row{block: b})
	}
	if o.CDC != 0 {
		if o.CDC < 4<<10 || o.CDC > 2<<20 || o.CDC&(o.CDC-1) != 0 {
			return nil, fmt.Errorf("cdc average %d: want a power of two 4K..2M", o.CDC)
		}
		e.rows = append(e.rows, &row{block: o.CDC, cdc: true})
	}
	if len(e.rows) == 0 {
		return nil, errors.New("no block size to estimate")
	}
	per := max(o.Memory/EntryBytes/len(e.rows), 64)
	for _, r := range e.rows {
		r.t = tally{max: per, dir: o.TempDir}
	}
	for range cap(e.bufs) {
		e.bufs <- make([]byte, chunkSize)
	}
	return e, nil
}

// AddFS adds every regular file under root of fsys (symlinks are not
// followed).
func (e *Estimator) AddFS(fsys fs.FS, root string) error {
	return fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		f, err := fsys.Open(p)
		return e.addOpened(p, f, err)
	})
}

// addOpened adds the file just opened as p (and closes it).
func (e *Estimator) addOpened(p string, f io.ReadCloser, err error) error {
	if err != nil {
		return err
	}
	defer f.Close()
	if err := e.Add(f); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return nil
}

// Add adds one file's data (a sparseFile's holes without reading them).
// A file that fits one chunk is read and hashed in the caller's goroutine
// (handing a small file to other goroutines costs more than hashing it);
// in a bigger one, reading the next chunk overlaps hashing the current one.
func (e *Estimator) Add(r io.Reader) error {
	if f, ok := r.(sparseFile); ok {
		if done, err := e.addSparse(f); done || err != nil {
			return err
		}
	}
	e.files++
	b := <-e.bufs
	n, err := io.ReadFull(r, b)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		err = e.chunk(b[:n], true)
		e.bufs <- b
		return err
	}
	if err == nil {
		err = e.chunk(b, false)
	}
	e.bufs <- b
	if err != nil {
		return err
	}
	return e.addRest(r)
}

// addRest adds the chunks after the first, read ahead by a goroutine.
func (e *Estimator) addRest(r io.Reader) error {
	type chunk struct {
		b    []byte
		last bool
		err  error
	}
	ch := make(chan chunk, cap(e.bufs)-1)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(ch)
		for {
			b := <-e.bufs
			n, err := io.ReadFull(r, b)
			last := errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
			if last {
				err = nil
			}
			select {
			case ch <- chunk{b[:n], last, err}:
			case <-stop:
				e.bufs <- b
				return
			}
			if last || err != nil {
				return
			}
		}
	}()
	for c := range ch {
		if c.err == nil {
			c.err = e.chunk(c.b, c.last)
		}
		e.bufs <- c.b[:cap(c.b)]
		if c.err != nil {
			return c.err
		}
	}
	return nil
}

// chunk hashes one read for every row; last ends the file.
func (e *Estimator) chunk(p []byte, last bool) error {
	e.logical = units.SatAdd(e.logical, uint64(len(p)))
	if e.o.Progress != nil {
		e.o.Progress(int64(len(p)))
	}
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	spawn := func(fn func()) { g.Go(func() error { fn(); return nil }) }
	if len(p) < 1<<20 {
		spawn = func(fn func()) { fn() } // a small chunk is hashed here: handing it over costs more
	}
	pieces := func(r *row) int { // the hashing tasks of a row
		if r.cdc {
			return 1
		}
		return int((uint64(len(p)) + max(r.block, 1<<20) - 1) / max(r.block, 1<<20))
	}
	total := 0
	for _, r := range e.rows {
		total += pieces(r)
	}
	// Sized first: the tasks write their slots while this goroutine goes on.
	outs := make([][]entry, total)
	i := 0
	for _, r := range e.rows {
		if r.cdc {
			out := &outs[i]
			spawn(func() { *out = e.cutCDC(r, p, last) })
			i++
			continue
		}
		piece := max(r.block, 1<<20)
		for off := uint64(0); off < uint64(len(p)); off += piece {
			out := &outs[i]
			part := p[off:min(off+piece, uint64(len(p)))]
			spawn(func() { *out = e.hashFixed(part, r.block) })
			i++
		}
	}
	g.Wait()
	i = 0
	for _, r := range e.rows {
		n := pieces(r)
		for _, out := range outs[i : i+n] {
			for _, en := range out {
				if err := r.t.add(en); err != nil {
					return err
				}
			}
		}
		i += n
	}
	return nil
}

func (e *Estimator) hashFixed(p []byte, block uint64) []entry {
	out := make([]entry, 0, (uint64(len(p))+block-1)/block)
	for len(p) > 0 {
		n := min(uint64(len(p)), block)
		if en, ok := e.entry(p[:n]); ok {
			out = append(out, en)
		}
		p = p[n:]
	}
	return out
}

// cutCDC cuts the row's carried bytes and p as the write path does,
// keeping what may still move its cut (less than the maximum chunk).
func (e *Estimator) cutCDC(r *row, p []byte, last bool) []entry {
	out, rest := e.cdcEntries(append(r.carry, p...), r.block, last)
	r.carry = append(r.carry[:0:0], rest...)
	return out
}

// cdcEntries cuts buf into content-defined chunks (average block); unless
// last, it stops where a cut could still move and returns the rest. Pure.
func (e *Estimator) cdcEntries(buf []byte, block uint64, last bool) ([]entry, []byte) {
	par := cdc.ForAverage(int(block))
	var out []entry
	for len(buf) > 0 && (last || len(buf) > par.Max) {
		n := cdc.Cut(buf, par)
		if en, ok := e.entry(buf[:n]); ok {
			out = append(out, en)
		}
		buf = buf[n:]
	}
	return out, buf
}

// entry hashes one block; false for an all-zero block (a hole in ddfs).
func (e *Estimator) entry(p []byte) (entry, bool) {
	if zeros.Is(p) { // a hole, as the write path makes it
		return entry{}, false
	}
	sum := blake3.Sum256(p)
	en := entry{n: uint32(len(p)), c: uint32(len(p))}
	copy(en.h[:], sum[:16])
	if e.o.Compress != format.CompressNone {
		if fr, ok, err := codec.Compress(p, e.o.Compress, e.o.Level, 4096); err == nil && ok {
			en.c = uint32(len(fr))
		}
	}
	en.c = (en.c + 4095) &^ 4095 // stored in whole sectors
	return en, true
}

// Result counts the distinct blocks of every row.
func (e *Estimator) Result() (*Estimate, error) {
	res := &Estimate{LogicalBytes: e.logical, Files: e.files}
	for _, r := range e.rows {
		row := Row{BlockSize: r.block, Chunking: "fixed"}
		if r.cdc {
			row.BlockSize, row.Chunking = 0, "cdc"
		}
		var stored uint64
		err := r.t.distinct(func(en entry) {
			row.UniqueBytes += uint64(en.n)
			row.IndexEntries++
			stored += uint64(en.c)
		})
		if err != nil {
			return nil, err
		}
		row.IndexBytes = row.IndexEntries * indexEntryDisk
		row.Ratio = 1
		if row.UniqueBytes > 0 {
			row.Ratio = float64(e.logical) / float64(row.UniqueBytes)
		}
		if e.o.Compress != format.CompressNone {
			row.StoredBytes = &stored
		}
		res.Sizes = append(res.Sizes, row)
	}
	return res, nil
}
