package foreign

// Compressed squashfs payloads whose header asks for more memory than a
// block can need. go-diskfs v1.9.4 decompresses with each codec's
// defaults: zstd's DecodeAll sizes its output by the frame's content
// size (up to 64 GiB), xz and lzma allocate the dictionary their header
// names (up to 4 GiB), all before one byte comes out (an audit crafted a
// 2 MiB image that ends ddfs with "out of memory"). ddfs reads those
// headers first: in its own attribute table reader (sqxattr.go), and in
// every metadata block and fragment go-diskfs reads (sqSniffer, on the
// backend: such a payload is refused before go-diskfs sees it).
//
// A file's data blocks are checked as its inode lists them (the
// compressed flag is there: a block stored raw may be a .zst file's first
// bytes), found through the export table (sqModes); an image made with
// -no-exports has none, and its data blocks go unchecked (README). gzip
// states no size: a block of at most 1 MiB may inflate to ~1 GiB.

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"sort"
)

// Squashfs compression ids (the superblock's).
const (
	sqGzip = 1
	sqLZMA = 2
	sqLZO  = 3
	sqXZ   = 4
	sqLZ4  = 5
	sqZstd = 6
)

// sqCacheBytes bounds go-diskfs's cache of decompressed squashfs blocks
// (128 MiB by default, kept across calls). It counts blocks of the
// image's block size, a metadata block (8 KiB) taking one too: 16 MiB
// of 4 KiB blocks may hold 32 MiB of metadata.
const sqCacheBytes = 16 << 20

// sqMaxDict is the largest dictionary or window a payload may ask for:
// mksquashfs uses the block size (at most 1 MiB); xz -9's is 64 MiB.
const sqMaxDict = 64 << 20

// sqCheckPayload fails when b, one payload compressed by codec, would
// make its decoder allocate a dictionary over sqMaxDict or produce over
// limit bytes as its header tells. A header that does not parse passes:
// the decoder refuses it without allocating.
func sqCheckPayload(codec uint16, b []byte, limit uint64) error {
	le := binary.LittleEndian
	switch codec {
	case sqLZMA: // properties, dictionary size (u32), size (u64; all ones: unknown)
		if len(b) >= 13 {
			dict, size := uint64(le.Uint32(b[1:])), le.Uint64(b[5:])
			if dict > sqMaxDict || size != ^uint64(0) && size > limit {
				return fmt.Errorf("lzma payload with a %d-byte dictionary for %d bytes (at most %d)", dict, size, limit)
			}
		}
	case sqXZ:
		return xzCheck(b, limit)
	case sqZstd:
		return zstdCheck(b, limit)
	}
	return nil
}

// xzCheck reads an xz stream's block headers: each block's LZMA2
// dictionary, and its uncompressed size where given. A block header that
// gives its compressed size (mksquashfs's do) leads to the next block;
// one that does not ends the walk (its successor is not found without
// decoding).
func xzCheck(b []byte, limit uint64) error {
	if len(b) < 12 || string(b[:6]) != "\xfd7zXZ\x00" {
		return nil
	}
	check := [16]int{0, 4, 4, 4, 8, 8, 8, 16, 16, 16, 32, 32, 32, 64, 64, 64}[b[7]&0xf]
	var out uint64
	for at := 12; at < len(b) && b[at] != 0; { // 0: the index, no more blocks
		hl := (int(b[at]) + 1) * 4
		if hl > len(b)-at {
			return nil
		}
		packed, size, err := xzBlockHeader(b[at:at+hl], limit)
		if err != nil {
			return err
		}
		if out += size; out > limit {
			return fmt.Errorf("xz blocks of over %d bytes", limit)
		}
		if packed == 0 || packed > uint64(len(b)) {
			return nil
		}
		at += hl + int(packed+3)&^3 + check
	}
	return nil
}

