package format

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
)

func testInode() *InodeItem {
	return &InodeItem{
		Generation: 5, Size: 1 << 33, NBytes: 1<<33 + 4096, Rdev: 0, Flags: 0, Nlink: 2,
		Mode: ModeRegular | 0o4755, UID: 1000, GID: 100, Seq: 0,
		Atime: Timespec{Sec: 1700000000, Nsec: 999999999}, Mtime: Timespec{Sec: -1, Nsec: 1},
		Ctime: Timespec{Sec: 1 << 40}, Btime: Timespec{Sec: 0, Nsec: 500},
		Compression: CompressPropOf(CompressZstd), Dedupe: DedupeOff, DataTier: 3,
	}
}

func TestInodeItemRoundTrip(t *testing.T) {
	cases := []*InodeItem{
		testInode(),
		{Mode: ModeDir | 0o755, Nlink: 1, Seq: 2},
		{Mode: ModeCharDev | 0o600, Rdev: 0x0103, Nlink: 1, Compression: CompressPropOf(CompressS2), Dedupe: DedupeOn},
		{Mode: ModeSymlink | 0o777, Size: 12, Nlink: 1},
		{Mode: ModeFIFO, Nlink: 0}, // an orphan about to be deleted
		{Mode: ModeSocket | 0o7777},
		{Mode: ModeBlockDev},
	}
	for _, i := range cases {
		b := MarshalInodeItem(i)
		if len(b) != InodeItemSize {
			t.Fatalf("%d bytes", len(b))
		}
		got, err := UnmarshalInodeItem(b)
		if err != nil || !reflect.DeepEqual(got, i) {
			t.Fatalf("round trip of mode 0%o: %+v %v", i.Mode, got, err)
		}
	}
}

