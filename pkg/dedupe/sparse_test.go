package dedupe

import (
	"bytes"
	"testing"

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
