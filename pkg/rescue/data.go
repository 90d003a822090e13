package rescue

import (
	"bytes"
	"errors"
	"fmt"
	"sort"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
	"github.com/ddfs/ddfs/pkg/codec"
	"github.com/ddfs/ddfs/pkg/store"
)

// ErrDataChecksum: no copy of a data sector matches its checksum.
var ErrDataChecksum = errors.New("data checksum mismatch on every copy")

// pieceBytes bounds one read of file data (a whole extent is at most
// format.MaxExtentBytes).
const pieceBytes = 1 << 20

// roStore reads committed nodes for a btree.Tree rooted where rescue
// chose (store.Tree is rooted at the superblock's root only).
type roStore struct{ st *store.FS }

func (r roStore) ReadNode(owner format.TreeID, logical, gen uint64, level int) (*format.Node, error) {
	return r.st.ReadNode(owner, logical, gen, level)
}
func (roStore) NewNode(format.TreeID, uint8) (*format.Node, error) { return nil, store.ErrReadOnly }
func (roStore) IsDirty(*format.Node) bool                          { return false }
func (roStore) FreeNode(*format.Node) error                        { return store.ErrReadOnly }
func (r roStore) NodeSize() uint32                                 { return r.st.Super().NodeSize }

// sums finds data checksums in the csum tree of the first root set whose
// csum root reads, keeping the last item looked up.
type sums struct {
	t         *btree.Tree // nil: no csum root reads
	cur       []byte
	curStart  uint64
	ss, csLen uint64
}

func newSums(st *store.FS) *sums {
	sb := st.Super()
	s := &sums{ss: uint64(sb.SectorSize), csLen: uint64(sb.CsumType.Len())}
	if root, _, ok := pickRoot(st, format.CsumTree); ok {
		s.t = btree.New(roStore{st}, format.CsumTree, root)
	}
	return s
}

// want returns the checksum of the data sector at logical l.
func (s *sums) want(l uint64) ([]byte, error) {
	if s.cur == nil || l < s.curStart || l >= s.curStart+uint64(len(s.cur))/s.csLen*s.ss {
		if s.t == nil {
			return nil, fmt.Errorf("data at logical %d: no csum tree root reads", l)
		}
		it, err := s.t.SeekLE(format.Key{ObjectID: format.CsumObjectID, Type: format.CsumItemKey, Offset: l})
		if err != nil && !errors.Is(err, btree.ErrNotFound) {
			return nil, fmt.Errorf("checksum of logical %d: %w", l, err)
		}
		if err != nil || it.Key.ObjectID != format.CsumObjectID || it.Key.Type != format.CsumItemKey ||
			l >= it.Key.Offset+uint64(len(it.Data))/s.csLen*s.ss {
			return nil, fmt.Errorf("data at logical %d has no checksum: %w", l, format.ErrCorrupt)
		}
		s.cur, s.curStart = it.Data, it.Key.Offset
	}
	i := (l - s.curStart) / s.ss * s.csLen
	return s.cur[i : i+s.csLen], nil
}

// readVerified fills sector-aligned buf from logical, each sector from
// the first copy whose bytes match its checksum.
func (w *writer) readVerified(logical uint64, buf []byte) error {
	sb := w.st.Super()
	vol := w.st.Vol
	copies := vol.Copies(logical)
	if copies == 0 {
		return fmt.Errorf("data at logical %d is in no chunk: %w", logical, format.ErrCorrupt)
	}
	used := -1
	for m := 0; m < copies && used < 0; m++ {
		if vol.ReadCopy(logical, buf, m) == nil {
			used = m
		}
	}
	ss := uint64(sb.SectorSize)
	tmp := make([]byte, ss)
	for off := uint64(0); off < uint64(len(buf)); off += ss {
		want, err := w.sums.want(logical + off)
		if err != nil {
			return err
		}
		sector := buf[off : off+ss]
		if used >= 0 && sumIs(sb.CsumType, sector, want) {
			continue
		}
		if !w.otherCopy(logical+off, sector, tmp, want, used) {
			return fmt.Errorf("logical %d: %w", logical+off, ErrDataChecksum)
		}
	}
	return nil
}

// otherCopy looks for a copy of one sector other than used that
// verifies, into sector.
func (w *writer) otherCopy(l uint64, sector, tmp, want []byte, used int) bool {
	vol := w.st.Vol
	for m := 0; m < vol.Copies(l); m++ {
		if m != used && vol.ReadCopy(l, tmp, m) == nil && sumIs(w.st.Super().CsumType, tmp, want) {
			copy(sector, tmp)
			return true
		}
	}
	return false
}

func sumIs(c format.CsumType, b, want []byte) bool {
	got := format.Checksum(c, b)
	return bytes.Equal(got[:len(want)], want)
}

// readFile calls put with the verified data of each extent of ino within
// its size, in file order; holes and preallocated ranges are left out
// (the host file is cut to its size after).
func (w *writer) readFile(ino uint64, size uint64, put func(p []byte, off uint64) error) error {
	if err := w.ns.bad[ino]; err != nil {
		return err
	}
	xs := w.ns.extents[ino]
	sort.Slice(xs, func(i, j int) bool { return xs[i].off < xs[j].off })
	for _, x := range xs {
		if x.off >= size {
			break
		}
		n := min(x.Len(), size-x.off)
		var err error
		switch {
		case x.Type == format.FileExtentInline:
			err = put(x.Inline[:n], x.off)
		case x.Type == format.FileExtentPrealloc || x.DiskLogical == 0:
		case x.Compression != format.CompressNone:
			err = w.compressed(x, n, put)
		default:
			err = w.plain(x, n, put)
		}
		if err != nil {
			return fmt.Errorf("extent at file offset %d: %w", x.off, err)
		}
	}
	return nil
}

func (w *writer) compressed(x extent, n uint64, put func([]byte, uint64) error) error {
	if x.DiskLen == 0 || x.DiskLen > format.MaxExtentBytes || x.DiskLen%uint64(w.st.Super().SectorSize) != 0 {
		return fmt.Errorf("compressed extent of %d disk bytes: %w", x.DiskLen, format.ErrCorrupt)
	}
	disk := make([]byte, x.DiskLen)
	if err := w.readVerified(x.DiskLogical, disk); err != nil {
		return err
	}
	data, err := codec.Decompress(disk, x.Compression, x.RAMBytes)
	if err != nil {
		return err
	}
	if x.Offset > uint64(len(data)) || n > uint64(len(data))-x.Offset {
		return fmt.Errorf("extent reaches past its %d bytes of data: %w", len(data), format.ErrCorrupt)
	}
	return put(data[x.Offset:x.Offset+n], x.off)
}

// plain reads an uncompressed extent's n bytes a piece at a time, whole
// sectors around each piece so every one can be verified.
func (w *writer) plain(x extent, n uint64, put func([]byte, uint64) error) error {
	ss := uint64(w.st.Super().SectorSize)
	for done := uint64(0); done < n; {
		from := x.DiskLogical + x.Offset + done
		if from < x.DiskLogical {
			return fmt.Errorf("extent offset %d past the address space: %w", x.Offset, format.ErrCorrupt)
		}
		aStart := from / ss * ss
		take := min(n-done, pieceBytes-(from-aStart))
		aEnd := (from + take + ss - 1) / ss * ss
		buf := w.buf[:aEnd-aStart]
		if err := w.readVerified(aStart, buf); err != nil {
			return err
		}
		if err := put(buf[from-aStart:from-aStart+take], x.off+done); err != nil {
			return err
		}
		done += take
	}
	return nil
}
