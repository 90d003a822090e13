package foreign

// Squashfs extended attributes, read by a reader of our own. go-diskfs
// v1.9.4 reads an inode's attributes with its listing, and reads them
// wrong: its cursor skips ahead after the first pair (`ptr +=` an
// absolute offset), so an inode with three or more fails the whole
// listing; it drops the name's prefix (user., trusted., security.) and
// returns an out-of-line value's 8-byte reference as the value. So ddfs
// shows go-diskfs a made-up attribute table instead of the image's (the
// superblock it reads points past the image's end, where the backend
// serves the table): one pair per attribute set, "ddfs-xattr-id" = the
// set's index, which go-diskfs reads right. ddfs parses the real table
// itself and looks each entry's set up by that index. Every number is
// the image's and is bounded before use.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sort"

	lzo "github.com/anchore/go-lzo"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
	"github.com/ulikunitz/xz/lzma"
)

const (
	sqSuper       = 96
	sqXattrAt     = 56 // superblock: xattr_id_table_start
	sqNoTable     = ^uint64(0)
	sqXattrIDKey  = "ddfs-xattr-id"
	sqMaxXattrMem = 64 << 20 // bytes of decompressed attribute table
	sqMeta        = 8192
)

// sqPrefixes names a pair's type (its low byte); 0x100 marks a value
// stored out of line.
var sqPrefixes = [...]string{"user.", "trusted.", "security."}

// sqOverlay is the image as go-diskfs sees it: the superblock's
// attribute table moved to at, past the image, where table lies.
type sqOverlay struct {
	r     io.ReaderAt
	super [sqSuper]byte
	at    int64
	table []byte
}

func (o *sqOverlay) ReadAt(p []byte, off int64) (int, error) {
	if off >= o.at {
		if off-o.at >= int64(len(o.table)) {
			return 0, io.EOF
		}
		n := copy(p, o.table[off-o.at:])
		if n < len(p) {
			return n, io.EOF
		}
		return n, nil
	}
	if int64(len(p)) > o.at-off {
		n, err := o.ReadAt(p[:o.at-off], off)
		if err != nil {
			return n, err
		}
		m, err := o.ReadAt(p[n:], o.at)
		return n + m, err
	}
	n, err := o.r.ReadAt(p, off)
	if off < sqSuper {
		copy(p[:n], o.super[off:])
	}
	return n, err
}

// sqXattrOverlay reads the attribute table of squashfs image r (size
// bytes) and returns the sets by index and the reader go-diskfs gets
// (r itself where the image has no table) with its size.
func sqXattrOverlay(r io.ReaderAt, size int64) ([][]Xattr, io.ReaderAt, int64, error) {
	o := &sqOverlay{r: r}
	if _, err := r.ReadAt(o.super[:], 0); err != nil {
		return nil, nil, 0, corruptf("squashfs superblock: %v", err)
	}
	le := binary.LittleEndian
	start := le.Uint64(o.super[sqXattrAt:])
	if start == sqNoTable {
		return nil, r, size, nil
	}
	t := &sqTable{r: r, size: size, codec: le.Uint16(o.super[20:])}
	sets, err := t.sets(start)
	if t.zd != nil {
		t.zd.Close()
	}
	if err != nil {
		return nil, nil, 0, fmt.Errorf("squashfs attribute table: %w", err)
	}
	o.at = (size + 4095) &^ 4095
	o.table = sqFakeTable(uint64(o.at), len(sets))
	le.PutUint64(o.super[sqXattrAt:], uint64(o.at)+uint64(len(o.table))-uint64(16+8*sqBlocks(16*len(sets))))
	return sets, o, o.at + int64(len(o.table)), nil
}

func sqBlocks(n int) int { return (n + sqMeta - 1) / sqMeta }

// sqFakeTable is an attribute table at offset at of n sets, set i
// holding one pair, sqXattrIDKey = i (4 bytes): key-value blocks, id
// blocks, then the id table's header and block offsets, every metadata
// block stored uncompressed.
func sqFakeTable(at uint64, n int) []byte {
	le := binary.LittleEndian
	var kv, ids []byte
	for i := range n {
		ref := uint64(len(kv)/sqMeta*(sqMeta+2))<<16 | uint64(len(kv)%sqMeta)
		pair := le.AppendUint16(le.AppendUint16(nil, 0), uint16(len(sqXattrIDKey)))
		pair = le.AppendUint32(le.AppendUint32(append(pair, sqXattrIDKey...), 4), uint32(i))
		kv = append(kv, pair...)
		ids = le.AppendUint32(le.AppendUint32(le.AppendUint64(ids, ref), 1), uint32(len(pair)))
	}
	var out []byte
	blocks := func(b []byte) (offs []uint64) {
		for len(b) > 0 {
			m := min(len(b), sqMeta)
			offs = append(offs, at+uint64(len(out)))
			out = append(le.AppendUint16(out, 0x8000|uint16(m)), b[:m]...)
			b = b[m:]
		}
		return offs
	}
	blocks(kv)
	idOffs := blocks(ids)
	out = le.AppendUint32(le.AppendUint32(le.AppendUint64(out, at), uint32(n)), 0)
	for _, o := range idOffs {
		out = le.AppendUint64(out, o)
	}
	return out
}

