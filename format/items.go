package format

import (
	"encoding/binary"
	"fmt"
)

// DevItem describes one device of the set (FORMAT.md §4.3 "Device item"),
// keyed (DevItemsObjectID, DevItemKey, devid) in the chunk tree.
//
//	off size field
//	  0    8 devid
//	  8   16 uuid
//	 24    8 total_bytes  usable size of the device
//	 32    8 bytes_used   bytes covered by chunk stripes
//	 40    1 rotational   0 or 1
//	 41    1 tier         0 = derived from speed, N = explicit tier N
//	 42    6 reserved     zero
//	 48    8 seek_speed   random seeks per second
//	 56    8 bandwidth    sequential bytes per second
//	 64    2 path_len
//	 66    n path         path hint (relative to the opened device's folder when possible)
type DevItem struct {
	DevID      uint64
	UUID       [16]byte
	TotalBytes uint64
	BytesUsed  uint64
	Rotational bool
	Tier       uint8
	SeekSpeed  uint64
	Bandwidth  uint64
	Path       string
}

const devItemFixed = 66

// MaxPathHint bounds the stored path hint.
const MaxPathHint = 1024

// MarshalDevItem encodes d; a path hint longer than MaxPathHint is cut.
func MarshalDevItem(d *DevItem) []byte {
	path := d.Path
	if len(path) > MaxPathHint {
		path = path[:MaxPathHint]
	}
	b := make([]byte, devItemFixed+len(path))
	le := binary.LittleEndian
	le.PutUint64(b[0:], d.DevID)
	copy(b[8:24], d.UUID[:])
	le.PutUint64(b[24:], d.TotalBytes)
	le.PutUint64(b[32:], d.BytesUsed)
	if d.Rotational {
		b[40] = 1
	}
	b[41] = d.Tier
	le.PutUint64(b[48:], d.SeekSpeed)
	le.PutUint64(b[56:], d.Bandwidth)
	le.PutUint16(b[64:], uint16(len(path)))
	copy(b[66:], path)
	return b
}

// UnmarshalDevItem decodes a device item.
func UnmarshalDevItem(b []byte) (*DevItem, error) {
	if len(b) < devItemFixed {
		return nil, corruptf(ErrShort, "device item: %d bytes", len(b))
	}
	le := binary.LittleEndian
	d := &DevItem{
		DevID:      le.Uint64(b[0:]),
		TotalBytes: le.Uint64(b[24:]),
		BytesUsed:  le.Uint64(b[32:]),
		Rotational: b[40] != 0,
		Tier:       b[41],
		SeekSpeed:  le.Uint64(b[48:]),
		Bandwidth:  le.Uint64(b[56:]),
	}
	copy(d.UUID[:], b[8:24])
	pl := int(le.Uint16(b[64:]))
	if b[40] > 1 || pl > MaxPathHint || len(b) != devItemFixed+pl {
		return nil, corruptf(nil, "device item %d: rotational %d, path %d bytes in %d", d.DevID, b[40], pl, len(b))
	}
	if d.DevID == 0 || d.BytesUsed > d.TotalBytes {
		return nil, corruptf(nil, "device item %d: used %d of %d", d.DevID, d.BytesUsed, d.TotalBytes)
	}
	d.Path = string(b[66:])
	return d, nil
}

// BlockGroupItem records how much of a chunk is allocated to extents
// (FORMAT.md §4.5), keyed (chunk logical, BlockGroupKey, length) in the
// extent tree.
//
//	off size field
//	  0    8 used     bytes of the chunk covered by extents
//	  8    2 type     ChunkType (copy of the chunk's)
//	 10    2 profile  Profile (copy of the chunk's)
//	 12    4 flags    BlockGroupFallback; other bits zero
type BlockGroupItem struct {
	Used    uint64
	Type    ChunkType
	Profile Profile
	Flags   uint32
}

// BlockGroupFallback marks a chunk the allocation policy placed outside
// the devices it preferred for it (they had too little room or too few
// devices), or one made on a degraded set below the set's profile;
// `ddfs df` lists such chunks.
const BlockGroupFallback uint32 = 1

