package store

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
)

// maxCsumBatch bounds the csum items DeleteCsums holds at once.
const maxCsumBatch = 1 << 16

func csumKey(logical uint64) format.Key {
	return format.Key{ObjectID: format.CsumObjectID, Type: format.CsumItemKey, Offset: logical}
}

// DeleteCsums drops the sums of [start, end) from the csum tree: freed
// space (fsys) or space no data extent holds (fsck). An item may span
// more than the range (FORMAT.md §6.7: another writer may merge items):
// its sums outside the range are kept as its head and tail. An item whose
// length is not whole sums is left alone (fsck reports it on its own).
func (tx *Txn) DeleteCsums(start, end uint64) error {
	sb := tx.fs.Super()
	ss, cl := uint64(sb.SectorSize), uint64(sb.CsumType.Len())
	t := tx.Tree(format.CsumTree)
	// An item that starts before start may reach into the range.
	from := csumKey(start)
	if it, err := t.SeekLE(from); err == nil && it.Key.ObjectID == format.CsumObjectID && it.Key.Type == format.CsumItemKey {
		from = it.Key
	} else if err != nil && !errors.Is(err, btree.ErrNotFound) {
		return fmt.Errorf("csum items over [%d, %d): %w", start, end, err)
	}
	for {
		var hit []format.Item
		err := t.Scan(from, csumKey(end), func(it format.Item) (bool, error) {
			hit = append(hit, format.Item{Key: it.Key, Data: bytes.Clone(it.Data)})
			return len(hit) < maxCsumBatch, nil
		})
		if err != nil && !errors.Is(err, btree.ErrNotFound) {
			return fmt.Errorf("csum items over [%d, %d): %w", start, end, err)
		}
		for _, it := range hit {
			s := it.Key.Offset
			e := s + uint64(len(it.Data))/cl*ss
			if e <= start || s >= end || uint64(len(it.Data))%cl != 0 {
				continue
			}
			if err := t.Delete(it.Key); err != nil {
				return err
			}
			if s < start {
				if err := t.Insert(it.Key, it.Data[:(start-s)/ss*cl]); err != nil {
					return err
				}
			}
			if e > end {
				if err := t.Insert(csumKey(end), it.Data[(end-s)/ss*cl:]); err != nil {
					return err
				}
			}
		}
		if len(hit) < maxCsumBatch {
			return nil
		}
		from = hit[len(hit)-1].Key
		from.Offset++ // the batch's last item is done
	}
}