// sqTable reads the image's attribute table.
type sqTable struct {
	r     io.ReaderAt
	size  int64
	codec uint16
	mem   int // decompressed bytes so far
	zd    *zstd.Decoder
	// unbounded: no total (a reader that keeps few blocks, as sqModes).
	unbounded bool
}

// sets parses the table whose id header is at start: every set's pairs,
// by index.
func (t *sqTable) sets(start uint64) ([][]Xattr, error) {
	le := binary.LittleEndian
	if start > uint64(t.size)-16 || t.size < 16 {
		return nil, corruptf("id table at %d", start)
	}
	hdr := make([]byte, 16)
	if _, err := t.r.ReadAt(hdr, int64(start)); err != nil {
		return nil, corruptf("id table: %v", err)
	}
	kvStart, n := le.Uint64(hdr), int(le.Uint32(hdr[8:]))
	nb := sqBlocks(16 * n)
	if n == 0 || kvStart >= start || uint64(nb)*8 > uint64(t.size)-start-16 {
		return nil, corruptf("%d attribute sets at %d, pairs at %d", n, start, kvStart)
	}
	locs := make([]byte, 8*nb)
	if _, err := t.r.ReadAt(locs, int64(start)+16); err != nil {
		return nil, corruptf("id table: %v", err)
	}
	var ids []byte
	for i := range nb {
		// As the kernel checks them: each id block starts before the
		// next (or the header) and is at most a metadata block long.
		at, end := le.Uint64(locs[8*i:]), start
		if i+1 < nb {
			end = le.Uint64(locs[8*i+8:])
		}
		if at < kvStart || at >= end || end-at > sqMeta+2 {
			return nil, corruptf("id block %d at %d, the next at %d", i, at, end)
		}
		b, _, err := t.block(at)
		if err != nil {
			return nil, err
		}
		ids = append(ids, b...)
	}
	if len(ids) < 16*n {
		return nil, corruptf("id table of %d bytes for %d sets", len(ids), n)
	}
	kv, where, err := t.pairs(kvStart, le.Uint64(locs))
	if err != nil {
		return nil, err
	}
	// Each distinct set is decoded once (ids may all name one), its
	// values left in kv; one budget bounds every set's bytes.
	sets, seen, budget := make([][]Xattr, n), map[[2]uint64]int{}, sqMaxXattrMem
	for i := range n {
		e := ids[16*i:]
		k := [2]uint64{le.Uint64(e), uint64(le.Uint32(e[8:]))}
		if j, ok := seen[k]; ok {
			sets[i] = sets[j]
			continue
		}
		seen[k] = i
		if sets[i], err = sqSet(kv, where, k[0], int(k[1]), &budget); err != nil {
			return nil, fmt.Errorf("set %d: %w", i, err)
		}
	}
	return sets, nil
}

// pairs decompresses the key-value blocks from start to end; where maps
// a block's offset in the table to its bytes' offset in the result.
func (t *sqTable) pairs(start, end uint64) ([]byte, map[uint64]int, error) {
	if end < start || end > uint64(t.size) {
		return nil, nil, corruptf("pairs from %d to %d", start, end)
	}
	var kv []byte
	where := map[uint64]int{}
	for at := start; at < end; {
		where[at-start] = len(kv)
		b, n, err := t.block(at)
		if err != nil {
			return nil, nil, err
		}
		kv = append(kv, b...)
		at += n
	}
	return kv, where, nil
}

// block reads the metadata block at off: its bytes and its length on
// disk.
func (t *sqTable) block(off uint64) ([]byte, uint64, error) {
	if off > uint64(t.size)-2 || t.size < 2 {
		return nil, 0, corruptf("metadata block at %d", off)
	}
	h := make([]byte, 2)
	if _, err := t.r.ReadAt(h, int64(off)); err != nil {
		return nil, 0, corruptf("metadata block at %d: %v", off, err)
	}
	hv := binary.LittleEndian.Uint16(h)
	n := uint64(hv & 0x7fff)
	if n == 0 || n > sqMeta || off+2+n > uint64(t.size) {
		return nil, 0, corruptf("metadata block at %d of %d bytes", off, n)
	}
	raw := make([]byte, n)
	if _, err := t.r.ReadAt(raw, int64(off)+2); err != nil {
		return nil, 0, corruptf("metadata block at %d: %v", off, err)
	}
	b := raw
	if hv&0x8000 == 0 {
		err := sqCheckPayload(t.codec, raw, sqMeta)
		if err == nil {
			b, err = t.decompress(raw)
		}
		if err != nil {
			return nil, 0, corruptf("metadata block at %d: %v", off, err)
		}
	}
	if t.mem += len(b); t.mem > sqMaxXattrMem && !t.unbounded { // stored blocks count too: ids may name one many times
		return nil, 0, corruptf("attribute table over %d bytes", sqMaxXattrMem)
	}
	return b, n + 2, nil
}

