package format

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestDevItem(t *testing.T) {
	d := &DevItem{DevID: 2, UUID: [16]byte{1, 2, 3}, TotalBytes: 1 << 40, BytesUsed: 1 << 30, Rotational: true, Tier: 2,
		SeekSpeed: 150, Bandwidth: 200 << 20, Path: "disk2.img"}
	b := MarshalDevItem(d)
	if len(b) != devItemFixed+len(d.Path) || b[40] != 1 || b[41] != 2 || string(b[66:]) != d.Path {
		t.Fatalf("layout: % x", b)
	}
	got, err := UnmarshalDevItem(b)
	if err != nil || !reflect.DeepEqual(got, d) {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	// No path, not rotational.
	d2 := &DevItem{DevID: 1, TotalBytes: 1 << 20}
	if got, err := UnmarshalDevItem(MarshalDevItem(d2)); err != nil || !reflect.DeepEqual(got, d2) {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	// A long path hint is cut to MaxPathHint.
	long := &DevItem{DevID: 1, Path: strings.Repeat("p", MaxPathHint+10)}
	if got, err := UnmarshalDevItem(MarshalDevItem(long)); err != nil || len(got.Path) != MaxPathHint {
		t.Fatalf("long path: %v", err)
	}

	bad := []struct {
		name string
		b    []byte
		want error
	}{
		{"short", b[:devItemFixed-1], ErrShort},
		{"path longer than item", b[:len(b)-1], nil},
		{"bytes after path", append(bytes.Clone(b), 0), nil},
		{"rotational 2", func() []byte { c := bytes.Clone(b); c[40] = 2; return c }(), nil},
		{"devid 0", MarshalDevItem(&DevItem{TotalBytes: 1}), nil},
		{"used above total", MarshalDevItem(&DevItem{DevID: 1, TotalBytes: 1, BytesUsed: 2}), nil},
		{"path hint too long", func() []byte {
			c := MarshalDevItem(&DevItem{DevID: 1})
			c[64], c[65] = 0x01, 0x04 // 1025
			return append(c, make([]byte, MaxPathHint+1)...)
		}(), nil},
	}
	for _, tc := range bad {
		if _, err := UnmarshalDevItem(tc.b); !errors.Is(err, ErrCorrupt) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func TestBlockGroupItem(t *testing.T) {
	g := &BlockGroupItem{Used: 12345, Type: ChunkMetadata, Profile: ProfileRaid1C3, Flags: BlockGroupFallback}
	b := MarshalBlockGroupItem(g)
	if len(b) != BlockGroupItemSize {
		t.Fatalf("%d bytes", len(b))
	}
	if got := binary.LittleEndian.Uint32(b[12:]); got != 1 {
		t.Fatalf("flags at offset 12 = %#x, want 1", got)
	}
	if got, err := UnmarshalBlockGroupItem(b); err != nil || !reflect.DeepEqual(got, g) {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	b[13] = 1 // an undefined flag bit
	if _, err := UnmarshalBlockGroupItem(b); !errors.Is(err, ErrCorrupt) {
		t.Errorf("undefined flag bit accepted: %v", err)
	}
	for _, n := range []int{0, BlockGroupItemSize - 1, BlockGroupItemSize + 1} {
		if _, err := UnmarshalBlockGroupItem(make([]byte, n)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%d bytes: %v", n, err)
		}
	}
}

func TestMetadataItem(t *testing.T) {
	m := &MetadataItem{Refs: 1, Generation: 9, Owner: CsumTree}
	b := MarshalMetadataItem(m)
	if len(b) != MetadataItemSize {
		t.Fatalf("%d bytes", len(b))
	}
	if got, err := UnmarshalMetadataItem(b); err != nil || !reflect.DeepEqual(got, m) {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	if _, err := UnmarshalMetadataItem(MarshalMetadataItem(&MetadataItem{Generation: 1})); !errors.Is(err, ErrCorrupt) {
		t.Errorf("zero refs: %v", err)
	}
	if _, err := UnmarshalMetadataItem(b[:10]); !errors.Is(err, ErrShort) {
		t.Errorf("short: %v", err)
	}
}

func TestExtentItem(t *testing.T) {
	for _, e := range []*ExtentItem{
		{Refs: 1, Generation: 3, RAMBytes: 4096},
		{Refs: 7, Generation: 3, RAMBytes: 128 << 10, Compression: CompressZstd, Flags: ExtentFlagDeduped, HashPrefix: 0x1122334455667788},
		{Refs: 2, Generation: 3, RAMBytes: 1 << 20, Compression: CompressS2},
	} {
		b := MarshalExtentItem(e)
		if want := map[bool]int{false: ExtentItemSize, true: ExtentItemDedupedSize}[e.Flags&ExtentFlagDeduped != 0]; len(b) != want {
			t.Fatalf("%d bytes", len(b))
		}
		if got, err := UnmarshalExtentItem(b); err != nil || !reflect.DeepEqual(got, e) {
			t.Fatalf("round trip: %+v %v", got, err)
		}
	}
	for name, e := range map[string]*ExtentItem{
		"zero refs":           {Generation: 1},
		"unknown compression": {Refs: 1, Compression: CompressS2 + 1},
	} {
		if _, err := UnmarshalExtentItem(MarshalExtentItem(e)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := UnmarshalExtentItem(make([]byte, ExtentItemSize+1)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("long: %v", err)
	}
}

func TestKeyOrderAndEncoding(t *testing.T) {
	keys := []Key{
		{0, 0, 0},
		{0, 0, 1},
		{0, 1, 0},
		{1, 0, 0},
		{RootDirIno, InodeItemKey, 0},
		{RootDirIno, DirItemKey, ^uint64(0)},
		{RootDirIno, DirIndexKey, 0},
		{257, InodeItemKey, 0},
		{1 << 63, 0, 0},
		MaxKey,
	}
	for i := range keys {
		var b [KeySize]byte
		PutKey(b[:], keys[i])
		if GetKey(b[:]) != keys[i] {
			t.Errorf("key %v does not round trip", keys[i])
		}
		for j := range keys {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := keys[i].Compare(keys[j]); got != want {
				t.Errorf("%v cmp %v = %d, want %d", keys[i], keys[j], got, want)
			}
			if keys[i].Less(keys[j]) != (want < 0) {
				t.Errorf("%v < %v wrong", keys[i], keys[j])
			}
		}
	}
	var b [KeySize]byte
	PutKey(b[:], Key{0x0102030405060708, 0x09, 0x0a0b0c0d0e0f1011})
	want := []byte{8, 7, 6, 5, 4, 3, 2, 1, 9, 0x11, 0x10, 0x0f, 0x0e, 0x0d, 0x0c, 0x0b, 0x0a}
	if !bytes.Equal(b[:], want) {
		t.Errorf("key bytes % x, want % x", b, want)
	}
}

func TestChecksumEncoding(t *testing.T) {
	data := []byte("ddfs")
	cases := []struct {
		c      CsumType
		len    int
		strong bool
	}{{CsumCRC32C, 4, false}, {CsumXXHash64, 8, false}, {CsumSHA256, 32, true}, {CsumBLAKE3, 32, true}}
	for _, tc := range cases {
		if tc.c.Len() != tc.len || !tc.c.Valid() || tc.c.Strong() != tc.strong {
			t.Errorf("%v: Len %d, Strong %v", tc.c, tc.c.Len(), tc.c.Strong())
		}
		sum := Checksum(tc.c, data)
		if !bytes.Equal(sum[tc.len:], make([]byte, CsumSize-tc.len)) {
			t.Errorf("%v: padding not zero", tc.c)
		}
		if p, err := ParseCsumType(tc.c.String()); err != nil || p != tc.c {
			t.Errorf("%v: parse %v %v", tc.c, p, err)
		}
	}
	// Known values, little-endian in the first bytes.
	if got := Checksum(CsumCRC32C, []byte("123456789")); !bytes.Equal(got[:4], []byte{0x83, 0x92, 0x06, 0xe3}) {
		t.Errorf("crc32c check value: % x", got[:4])
	}
	if got := Checksum(CsumXXHash64, nil); !bytes.Equal(got[:8], []byte{0x99, 0xe9, 0xd8, 0x51, 0x37, 0xdb, 0x46, 0xef}) {
		t.Errorf("xxhash64 of empty input: % x", got[:8])
	}
	if CsumType(4).Valid() || CsumType(5).ValidDedupeHash() || CsumCRC32C.ValidDedupeHash() {
		t.Error("csum type 4 valid, or a dedupe hash 5 or crc32c")
	}
	// XXH3-128 vectors from the reference xxhsum -H2 (xxHash 0.8.1), in
	// its canonical byte order; the long one takes the SIMD path.
	long := make([]byte, 128<<10)
	for i := range long {
		long[i] = byte((i*31 + 7) % 251)
	}
	for _, v := range []struct {
		in   []byte
		want string
	}{{nil, "99aa06d3014798d86001c324468d497f"}, {[]byte("123456789"), "33119477ede5dcd5e9716427681d5860"}, {long, "223a02c129e350a6008ba20f61fc739b"}} {
		got := Checksum(CsumXXH3, v.in)
		if hex.EncodeToString(got[:16]) != v.want || !bytes.Equal(got[16:], make([]byte, 16)) || CsumXXH3.Len() != 16 {
			t.Errorf("xxh3 of %d bytes: % x, want %s", len(v.in), got, v.want)
		}
	}
	if _, err := ParseCsumType("md5"); err == nil {
		t.Error("md5 parsed")
	}
}
