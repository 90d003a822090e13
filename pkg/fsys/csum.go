package fsys

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
	"github.com/ddfs/ddfs/pkg/volume"
)

// maxSumsPerItem bounds a csum item (1024 sectors: 4 MiB of data at 4 KiB).
const maxSumsPerItem = 1024

// maxMergedSums bounds an item grown from the sums of several extents:
// freeing one extent cuts the item, copying the rest, and random 4K
// overwrites free such extents one by one (items of 1024 sums cost fio
// 4K random writes on a mount 10% of their rate; 64 keep most of the
// saving on small files: 4.4 bytes a sum instead of 29).
const maxMergedSums = 64

func csumKey(logical uint64) format.Key {
	return format.Key{ObjectID: format.CsumObjectID, Type: format.CsumItemKey, Offset: logical}
}

// putCsums records the checksum of every sector of buf, which was written
// at logical.
func (f *FS) putCsums(logical uint64, buf []byte) error {
	return f.putSums(logical, buf, nil)
}

// putSums is putCsums with the sums of buf's sectors given (nil: they
// are computed here).
func (f *FS) putSums(logical uint64, buf, sums []byte) error {
	sb := f.st.Super()
	ss, cl := int(sb.SectorSize), sb.CsumType.Len()
	t := f.tx.Tree(format.CsumTree)
	// An item must fit in a node: small nodes and long sums hold fewer.
	perItem := min(maxSumsPerItem, format.MaxItemData(sb.NodeSize)/cl)
	mergeCap := min(perItem, maxMergedSums)
	if len(sums) != len(buf)/ss*cl {
		sums = nil // not these sectors' sums: make them
	}
	ls := &f.lastSums
	for len(buf) > 0 {
		grow, err := f.sumsEndAt(logical, mergeCap*cl)
		if err != nil {
			return err
		}
		n := min(len(buf)/ss, perItem)
		if grow {
			n = min(n, mergeCap-len(ls.buf)/cl)
		}
		var item []byte
		if sums != nil {
			item, sums = sums[:n*cl:n*cl], sums[n*cl:]
		} else {
			item = make([]byte, 0, n*cl)
			for i := 0; i < n; i++ {
				sum := format.Checksum(sb.CsumType, buf[i*ss:(i+1)*ss])
				item = append(item, sum[:cl]...)
			}
		}
		if grow {
			// One item for extents laid end to end (the files of a tree
			// copy): a small file's sum took 29 bytes of leaf, now 4.
			// The item grows in place: what the tree holds is a prefix.
			ls.buf = append(ls.buf, item...)
			err = t.Put(csumKey(ls.start), ls.buf)
		} else {
			ls.tx, ls.start, ls.buf = f.tx, logical, nil
			if n < mergeCap {
				ls.buf = append(make([]byte, 0, mergeCap*cl), item...)
				item = ls.buf
			}
			err = t.Insert(csumKey(logical), item)
		}
		if err != nil {
			ls.tx = nil
			return err
		}
		buf = buf[n*ss:]
		logical += uint64(n * ss)
		ls.end = logical
	}
	return nil
}

// sumsEndAt reports whether the item putSums made last in this
// transaction ends at logical, is still as it made it (a punch may have
// cut it since) and has room left (fewer than limit bytes).
func (f *FS) sumsEndAt(logical uint64, limit int) (bool, error) {
	ls := &f.lastSums
	if ls.tx != f.tx || ls.end != logical || ls.buf == nil || len(ls.buf) >= limit {
		return false, nil
	}
	b, err := getOptional(f.tx.Tree(format.CsumTree), csumKey(ls.start))
	if err != nil || len(b) != len(ls.buf) || (len(b) > 0 && &b[0] != &ls.buf[0]) {
		return false, err
	}
	return true, nil
}

func isCsumKey(k format.Key) bool {
	return k.ObjectID == format.CsumObjectID && k.Type == format.CsumItemKey
}

// ErrDataChecksum: no copy of a data sector matches its checksum.
var ErrDataChecksum = errors.New("data checksum mismatch")