// decompress undoes the image's codec on one metadata block (at most
// 8 KiB out).
func (t *sqTable) decompress(raw []byte) ([]byte, error) {
	var rd io.Reader
	var err error
	switch t.codec {
	case sqGzip:
		rd, err = zlib.NewReader(bytes.NewReader(raw))
	case sqLZMA:
		rd, err = lzma.NewReader(bytes.NewReader(raw))
	case sqLZO:
		out := make([]byte, sqMeta)
		n, err := lzo.Decompress(raw, out)
		return out[:n], err
	case sqXZ:
		rd, err = xz.NewReader(bytes.NewReader(raw))
	case sqZstd:
		if t.zd == nil {
			if t.zd, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(1<<20)); err != nil {
				return nil, err
			}
		}
		b, err := t.zd.DecodeAll(raw, nil)
		if err == nil && len(b) > sqMeta {
			err = fmt.Errorf("a metadata block of over %d bytes", sqMeta)
		}
		return b, err
	default:
		return nil, fmt.Errorf("%w: squashfs codec %d", ErrUnsupported, t.codec)
	}
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(rd, sqMeta+1))
	if err == nil && len(b) > sqMeta {
		err = fmt.Errorf("a metadata block of over %d bytes", sqMeta)
	}
	return b, err
}

// sqSet reads count pairs at reference ref (a block's offset << 16 | the
// offset in it) of the decompressed pairs kv.
func sqSet(kv []byte, where map[uint64]int, ref uint64, count int, budget *int) ([]Xattr, error) {
	le := binary.LittleEndian
	at := func(ref uint64) (int, error) {
		b, ok := where[ref>>16]
		if !ok || b+int(ref&0xffff) > len(kv) {
			return 0, corruptf("reference %#x", ref)
		}
		return b + int(ref&0xffff), nil
	}
	p, err := at(ref)
	if err != nil {
		return nil, err
	}
	if count < 1 || count > 1<<16 || count*8 > len(kv)-p {
		return nil, corruptf("%d pairs", count)
	}
	out, total := make([]Xattr, 0, count), 0
	for range count {
		if p+4 > len(kv) {
			return nil, corruptf("a pair past the table")
		}
		typ, nl := le.Uint16(kv[p:]), int(le.Uint16(kv[p+2:]))
		if int(typ&0xff) >= len(sqPrefixes) || typ&^0x1ff != 0 || nl == 0 || p+4+nl+4 > len(kv) {
			return nil, corruptf("a pair of type %#x, name of %d bytes", typ, nl)
		}
		name := sqPrefixes[typ&0xff] + string(kv[p+4:p+4+nl])
		p += 4 + nl
		v, next, err := sqValue(kv, p)
		if err != nil {
			return nil, err
		}
		p = next
		if typ&0x100 != 0 { // out of line: v is a reference to the value
			if len(v) != 8 {
				return nil, corruptf("an out-of-line reference of %d bytes", len(v))
			}
			q, err := at(le.Uint64(v))
			if err != nil {
				return nil, err
			}
			if v, _, err = sqValue(kv, q); err != nil {
				return nil, err
			}
		}
		if total += len(name) + len(v) + 32; total > paxXattrMax {
			return nil, corruptf("attributes over %d bytes", paxXattrMax)
		}
		if *budget -= len(name) + 32; *budget < 0 {
			return nil, corruptf("attribute sets over %d bytes", sqMaxXattrMem)
		}
		out = append(out, Xattr{name, v[:len(v):len(v)]}) // in kv: no copy
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	for i := 1; i < len(out); i++ {
		if out[i].Name == out[i-1].Name {
			return nil, corruptf("attribute %q twice", out[i].Name)
		}
	}
	return out, nil
}

// sqValue is the value (a u32 length and its bytes) at p, and where the
// next pair starts.
func sqValue(kv []byte, p int) ([]byte, int, error) {
	if p+4 > len(kv) {
		return nil, 0, corruptf("a value past the table")
	}
	n := int(binary.LittleEndian.Uint32(kv[p:]))
	if n < 0 || n > len(kv)-p-4 {
		return nil, 0, corruptf("a value of %d bytes", n)
	}
	return kv[p+4 : p+4+n], p + 4 + n, nil
}

// sqXattrsOf is the set go-diskfs's entry names by sqXattrIDKey (none
// where it names none).
func (im *Image) sqXattrsOf(m map[string]string) ([]Xattr, error) {
	v, ok := m[sqXattrIDKey]
	if !ok {
		return nil, nil
	}
	if len(v) != 4 || int(binary.LittleEndian.Uint32([]byte(v))) >= len(im.sqx) {
		return nil, corruptf("attribute set %q", v)
	}
	return im.sqx[binary.LittleEndian.Uint32([]byte(v))], nil
}