func TestInodeItemLayout(t *testing.T) {
	i := testInode()
	b := MarshalInodeItem(i)
	le := binary.LittleEndian
	checks := []struct {
		name      string
		got, want uint64
	}{
		{"generation@0", le.Uint64(b[0:]), i.Generation},
		{"size@8", le.Uint64(b[8:]), i.Size},
		{"nbytes@16", le.Uint64(b[16:]), i.NBytes},
		{"nlink@40", uint64(le.Uint32(b[40:])), uint64(i.Nlink)},
		{"mode@44", uint64(le.Uint32(b[44:])), uint64(i.Mode)},
		{"uid@48", uint64(le.Uint32(b[48:])), uint64(i.UID)},
		{"gid@52", uint64(le.Uint32(b[52:])), uint64(i.GID)},
		{"atime.sec@64", le.Uint64(b[64:]), uint64(i.Atime.Sec)},
		{"atime.nsec@72", uint64(le.Uint32(b[72:])), uint64(i.Atime.Nsec)},
		{"mtime.sec@76", le.Uint64(b[76:]), uint64(i.Mtime.Sec)},
		{"ctime.sec@88", le.Uint64(b[88:]), uint64(i.Ctime.Sec)},
		{"btime.nsec@108", uint64(le.Uint32(b[108:])), uint64(i.Btime.Nsec)},
		{"compression@112", uint64(b[112]), 2},
		{"dedupe@113", uint64(b[113]), 2},
		{"data_tier@114", uint64(b[114]), 3},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if !bytes.Equal(b[115:], make([]byte, 13)) {
		t.Error("reserved bytes 115..127 not zero")
	}
}

func TestInodeItemCorrupt(t *testing.T) {
	cases := []struct {
		name   string
		change func(i *InodeItem)
	}{
		{"no file type", func(i *InodeItem) { i.Mode = 0o644 }},
		{"file type 0o070000", func(i *InodeItem) { i.Mode = 0o070000 }},
		{"mode bits above 16", func(i *InodeItem) { i.Mode |= 1 << 16 }},
		{"atime nsec 1e9", func(i *InodeItem) { i.Atime.Nsec = 1e9 }},
		{"mtime nsec max", func(i *InodeItem) { i.Mtime.Nsec = ^uint32(0) }},
		{"ctime nsec 1e9", func(i *InodeItem) { i.Ctime.Nsec = 1e9 }},
		{"btime nsec 1e9", func(i *InodeItem) { i.Btime.Nsec = 1e9 }},
		{"unknown compression", func(i *InodeItem) { i.Compression = CompressPropOf(CompressS2) + 1 }},
		{"unknown dedupe setting", func(i *InodeItem) { i.Dedupe = 3 }},
	}
	for _, tc := range cases {
		i := testInode()
		tc.change(i)
		if _, err := UnmarshalInodeItem(MarshalInodeItem(i)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	b := MarshalInodeItem(testInode())
	if _, err := UnmarshalInodeItem(b[:InodeItemSize-1]); !errors.Is(err, ErrShort) {
		t.Errorf("short: %v", err)
	}
	if _, err := UnmarshalInodeItem(append(b, 0)); !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrShort) {
		t.Errorf("long: %v", err)
	}
}

func TestFileTypes(t *testing.T) {
	cases := []struct {
		t    FileType
		mode uint32
		name string
	}{
		{FileTypeRegular, 0o100000, "reg"}, {FileTypeDir, 0o040000, "dir"}, {FileTypeCharDev, 0o020000, "chrdev"},
		{FileTypeBlockDev, 0o060000, "blkdev"}, {FileTypeFIFO, 0o010000, "fifo"}, {FileTypeSocket, 0o140000, "sock"},
		{FileTypeSymlink, 0o120000, "symlink"},
	}
	for n, tc := range cases {
		if uint8(tc.t) != uint8(n+1) || tc.t.Mode() != tc.mode || FileTypeOfMode(tc.mode|0o644) != tc.t || tc.t.String() != tc.name {
			t.Errorf("%v: value %d mode 0%o", tc.t, tc.t, tc.t.Mode())
		}
	}
	if FileType(0).Valid() || FileType(8).Valid() || FileType(8).Mode() != 0 || FileTypeOfMode(0o644) != 0 {
		t.Error("invalid file types accepted")
	}
	if c, ok := CompressPropOf(CompressZstd).Compression(); !ok || c != CompressZstd {
		t.Error("CompressProp round trip")
	}
	if _, ok := CompressInherit.Compression(); ok {
		t.Error("CompressInherit names a compression")
	}
}

func TestValidName(t *testing.T) {
	cases := []struct {
		name string
		ok   bool
	}{
		{"a", true}, {"file.txt", true}, {"...", true}, {".hidden", true}, {"ünïcødé", true},
		{strings.Repeat("x", 255), true}, {"\xff\xfe", true},
		{"", false}, {".", false}, {"..", false}, {"a/b", false}, {"/", false}, {"a\x00b", false},
		{strings.Repeat("x", 256), false},
	}
	for _, tc := range cases {
		if ValidName(tc.name) != tc.ok {
			t.Errorf("ValidName(%q) = %v", tc.name, !tc.ok)
		}
	}
}

func TestDirEntries(t *testing.T) {
	es := []DirEntry{
		{Ino: 257, Type: FileTypeRegular, Name: "a"},
		{Ino: 1 << 40, Type: FileTypeSymlink, Name: strings.Repeat("z", 255)},
		{Ino: 300, Type: FileTypeDir, Name: "sub dir"},
	}
	b := MarshalDirEntries(es)
	if len(b) != 3*11+1+255+7 {
		t.Fatalf("%d bytes", len(b))
	}
	// Layout of the first entry: ino u64, type u8, name_len u16, name.
	if binary.LittleEndian.Uint64(b[0:]) != 257 || b[8] != 1 || binary.LittleEndian.Uint16(b[9:]) != 1 || b[11] != 'a' {
		t.Fatalf("layout: % x", b[:12])
	}
	got, err := UnmarshalDirEntries(b)
	if err != nil || !reflect.DeepEqual(got, es) {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	one, err := UnmarshalDirEntry(MarshalDirEntry(es[2]))
	if err != nil || one != es[2] {
		t.Fatalf("dir index round trip: %+v %v", one, err)
	}
	if _, err := UnmarshalDirEntry(b); !errors.Is(err, ErrCorrupt) {
		t.Errorf("dir index with 3 entries: %v", err)
	}

	bad := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrShort},
		{"short header", b[:10], ErrShort},
		{"short name", b[:11], ErrShort},
		{"trailing bytes", append(bytes.Clone(b), 1, 2), ErrShort},
		{"ino 0", MarshalDirEntry(DirEntry{Type: FileTypeRegular, Name: "a"}), nil},
		{"type 0", MarshalDirEntry(DirEntry{Ino: 257, Name: "a"}), nil},
		{"type 8", MarshalDirEntry(DirEntry{Ino: 257, Type: 8, Name: "a"}), nil},
		{"empty name", MarshalDirEntry(DirEntry{Ino: 257, Type: 1}), nil},
		{"dot", MarshalDirEntry(DirEntry{Ino: 257, Type: 2, Name: "."}), nil},
		{"dotdot", MarshalDirEntry(DirEntry{Ino: 257, Type: 2, Name: ".."}), nil},
		{"slash", MarshalDirEntry(DirEntry{Ino: 257, Type: 1, Name: "a/b"}), nil},
		{"nul", MarshalDirEntry(DirEntry{Ino: 257, Type: 1, Name: "a\x00"}), nil},
		{"256-byte name", MarshalDirEntry(DirEntry{Ino: 257, Type: 1, Name: strings.Repeat("n", 256)}), nil},
		{"same name twice", MarshalDirEntries([]DirEntry{es[0], {Ino: 999, Type: FileTypeDir, Name: "a"}}), nil},
	}
	for _, tc := range bad {
		_, err := UnmarshalDirEntries(tc.b)
		if !errors.Is(err, ErrCorrupt) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func TestInodeRefs(t *testing.T) {
	rs := []InodeRef{{Index: 2, Name: "first"}, {Index: 1 << 50, Name: "second link"}}
	b := MarshalInodeRefs(rs)
	if len(b) != 2*10+5+11 || binary.LittleEndian.Uint64(b) != 2 || binary.LittleEndian.Uint16(b[8:]) != 5 || string(b[10:15]) != "first" {
		t.Fatalf("layout: % x", b)
	}
	got, err := UnmarshalInodeRefs(b)
	if err != nil || !reflect.DeepEqual(got, rs) {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	bad := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrShort},
		{"short header", b[:9], ErrShort},
		{"short name", b[:12], ErrShort},
		{"bad name", MarshalInodeRefs([]InodeRef{{Index: 2, Name: ".."}}), nil},
		{"same name twice", MarshalInodeRefs([]InodeRef{{Index: 2, Name: "x"}, {Index: 3, Name: "x"}}), nil},
		{"same index twice", MarshalInodeRefs([]InodeRef{{Index: 2, Name: "x"}, {Index: 2, Name: "y"}}), nil},
	}
	for _, tc := range bad {
		_, err := UnmarshalInodeRefs(tc.b)
		if !errors.Is(err, ErrCorrupt) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func TestXattrs(t *testing.T) {
	xs := []Xattr{
		{Name: "user.comment", Value: []byte("hello")},
		{Name: "security.selinux", Value: []byte("system_u:object_r:\x00")},
		{Name: "user.empty"},
	}
	b := MarshalXattrs(xs)
	if binary.LittleEndian.Uint16(b) != 12 || binary.LittleEndian.Uint32(b[2:]) != 5 || string(b[6:18]) != "user.comment" || string(b[18:23]) != "hello" {
		t.Fatalf("layout: % x", b[:23])
	}
	got, err := UnmarshalXattrs(b)
	if err != nil || !reflect.DeepEqual(got, xs) {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	big := []Xattr{{Name: "user.big", Value: bytes.Repeat([]byte{7}, 70000)}}
	if got, err := UnmarshalXattrs(MarshalXattrs(big)); err != nil || !reflect.DeepEqual(got, big) {
		t.Fatalf("large value: %v", err)
	}
	huge := MarshalXattrs([]Xattr{{Name: "user.x", Value: []byte{1}}})
	binary.LittleEndian.PutUint32(huge[2:], 0xffffffff)
	bad := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrShort},
		{"short header", b[:5], ErrShort},
		{"short value", b[:20], ErrShort},
		{"value length past end", huge, ErrShort},
		{"empty name", MarshalXattrs([]Xattr{{Value: []byte{1}}}), nil},
		{"nul in name", MarshalXattrs([]Xattr{{Name: "user.\x00"}}), nil},
		{"256-byte name", MarshalXattrs([]Xattr{{Name: strings.Repeat("u", 256)}}), nil},
		{"same name twice", MarshalXattrs([]Xattr{xs[0], xs[0]}), nil},
	}
	for _, tc := range bad {
		_, err := UnmarshalXattrs(tc.b)
		if !errors.Is(err, ErrCorrupt) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func TestFileExtentItem(t *testing.T) {
	good := []*FileExtentItem{
		{Generation: 4, Type: FileExtentInline, Inline: []byte("small file")},
		{Generation: 4, Type: FileExtentRegular, DiskLogical: 9 << 20, DiskLen: 128 << 10, Offset: 4096, NumBytes: 8192, RAMBytes: 128 << 10},
		{Generation: 4, Type: FileExtentRegular, Compression: CompressZstd, DiskLogical: 9 << 20, DiskLen: 8192, NumBytes: 128 << 10, RAMBytes: 128 << 10},
		{Generation: 4, Type: FileExtentRegular, Compression: CompressS2, DiskLogical: 9 << 20, DiskLen: 4096, Offset: 100, NumBytes: 1, RAMBytes: 4096},
		{Generation: 4, Type: FileExtentPrealloc, DiskLogical: 1 << 30, DiskLen: 1 << 20, NumBytes: 1 << 20, RAMBytes: 1 << 20},
		{Generation: 4, Type: FileExtentRegular, NumBytes: 1 << 40, RAMBytes: 1 << 40}, // explicit hole
	}
	for _, f := range good {
		b := MarshalFileExtentItem(f)
		want := FileExtentRegSize
		if f.Type == FileExtentInline {
			want = FileExtentHeaderSize + len(f.Inline)
		}
		if len(b) != want || b[8] != byte(f.Type) || b[9] != byte(f.Compression) || !bytes.Equal(b[10:16], make([]byte, 6)) {
			t.Fatalf("%v: layout % x", f.Type, b[:16])
		}
		got, err := UnmarshalFileExtentItem(b)
		if err != nil || !reflect.DeepEqual(got, f) {
			t.Fatalf("%v round trip: %+v %v", f.Type, got, err)
		}
	}
	if !good[5].IsHole() || good[1].IsHole() || good[4].IsHole() || good[0].Len() != 10 || good[1].Len() != 8192 {
		t.Error("IsHole/Len")
	}
	b := MarshalFileExtentItem(good[1])
	le := binary.LittleEndian
	if le.Uint64(b[16:]) != 9<<20 || le.Uint64(b[24:]) != 128<<10 || le.Uint64(b[32:]) != 4096 || le.Uint64(b[40:]) != 8192 || le.Uint64(b[48:]) != 128<<10 {
		t.Error("regular extent fields not at 16/24/32/40/48")
	}

	reg := func(change func(f *FileExtentItem)) []byte {
		f := *good[1]
		change(&f)
		return MarshalFileExtentItem(&f)
	}
	bad := []struct {
		name string
		b    []byte
		want error
	}{
		{"short header", b[:15], ErrShort},
		{"short regular", b[:FileExtentRegSize-1], ErrShort},
		{"long regular", append(bytes.Clone(b), 0), nil},
		{"type 3", reg(func(f *FileExtentItem) { f.Type = 3 }), nil},
		{"empty inline", MarshalFileExtentItem(&FileExtentItem{Type: FileExtentInline}), nil},
		{"compressed inline", MarshalFileExtentItem(&FileExtentItem{Type: FileExtentInline, Compression: CompressZstd, Inline: []byte("x")}), nil},
		{"unknown compression", reg(func(f *FileExtentItem) { f.Compression = CompressS2 + 1 }), nil},
		{"compressed prealloc", reg(func(f *FileExtentItem) { f.Type, f.Compression = FileExtentPrealloc, CompressZstd }), nil},
		{"zero num_bytes", reg(func(f *FileExtentItem) { f.NumBytes = 0 }), nil},
		{"range past ram_bytes", reg(func(f *FileExtentItem) { f.Offset = f.RAMBytes - 4095 }), nil},
		{"offset past ram_bytes", reg(func(f *FileExtentItem) { f.Offset = f.RAMBytes + 1 }), nil},
		{"offset+num_bytes overflows", reg(func(f *FileExtentItem) { f.Offset, f.NumBytes = 4096, ^uint64(0)-100 }), nil},
		{"hole with disk length", reg(func(f *FileExtentItem) { f.DiskLogical = 0 }), nil},
		{"prealloc hole", reg(func(f *FileExtentItem) { f.Type, f.DiskLogical, f.DiskLen = FileExtentPrealloc, 0, 0 }), nil},
		{"compressed hole", reg(func(f *FileExtentItem) { f.DiskLogical, f.DiskLen, f.Compression = 0, 0, CompressZstd }), nil},
		{"zero disk length", reg(func(f *FileExtentItem) { f.DiskLen = 0 }), nil},
		{"disk range overflows", reg(func(f *FileExtentItem) {
			f.DiskLogical = ^uint64(0) - 10
			f.DiskLen, f.RAMBytes, f.Offset, f.NumBytes = 4096, 4096, 0, 4096
		}), nil},
		{"uncompressed ram != disk", reg(func(f *FileExtentItem) { f.RAMBytes = f.DiskLen * 2 }), nil},
	}
	for _, tc := range bad {
		_, err := UnmarshalFileExtentItem(tc.b)
		if !errors.Is(err, ErrCorrupt) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func TestExtentDataRef(t *testing.T) {
	r := &ExtentDataRef{Tree: FSTree, Ino: 257, Offset: 1 << 20, Count: 3}
	b := MarshalExtentDataRef(r)
	if len(b) != ExtentDataRefSize || binary.LittleEndian.Uint64(b) != 3 || binary.LittleEndian.Uint64(b[8:]) != 257 ||
		binary.LittleEndian.Uint64(b[16:]) != 1<<20 || binary.LittleEndian.Uint32(b[24:]) != 3 {
		t.Fatalf("layout: % x", b)
	}
	if got, err := UnmarshalExtentDataRef(b); err != nil || !reflect.DeepEqual(got, r) {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	if r.Hash() != ExtentDataRefHash(3, 257, 1<<20) || r.Hash() != xxhash.Sum64(b[:24]) {
		t.Error("Hash is not xxhash64 of tree, ino, offset")
	}
	for name, bad := range map[string]*ExtentDataRef{
		"tree 0": {Ino: 257, Count: 1}, "ino 0": {Tree: FSTree, Count: 1}, "count 0": {Tree: FSTree, Ino: 257},
	} {
		if _, err := UnmarshalExtentDataRef(MarshalExtentDataRef(bad)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := UnmarshalExtentDataRef(b[:27]); !errors.Is(err, ErrShort) {
		t.Errorf("short: %v", err)
	}
}

func TestDedupeItem(t *testing.T) {
	h := DedupeHash(Checksum(CsumBLAKE3, []byte("block")))
	d := &DedupeItem{Hash: h, Length: 128 << 10, HashAlgo: CsumBLAKE3}
	b := MarshalDedupeItem(d)
	if len(b) != DedupeItemSize || !bytes.Equal(b[:12], h[8:20]) || binary.LittleEndian.Uint32(b[12:]) != 128<<10 || b[16] != 3 {
		t.Fatalf("layout: %x", b)
	}
	if got, err := UnmarshalDedupeItem(DedupeHashPrefix(h), b); err != nil || !reflect.DeepEqual(got, d) {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	for name, bad := range map[string]*DedupeItem{
		"zero length":        {Hash: h, Length: 0, HashAlgo: CsumSHA256},
		"huge block":         {Hash: h, Length: 16 << 20, HashAlgo: CsumSHA256},
		"crc algo":           {Hash: h, Length: 4096, HashAlgo: CsumCRC32C},
		"algo 5":             {Hash: h, Length: 4096, HashAlgo: CsumXXH3 + 1},
		"xxh3 past 16 bytes": {Hash: h, Length: 4096, HashAlgo: CsumXXH3}, // a 20-byte hash
	} {
		if _, err := UnmarshalDedupeItem(1, MarshalDedupeItem(bad)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
	x := &DedupeItem{Hash: DedupeHash(Checksum(CsumXXH3, []byte("block"))), Length: 4096, HashAlgo: CsumXXH3}
	if got, err := UnmarshalDedupeItem(DedupeHashPrefix(x.Hash), MarshalDedupeItem(x)); err != nil || !reflect.DeepEqual(got, x) {
		t.Fatalf("xxh3 round trip: %+v %v", got, err)
	}
	if _, err := UnmarshalDedupeItem(1, b[:16]); !errors.Is(err, ErrShort) {
		t.Errorf("short: %v", err)
	}
	// The strong tail: 20 more bytes, xxh3 entries only (§6.8).
	strong := [DedupeHashLen]byte{1, 2, 3, 19: 20}
	x.Strong = &strong
	xb := MarshalDedupeItem(x)
	if len(xb) != DedupeItemStrongSize || !bytes.Equal(xb[17:], strong[:]) || !bytes.Equal(xb[:17], MarshalDedupeItem(&DedupeItem{Hash: x.Hash, Length: 4096, HashAlgo: CsumXXH3})) {
		t.Fatalf("tail layout: %x", xb)
	}
	if got, err := UnmarshalDedupeItem(DedupeHashPrefix(x.Hash), xb); err != nil || !reflect.DeepEqual(got, x) {
		t.Fatalf("tail round trip: %+v %v", got, err)
	}
	if _, err := UnmarshalDedupeItem(1, MarshalDedupeItem(&DedupeItem{Hash: h, Length: 4096, HashAlgo: CsumBLAKE3, Strong: &strong})); !errors.Is(err, ErrCorrupt) {
		t.Errorf("tail on a blake3 entry: %v", err)
	}
	for _, n := range []int{18, 36, 38} {
		if _, err := UnmarshalDedupeItem(1, append(xb, make([]byte, 2)...)[:n]); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%d bytes: %v", n, err)
		}
	}
}

func TestHashes(t *testing.T) {
	cases := []struct {
		name string
		want uint64
	}{
		{"", 0xef46db3751d8e999}, // xxhash64 seed 0 of no bytes
		{"foo", 0x33bf00a859c4ba3f},
		{"hello.txt", 0xa72231b366a77d32},
		{"user.comment", 0xad84bcfdfc1e771b},
	}
	for _, tc := range cases {
		if got := NameHash([]byte(tc.name)); got != tc.want {
			t.Errorf("NameHash(%q) = %#x, want %#x", tc.name, got, tc.want)
		}
	}
	if got := ExtentDataRefHash(3, 257, 0); got != 0x2ee16f9d61b85fb3 {
		t.Errorf("ExtentDataRefHash(3, 257, 0) = %#x", got)
	}
}

// TestEachNameAfterValidation: EachDirEntry and EachInodeRef call fn only
// once the whole item has validated (fsck adds each name to its balances
// from fn, so a bad later name must not leave the earlier ones counted),
// and then on every name in order, more than fit on the stack too.
func TestEachNameAfterValidation(t *testing.T) {
	var es []DirEntry
	var rs []InodeRef
	for i := 0; i < smallEntries+2; i++ {
		es = append(es, DirEntry{Ino: uint64(300 + i), Type: FileTypeRegular, Name: string(rune('a' + i))})
		rs = append(rs, InodeRef{Index: uint64(2 + i), Name: string(rune('a' + i))})
	}
	var gotE []DirEntry
	if err := EachDirEntry(MarshalDirEntries(es), func(e DirEntryView) {
		gotE = append(gotE, DirEntry{Ino: e.Ino, Type: e.Type, Name: string(e.Name)})
	}); err != nil || !reflect.DeepEqual(gotE, es) {
		t.Fatalf("dir entries: %+v %v", gotE, err)
	}
	var gotR []InodeRef
	if err := EachInodeRef(MarshalInodeRefs(rs), func(r InodeRefView) {
		gotR = append(gotR, InodeRef{Index: r.Index, Name: string(r.Name)})
	}); err != nil || !reflect.DeepEqual(gotR, rs) {
		t.Fatalf("inode refs: %+v %v", gotR, err)
	}
	badE := [][]byte{
		MarshalDirEntries(append(es[:2:2], DirEntry{Ino: 999, Type: FileTypeDir, Name: "a"})),
		append(MarshalDirEntries(es), 1, 2),
		MarshalDirEntries(append(es[:2:2], DirEntry{Ino: 999, Type: FileTypeDir, Name: ".."})),
	}
	for i, b := range badE {
		n := 0
		if err := EachDirEntry(b, func(DirEntryView) { n++ }); !errors.Is(err, ErrCorrupt) || n != 0 {
			t.Errorf("bad dir item %d: %v, fn called %d times", i, err, n)
		}
	}
	badR := [][]byte{
		MarshalInodeRefs(append(rs[:2:2], InodeRef{Index: 2, Name: "z"})),
		append(MarshalInodeRefs(rs), 1),
		MarshalInodeRefs(append(rs[:2:2], InodeRef{Index: 99, Name: "a/b"})),
	}
	for i, b := range badR {
		n := 0
		if err := EachInodeRef(b, func(InodeRefView) { n++ }); !errors.Is(err, ErrCorrupt) || n != 0 {
			t.Errorf("bad inode ref %d: %v, fn called %d times", i, err, n)
		}
	}
}