// readVerified reads sector-aligned buf at logical, checking every sector
// against the csum tree and trying the other copies of a bad one. Copies
// found bad are healed (store.HealCopy: rewritten when the set is
// writable, reported either way).
func (f *FS) readVerified(logical uint64, buf []byte) error {
	// Data still queued for writing must land before it is read back.
	if err := f.data.drain(); err != nil {
		return err
	}
	sb := f.st.Super()
	ss, cl := uint64(sb.SectorSize), sb.CsumType.Len()
	used, failed, err := f.readAnyCopy(logical, buf)
	if err != nil {
		return err
	}
	t := f.rtree(format.CsumTree)
	var sums []byte
	var sumStart uint64
	for off := uint64(0); off < uint64(len(buf)); off += ss {
		l := logical + off
		if sums == nil || l < sumStart || l >= sumStart+uint64(len(sums)/cl)*ss {
			it, err := t.SeekLE(csumKey(l))
			if err != nil && !errors.Is(err, btree.ErrNotFound) {
				return err
			}
			if err != nil || !isCsumKey(it.Key) ||
				l >= it.Key.Offset+uint64(len(it.Data)/cl)*ss {
				return fmt.Errorf("data at logical %d has no checksum: %w", l, format.ErrCorrupt)
			}
			sums, sumStart = it.Data, it.Key.Offset
		}
		i := (l - sumStart) / ss * uint64(cl)
		want := sums[i : i+uint64(cl)]
		sector := buf[off : off+ss]
		if got := format.Checksum(sb.CsumType, sector); bytes.Equal(got[:cl], want) {
			continue
		}
		if !f.repairSector(l, sector, want, used) {
			return fmt.Errorf("logical %d: %w", l, ErrDataChecksum)
		}
	}
	// buf is verified now: copies that could not be read get it back.
	for _, fc := range failed {
		f.st.HealCopy(logical, buf, fc.copy, false, fc.err)
	}
	return nil
}

// repairSector tries the other copies of a sector read from copy used;
// on success sector holds good data and copy used is healed.
func (f *FS) repairSector(logical uint64, sector, want []byte, used int) bool {
	sb := f.st.Super()
	tmp := make([]byte, len(sector))
	for m := 0; m < f.st.Vol.Copies(logical); m++ {
		if m == used || f.st.Vol.ReadCopy(logical, tmp, m) != nil {
			continue
		}
		if got := format.Checksum(sb.CsumType, tmp); bytes.Equal(got[:len(want)], want) {
			copy(sector, tmp)
			f.st.HealCopy(logical, sector, used, false, fmt.Errorf("logical %d: %w", logical, ErrDataChecksum))
			return true
		}
	}
	return false
}

// failedCopy is a copy a read could not use.
type failedCopy struct {
	copy int
	err  error
}

// readAnyCopy reads buf from the first copy that can be read (a missing
// or failing device falls back to the mirror; checksums are checked by
// the caller, per sector, with their own fallback). It returns the copy
// used and those that failed (copies on missing devices left out).
func (f *FS) readAnyCopy(logical uint64, buf []byte) (int, []failedCopy, error) {
	if f.readAhead(logical, buf) {
		return 0, nil, nil
	}
	var first error
	var failed []failedCopy
	for m := 0; m < max(f.st.Vol.Copies(logical), 1); m++ {
		err := f.st.Vol.ReadCopy(logical, buf, m)
		if err == nil {
			return m, failed, nil
		}
		if first == nil {
			first = err
		}
		if !errors.Is(err, volume.ErrMissingDevice) {
			failed = append(failed, failedCopy{m, err})
		}
	}
	return 0, nil, first
}

// bufferSummed is buffer with the sums of its sectors, each piece summed
// right after it is copied, while in cache: summing the whole copy after
// it took 0.19 CPU-s a GiB more than the copy and sums done together.
func (f *FS) bufferSummed(n int, p []byte) ([]byte, []byte) {
	sb := f.st.Super()
	ss, cl := int(sb.SectorSize), sb.CsumType.Len()
	piece := max(64<<10, ss) // whole sectors
	b := rawBuffer(n)
	sums := make([]byte, 0, n/ss*cl)
	for at := 0; at < n; at += piece {
		end := min(at+piece, n)
		if at < len(p) {
			copy(b[at:end], p[at:min(end, len(p))])
		}
		if end > len(p) {
			clear(b[max(at, len(p)):end])
		}
		for s := at; s < end; s += ss {
			sum := format.Checksum(sb.CsumType, b[s:s+ss])
			sums = append(sums, sum[:cl]...)
		}
	}
	return b, sums
}