// blockGroupFlagsKnown are the flag bits this version defines.
const blockGroupFlagsKnown = BlockGroupFallback

// BlockGroupItemSize is the encoded size.
const BlockGroupItemSize = 16

// MarshalBlockGroupItem encodes g.
func MarshalBlockGroupItem(g *BlockGroupItem) []byte {
	b := make([]byte, BlockGroupItemSize)
	binary.LittleEndian.PutUint64(b[0:], g.Used)
	binary.LittleEndian.PutUint16(b[8:], uint16(g.Type))
	binary.LittleEndian.PutUint16(b[10:], uint16(g.Profile))
	binary.LittleEndian.PutUint32(b[12:], g.Flags)
	return b
}

// UnmarshalBlockGroupItem decodes a block group item.
func UnmarshalBlockGroupItem(b []byte) (*BlockGroupItem, error) {
	if len(b) != BlockGroupItemSize {
		return nil, corruptf(ErrShort, "block group item: %d bytes", len(b))
	}
	g := &BlockGroupItem{
		Used:    binary.LittleEndian.Uint64(b[0:]),
		Type:    ChunkType(binary.LittleEndian.Uint16(b[8:])),
		Profile: Profile(binary.LittleEndian.Uint16(b[10:])),
		Flags:   binary.LittleEndian.Uint32(b[12:]),
	}
	if _, ok := g.Profile.Info(); !ok || (g.Type != ChunkData && g.Type != ChunkMetadata && g.Type != ChunkSystem) || g.Flags&^blockGroupFlagsKnown != 0 {
		return nil, corruptf(nil, "block group item: type %d profile %d flags %#x", g.Type, g.Profile, g.Flags)
	}
	return g, nil
}

// MetadataItem records one allocated tree node (FORMAT.md §4.6), keyed
// (logical, MetadataItemKey, level) in the extent tree. Its length is the
// node size.
//
//	off size field
//	  0    8 refs        1 (shared tree blocks are reserved for later)
//	  8    8 generation  transaction that allocated it
//	 16    8 owner       TreeID
type MetadataItem struct {
	Refs       uint64
	Generation uint64
	Owner      TreeID
}

// MetadataItemSize is the encoded size.
const MetadataItemSize = 24

// MarshalMetadataItem encodes m.
func MarshalMetadataItem(m *MetadataItem) []byte {
	b := make([]byte, MetadataItemSize)
	binary.LittleEndian.PutUint64(b[0:], m.Refs)
	binary.LittleEndian.PutUint64(b[8:], m.Generation)
	binary.LittleEndian.PutUint64(b[16:], uint64(m.Owner))
	return b
}

// UnmarshalMetadataItem decodes a metadata item.
func UnmarshalMetadataItem(b []byte) (*MetadataItem, error) {
	m := new(MetadataItem)
	if err := DecodeMetadataItem(b, m); err != nil {
		return nil, err
	}
	return m, nil
}

// DecodeMetadataItem is UnmarshalMetadataItem into *m (no allocation). On
// error *m is undefined.
func DecodeMetadataItem(b []byte, m *MetadataItem) error {
	if len(b) != MetadataItemSize {
		return corruptf(ErrShort, "metadata item: %d bytes", len(b))
	}
	*m = MetadataItem{
		Refs:       binary.LittleEndian.Uint64(b[0:]),
		Generation: binary.LittleEndian.Uint64(b[8:]),
		Owner:      TreeID(binary.LittleEndian.Uint64(b[16:])),
	}
	if m.Refs == 0 {
		return corruptf(nil, "metadata item: zero refs")
	}
	return nil
}

// Compression is the compression of a data extent (FORMAT.md §4.7).
type Compression uint8

const (
	CompressNone Compression = 0
	CompressZstd Compression = 1
	CompressS2   Compression = 2
)

func (c Compression) String() string {
	switch c {
	case CompressNone:
		return "none"
	case CompressZstd:
		return "zstd"
	case CompressS2:
		return "s2"
	}
	return fmt.Sprintf("compression(%d)", uint8(c))
}

