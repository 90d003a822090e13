package fsys

import (
	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
	"github.com/ddfs/ddfs/pkg/inband"
	"github.com/ddfs/ddfs/pkg/store"
)

// Index is the filesystem's dedupe index (dedupe-tool rebuilds and
// prunes it through this).
func (f *FS) Index() *inband.Index { return f.index }

// DedupeHits is how many blocks inband dedupe has shared since the
// filesystem was made: the committed count plus the running transaction's.
func (f *FS) DedupeHits() uint64 { return f.st.Super().Settings.DedupeHits + f.dedupeHits }

// indexHost serves the dedupe index from the FS: its transaction, its
// checked reads and its commit points.
type indexHost struct{ f *FS }

var _ inband.Host = indexHost{}

func (h indexHost) Txn() (*store.Txn, error)          { return h.f.txn() }
func (h indexHost) Tree(id format.TreeID) *btree.Tree { return h.f.rtree(id) }
func (h indexHost) Drain() error                      { return h.f.data.drain() }
func (h indexHost) SafePoint() error                  { return h.f.MaybeCommit() }

func (h indexHost) SumsStored(logical uint64, sums []byte) (bool, error) {
	return h.f.storedSumsEqual(logical, sums)
}

func (h indexHost) Extent(logical, diskLen, ram uint64, c format.Compression) ([]byte, error) {
	if c != format.CompressNone {
		return h.f.decompressed(fileExtent{FileExtentItem: format.FileExtentItem{Type: format.FileExtentRegular, Compression: c,
			DiskLogical: logical, DiskLen: diskLen, NumBytes: ram, RAMBytes: ram}})
	}
	data := make([]byte, diskLen)
	if err := h.f.readVerified(logical, data); err != nil {
		return nil, err
	}
	return data, nil
}
