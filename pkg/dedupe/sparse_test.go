package dedupe

import (
	"bytes"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
)

// hugeSparseData is the data of /huge: four blocks far apart in a file
// of MaxFileSize bytes, two of them equal.
var hugeSparseData = map[uint64][]byte{
	0:       bytes.Repeat([]byte("head"), testBlock/4),
	1 << 40: bytes.Repeat([]byte("mid!"), testBlock/4),
	1 << 62: bytes.Repeat([]byte("tail"), testBlock/4),
	1 << 61: bytes.Repeat([]byte("head"), testBlock/4),
}

// hugeSparse writes /huge into d (fsck-clean): hugeSparseData, implicit
// holes and one explicit hole item of 2^60 bytes at 2^41.
func hugeSparse(t *testing.T, d *device.MemDevice) {
	t.Helper()
	f := openAt(t, d, 0, epoch)
	in, err := f.Create("/huge", fsys.Attr{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	for off, p := range hugeSparseData {
		if err := f.WriteAt(in, p, off); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(in, format.MaxFileSize); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	inTx(t, d, func(tx *store.Txn) {
		hole := &format.FileExtentItem{Generation: tx.Generation(), Type: format.FileExtentRegular, NumBytes: 1 << 60, RAMBytes: 1 << 60}
		if err := tx.Tree(format.FSTree).Insert(format.Key{ObjectID: in.Ino, Type: format.FileExtentKey, Offset: 1 << 41}, format.MarshalFileExtentItem(hole)); err != nil {
			t.Fatal(err)
		}
	})
}

// TestRunHugeSparse: a run over a fsck-clean file of 2^63-1 bytes with
// four data blocks ends (it used to walk every block of the holes) and
// frees exactly the one duplicate block.
func TestRunHugeSparse(t *testing.T) {
	d := newImage(t, format.Settings{})
	hugeSparse(t, d)
	verify(t, d, nil)
	before, _ := physicalBytes(t, d)
	res := runVerified(t, d, nil)
	after, entries := physicalBytes(t, d)
	if res.FreedBytes != testBlock || before-after != testBlock || res.ExtentsShared != 1 || entries != 1 {
		t.Fatalf("physical %d -> %d, index %d, result %+v: want one %d-byte block freed, 1 entry", before, after, entries, res, testBlock)
	}
	f := openImage(t, d, 0)
	defer f.Close()
	in, err := f.Resolve("/huge", false)
	if err != nil {
		t.Fatal(err)
	}
	for off, p := range hugeSparseData {
		got := make([]byte, len(p))
		if _, err := f.ReadAt(in, got, off); err != nil || !bytes.Equal(got, p) {
			t.Fatalf("data at %d differs after the run: %v", off, err)
		}
	}
}

// memSparse is a file in memory that tells its data ranges, as the image
// view's files do.
type memSparse struct {
	*bytes.Reader
	rs []fsys.Range
}

func (m memSparse) Stat() (fs.FileInfo, error)        { return sizeInfo(m.Size()), nil }
func (m memSparse) DataRanges() ([]fsys.Range, error) { return m.rs, nil }

type sizeInfo int64

func (s sizeInfo) Name() string       { return "sparse" }
func (s sizeInfo) Size() int64        { return int64(s) }
func (s sizeInfo) Mode() fs.FileMode  { return 0o644 }
func (s sizeInfo) ModTime() time.Time { return epoch }
func (s sizeInfo) IsDir() bool        { return false }
func (s sizeInfo) Sys() any           { return nil }

// sparseLayout is a file of size bytes, zero but for random data in
// ranges (some say more than their data, as a range may) at random
// places, ending just before a chunk boundary or starting at one, with
// at least a chunk of hole between; the pieces repeat so blocks dedupe.
func sparseLayout(seed uint64, size int) ([]byte, []fsys.Range) {
	rng := rand.New(rand.NewPCG(seed, 9))
	buf := make([]byte, size)
	piece := make([]byte, 300<<10)
	for i := range piece {
		piece[i] = byte(rng.Uint32() | 1)
	}
	var rs []fsys.Range
	for off := rng.IntN(3 << 20); off < size; {
		n := min(1+rng.IntN(len(piece)), size-off)
		switch rng.IntN(3) {
		case 0: // end a little before the chunk's end: cdc cuts run into the hole
			off = max(off, (off+n)/chunkSize*chunkSize+chunkSize-n-rng.IntN(100))
		case 1:
			off = (off + chunkSize - 1) / chunkSize * chunkSize
		}
		if off >= size {
			break
		}
		n = min(n, size-off)
		copy(buf[off:], piece[rng.IntN(64<<10):][:min(n, len(piece)-64<<10)])
		rs = append(rs, fsys.Range{Off: uint64(off), Len: uint64(n)})
		off += n + chunkSize + rng.IntN(16<<20)
	}
	return buf, rs
}

// TestEstimateSparseSame: a file that tells its data ranges (holes of
// several chunks passed over) gives exactly the estimate of reading all
// its bytes, for fixed rows and for cdc rows whose cuts run on through
// the holes.
func TestEstimateSparseSame(t *testing.T) {
	for seed := range uint64(6) {
		buf, rs := sparseLayout(seed, 64<<20+int(seed)*777)
		read := 0
		eachChunk(rs, func(uint64) { read++ })
		if read > len(buf)/chunkSize-2 {
			t.Fatalf("seed %d: %d of %d chunks hold data: no holes to pass over", seed, read, len(buf)/chunkSize)
		}
		var got [2]*Estimate
		for i, r := range []io.Reader{bytes.NewReader(buf), memSparse{bytes.NewReader(buf), rs}} {
			e, err := NewEstimator(EstimateOptions{Blocks: []uint64{4 << 10, 1 << 20, 8 << 20}, CDC: 4 << 10 << (seed % 3 * 3)})
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Add(r); err != nil {
				t.Fatal(err)
			}
			if got[i], err = e.Result(); err != nil {
				t.Fatal(err)
			}
		}
		if !reflect.DeepEqual(got[0], got[1]) {
			t.Errorf("seed %d (%d ranges): read whole %+v, sparse %+v", seed, len(rs), got[0], got[1])
		}
	}
}

// TestEstimateHugeSparse: an estimate of an image holding a fsck-clean
// file of 2^63-1 bytes ends (it used to read every byte of the holes)
// with the file's exact figures.
func TestEstimateHugeSparse(t *testing.T) {
	d := newImage(t, format.Settings{})
	hugeSparse(t, d)
	f := openImage(t, d, 0)
	defer f.Close()
	e, err := NewEstimator(EstimateOptions{Blocks: []uint64{testBlock, 1 << 20}, CDC: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.AddFS(f.IOFS(), "."); err != nil {
		t.Fatal(err)
	}
	res, err := e.Result()
	if err != nil {
		t.Fatal(err)
	}
	// Four blocks, two equal ("head" at 0 and at 2^61).
	if res.LogicalBytes != format.MaxFileSize || res.Files != 1 || res.Sizes[0].UniqueBytes != 3*testBlock || res.Sizes[1].UniqueBytes != 3<<20 {
		t.Fatalf("estimate %+v", res)
	}
	if c := res.Sizes[2]; c.IndexEntries < 3 || c.UniqueBytes > 4*(4*64<<10+testBlock) {
		t.Fatalf("cdc row %+v: want 3 or more chunks around the data", c)
	}
}

// TestEstimateSaturates: three files of 2^63-1 bytes make logical bytes
// the largest uint64, not a wrapped small number (a ratio of 10^14).
func TestEstimateSaturates(t *testing.T) {
	d := newImage(t, format.Settings{})
	hugeSparse(t, d)
	f := openImage(t, d, 0)
	defer f.Close()
	e, err := NewEstimator(EstimateOptions{Blocks: []uint64{testBlock}})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := e.AddFS(f.IOFS(), "."); err != nil {
			t.Fatal(err)
		}
	}
	res, err := e.Result()
	if err != nil {
		t.Fatal(err)
	}
	if res.LogicalBytes != math.MaxUint64 || res.Sizes[0].UniqueBytes != 3*testBlock {
		t.Fatalf("estimate %+v", res)
	}
}