// ExtentItem records one data extent shared by Refs file references
// (FORMAT.md §4.7), keyed (logical, ExtentItemKey, disk length).
//
//	off size field
//	  0    8 refs         number of file extent items pointing here
//	  8    8 generation
//	 16    8 ram_bytes    length of the data once decompressed
//	 24    1 compression  Compression
//	 25    1 flags        bit 0: indexed in the dedupe tree
//	 26    6 reserved     zero
//	 32    8 hash_prefix  only with flag bit 0: the first 8 bytes of the
//	                      block's hash, locating its DEDUPE_ITEM
type ExtentItem struct {
	Refs        uint64
	Generation  uint64
	RAMBytes    uint64
	Compression Compression
	Flags       uint8
	HashPrefix  uint64
}

// ExtentFlagDeduped marks an extent that has a dedupe tree entry.
const ExtentFlagDeduped uint8 = 1

// ExtentItemSize is the encoded size; ExtentItemDedupedSize with the
// hash prefix of a deduped extent.
const (
	ExtentItemSize        = 32
	ExtentItemDedupedSize = 40
)

// MarshalExtentItem encodes e.
func MarshalExtentItem(e *ExtentItem) []byte {
	n := ExtentItemSize
	if e.Flags&ExtentFlagDeduped != 0 {
		n = ExtentItemDedupedSize
	}
	b := make([]byte, n)
	if n == ExtentItemDedupedSize {
		binary.LittleEndian.PutUint64(b[32:], e.HashPrefix)
	}
	binary.LittleEndian.PutUint64(b[0:], e.Refs)
	binary.LittleEndian.PutUint64(b[8:], e.Generation)
	binary.LittleEndian.PutUint64(b[16:], e.RAMBytes)
	b[24] = byte(e.Compression)
	b[25] = e.Flags
	return b
}

// UnmarshalExtentItem decodes a data extent item.
func UnmarshalExtentItem(b []byte) (*ExtentItem, error) {
	e := new(ExtentItem)
	if err := DecodeExtentItem(b, e); err != nil {
		return nil, err
	}
	return e, nil
}

// DecodeExtentItem is UnmarshalExtentItem into *e (no allocation). On
// error *e is undefined.
func DecodeExtentItem(b []byte, e *ExtentItem) error {
	if len(b) != ExtentItemSize && len(b) != ExtentItemDedupedSize {
		return corruptf(ErrShort, "extent item: %d bytes", len(b))
	}
	*e = ExtentItem{
		Refs:        binary.LittleEndian.Uint64(b[0:]),
		Generation:  binary.LittleEndian.Uint64(b[8:]),
		RAMBytes:    binary.LittleEndian.Uint64(b[16:]),
		Compression: Compression(b[24]),
		Flags:       b[25],
	}
	if e.Refs == 0 || e.Compression > CompressS2 || e.Flags&^ExtentFlagDeduped != 0 || (len(b) == ExtentItemDedupedSize) != (e.Flags&ExtentFlagDeduped != 0) {
		return corruptf(nil, "extent item: refs %d compression %d flags %#x in %d bytes", e.Refs, b[24], e.Flags, len(b))
	}
	if e.RAMBytes == 0 || e.RAMBytes > MaxExtentBytes {
		return corruptf(nil, "extent item: %d ram bytes, want 1..%d", e.RAMBytes, MaxExtentBytes)
	}
	if len(b) == ExtentItemDedupedSize {
		e.HashPrefix = binary.LittleEndian.Uint64(b[32:])
	}
	return nil
}

// CheckExtentItemKey checks the key of an EXTENT_ITEM: its offset, the
// extent's disk length, is 1..MaxExtentBytes and the extent does not pass
// the end of the address space (FORMAT.md §4.7).
func CheckExtentItemKey(k Key) error {
	if k.Offset == 0 || k.Offset > MaxExtentBytes || k.ObjectID+k.Offset < k.ObjectID {
		return corruptf(nil, "extent item %v: disk length 1..%d", k, MaxExtentBytes)
	}
	return nil
}