// xzBlockHeader checks one block header h (its size byte to its CRC32):
// the LZMA2 dictionary against sqMaxDict, the stated uncompressed size
// against limit. It returns the sizes it states (0: not stated).
func xzBlockHeader(h []byte, limit uint64) (packed, size uint64, err error) {
	if len(h) < 8 {
		return 0, 0, nil // no room for a filter: the decoder refuses it
	}
	h, flags := h[2:len(h)-4], h[1] // without the size byte, flags, and CRC32
	if flags&0x40 != 0 {
		v, n := varint(h)
		if n == 0 {
			return 0, 0, nil
		}
		packed, h = v, h[n:]
	}
	if flags&0x80 != 0 {
		v, n := varint(h)
		if n == 0 {
			return 0, 0, nil
		}
		if v > limit {
			return 0, 0, fmt.Errorf("xz block of %d bytes (at most %d)", v, limit)
		}
		size, h = v, h[n:]
	}
	for range int(flags&3) + 1 {
		id, n := varint(h)
		if n == 0 {
			return 0, 0, nil
		}
		plen, m := varint(h[n:])
		if m == 0 || uint64(len(h)-n-m) < plen {
			return 0, 0, nil
		}
		props := h[n+m : n+m+int(plen)]
		if id == 0x21 && plen == 1 && props[0] <= 40 {
			d := props[0]
			if dict := uint64(2|d&1) << (d/2 + 11); dict > sqMaxDict {
				return 0, 0, fmt.Errorf("xz block with a %d-byte dictionary (at most %d)", dict, sqMaxDict)
			}
		}
		h = h[n+m+int(plen):]
	}
	return packed, size, nil
}

// varint decodes xz's variable-length integer (n 0: none).
func varint(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(b) && i < 9; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}

// zstdCheck walks every frame of b and bounds what it decodes to: each
// frame's content size and window, and the sum of its blocks (raw and
// RLE blocks by their sizes, compressed ones at most 128 KiB or the
// window each) against limit.
func zstdCheck(b []byte, limit uint64) error {
	le := binary.LittleEndian
	var out uint64
	for len(b) >= 8 {
		magic := le.Uint32(b)
		if magic&^0xf == 0x184d2a50 { // a skippable frame
			n := uint64(le.Uint32(b[4:]))
			if n > uint64(len(b)-8) {
				return nil
			}
			b = b[8+n:]
			continue
		}
		if magic != 0xfd2fb528 {
			return nil
		}
		fhd, p := b[4], 5
		single := fhd&0x20 != 0
		var window uint64
		if !single {
			wd := b[p]
			base := uint64(1) << (10 + wd>>3)
			window, p = base+base/8*uint64(wd&7), p+1
		}
		p += [4]int{0, 1, 2, 4}[fhd&3]
		fcsLen := [4]int{0, 2, 4, 8}[fhd>>6]
		if fcsLen == 0 && single {
			fcsLen = 1
		}
		if p+fcsLen > len(b) {
			return nil
		}
		var fcs uint64
		for i := range fcsLen {
			fcs |= uint64(b[p+i]) << (8 * i)
		}
		if fcsLen == 2 {
			fcs += 256
		}
		p += fcsLen
		if single {
			window = fcs
		}
		if window > sqMaxDict || fcsLen > 0 && fcs > limit {
			return fmt.Errorf("zstd frame of %d bytes with a %d-byte window (at most %d)", fcs, window, limit)
		}
		// A frame that states its size is decoded to that size at most
		// (the decoder stops past it): its blocks count only without one.
		frame := uint64(0)
		for last := false; !last; {
			if p+3 > len(b) {
				return nil
			}
			h := uint64(b[p]) | uint64(b[p+1])<<8 | uint64(b[p+2])<<16
			size := h >> 3
			last, p = h&1 != 0, p+3
			switch h >> 1 & 3 {
			case 0: // raw
				frame, p = frame+size, p+int(size)
			case 1: // RLE: one byte, size times
				frame, p = frame+size, p+1
			case 2:
				frame, p = frame+min(window, 128<<10), p+int(size)
			default:
				return nil
			}
			if fcsLen > 0 {
				frame = min(frame, fcs)
			}
			if out+frame > limit {
				return fmt.Errorf("zstd frames of over %d bytes", limit)
			}
		}
		out += frame
		if fhd&4 != 0 {
			p += 4
		}
		if p > len(b) {
			return nil
		}
		b = b[p:]
	}
	return nil
}

// sqSniffer checks the payloads go-diskfs reads before it decompresses
// them: a metadata block (go-diskfs reads its 2-byte header, then just
// its payload, at once after it) and a compressed fragment (the
// fragment table's start and size).
type sqSniffer struct {
	codec uint16
	block uint64
	hdrAt int64 // where the last 2-byte read was, and what it read
	hdr   uint16
	frags []sqCompressed // compressed fragments, by start
	data  []sqCompressed // the compressed data blocks of the file being read (File.sq, set at each Read)
}

// sqCompressed is a compressed fragment or data block: where, and its
// size on disk.
type sqCompressed struct {
	at int64
	n  uint32
}

// sizeAt is the size of the block of list (sorted by start) at off (0:
// none there).
func sizeAt(list []sqCompressed, off int64) uint32 {
	i := sort.Search(len(list), func(i int) bool { return list[i].at >= off })
	if i < len(list) && list[i].at == off {
		return list[i].n
	}
	return 0
}

func (s *sqSniffer) check(off int64, p []byte) error {
	switch {
	case len(p) == 2:
		s.hdrAt, s.hdr = off, binary.LittleEndian.Uint16(p)
	case off == s.hdrAt+2 && s.hdr&0x8000 == 0 && len(p) == int(s.hdr&0x7fff):
		return sqCheckPayload(s.codec, p, sqMeta)
	case len(p) > 0 && (sizeAt(s.frags, off) == uint32(len(p)) || sizeAt(s.data, off) == uint32(len(p))):
		return sqCheckPayload(s.codec, p, s.block)
	}
	return nil
}

// newSQSniffer reads squashfs image r's fragment table: every entry's
// size at most a block and inside the image (go-diskfs allocates the
// size it reads there, up to 16 MiB, and reads no further), the
// compressed ones kept for check.
func newSQSniffer(r io.ReaderAt, size int64, super []byte) (*sqSniffer, error) {
	le := binary.LittleEndian
	s := &sqSniffer{codec: le.Uint16(super[20:]), block: uint64(le.Uint32(super[sqBlockSize:])), hdrAt: -3}
	count, start, used := uint64(le.Uint32(super[sqFragments:])), le.Uint64(super[80:]), le.Uint64(super[sqBytesUsed:])
	if count == 0 || start == sqNoTable {
		return s, nil
	}
	idx, err := sqIndex(r, size, start, uint64(sqBlocks(int(count)*16)), "fragment table") // count <= used/16 (boundSquashfs)
	if err != nil {
		return nil, err
	}
	t := &sqTable{r: r, size: size, codec: s.codec, unbounded: true}
	defer func() {
		if t.zd != nil {
			t.zd.Close()
		}
	}()
	k := uint64(0) // entries read
	for _, at := range idx {
		b, _, err := t.block(at)
		if err != nil {
			return nil, fmt.Errorf("fragment table: %w", err)
		}
		for e := 0; e+16 <= len(b) && k < count; e, k = e+16, k+1 {
			at, n := le.Uint64(b[e:]), le.Uint32(b[e+8:])
			if n&^(1<<24) > uint32(s.block) || at > used || uint64(n&^(1<<24)) > used-at {
				return nil, corruptf("fragment %d at %d of %d bytes (blocks of %d, %d bytes used)", k, at, n&^(1<<24), s.block, used)
			}
			if n&(1<<24) == 0 && n != 0 {
				s.frags = append(s.frags, sqCompressed{int64(at), n})
			}
		}
	}
	// One start, one size: a second size at a start would be read
	// unchecked (go-diskfs reads what the entry a file names says).
	slices.SortFunc(s.frags, func(a, b sqCompressed) int { return cmp.Compare(a.at, b.at) })
	for i := 1; i < len(s.frags); i++ {
		if s.frags[i].at == s.frags[i-1].at && s.frags[i].n != s.frags[i-1].n {
			return nil, corruptf("fragments at %d of %d and %d bytes", s.frags[i].at, s.frags[i-1].n, s.frags[i].n)
		}
	}
	return s, nil
}
