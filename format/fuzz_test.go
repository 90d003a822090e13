package format

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

// Every decoder is fuzzed for two properties: it never panics, and what it
// accepts re-encodes to bytes that decode to the same value. Failures must
// match ErrCorrupt (ErrUnsupported for a newer superblock).

// roundTrip checks the properties for a decoder/encoder pair.
func roundTrip[T any](t *testing.T, b []byte, dec func([]byte) (T, error), enc func(T) []byte) {
	t.Helper()
	v, err := dec(b)
	if err != nil {
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("error does not match ErrCorrupt: %v", err)
		}
		return
	}
	b2 := enc(v)
	v2, err := dec(b2)
	if err != nil {
		t.Fatalf("accepted value does not decode after re-encoding: %v\nvalue %+v", err, v)
	}
	if !reflect.DeepEqual(v, v2) {
		t.Fatalf("round trip changed the value:\n%+v\n%+v", v, v2)
	}
}

func checkSuperblock(t *testing.T, b []byte) {
	t.Helper()
	sb, err := UnmarshalSuperblock(b)
	if err != nil {
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) {
			t.Fatalf("error matches neither ErrCorrupt nor ErrUnsupported: %v", err)
		}
		return
	}
	b2, err := MarshalSuperblock(sb)
	if err != nil {
		t.Fatalf("accepted superblock does not re-encode: %v", err)
	}
	sb2, err := UnmarshalSuperblock(b2)
	if err != nil || !reflect.DeepEqual(sb, sb2) {
		t.Fatalf("round trip: %v\n%+v\n%+v", err, sb, sb2)
	}
}

func FuzzUnmarshalSuperblock(f *testing.F) {
	for _, sb := range []*Superblock{exampleSuperblock(), richSuperblock(CsumCRC32C), richSuperblock(CsumXXHash64)} {
		b, err := MarshalSuperblock(sb)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkSuperblock(t, b)
		// Reseal so mutations reach past the checksum.
		if len(b) >= SuperblockSize {
			c := bytes.Clone(b[:SuperblockSize])
			reseal(c, CsumType(binary.LittleEndian.Uint16(c[sbCsumType:])))
			checkSuperblock(t, c)
		}
	})
}

func checkNode(t *testing.T, b []byte, c CsumType, want NodeExpect) {
	t.Helper()
	n, err := UnmarshalNode(b, c, want)
	if err != nil {
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("error does not match ErrCorrupt: %v", err)
		}
		return
	}
	b2 := MarshalNode(n, uint32(len(b)), c)
	n2, err := UnmarshalNode(b2, c, want)
	if err != nil || !reflect.DeepEqual(n, n2) {
		t.Fatalf("round trip: %v\n%+v\n%+v", err, n, n2)
	}
}

func FuzzUnmarshalNode(f *testing.F) {
	for i, c := range allCsums {
		f.Add(MarshalNode(testLeaf(), 4096, c), uint8(i))
		f.Add(MarshalNode(testInternal(), 4096, c), uint8(i))
	}
	f.Fuzz(func(t *testing.T, b []byte, ct uint8) {
		c := allCsums[int(ct)%len(allCsums)]
		checkNode(t, b, c, NodeExpect{FSID: testFSID, Logical: 5 << 20, Level: -1})
		// Reseal and expect what the header says, so mutations reach the items.
		if len(b) >= NodeHeaderSize+LeafItemSize {
			b = bytes.Clone(b)
			reseal(b, c)
			want := NodeExpect{Logical: binary.LittleEndian.Uint64(b[48:]), Generation: binary.LittleEndian.Uint64(b[56:]),
				Owner: TreeID(binary.LittleEndian.Uint64(b[64:])), Level: int(b[76])}
			copy(want.FSID[:], b[32:48])
			checkNode(t, b, c, want)
		}
	})
}

func FuzzUnmarshalChunkItem(f *testing.F) {
	for _, c := range []*ChunkItem{chunk(ProfileSingle, mib, 1), chunk(ProfileDup, mib, 1, 1), chunk(ProfileRaid0, mib, 1, 2),
		chunk(ProfileRaid1C3, mib, 1, 2, 3), chunk(ProfileRaid10, 8*mib, 1, 2, 3, 4)} {
		f.Add(MarshalChunkItem(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, n, err := UnmarshalChunkItem(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not match ErrCorrupt: %v", err)
			}
			return
		}
		if n > len(b) {
			t.Fatalf("consumed %d of %d bytes", n, len(b))
		}
		b2 := MarshalChunkItem(c)
		c2, n2, err := UnmarshalChunkItem(b2)
		if err != nil || n2 != n || n2 != len(b2) || !reflect.DeepEqual(c, c2) {
			t.Fatalf("round trip: %v n %d/%d\n%+v\n%+v", err, n, n2, c, c2)
		}
	})
}

func FuzzUnmarshalDevItem(f *testing.F) {
	f.Add(MarshalDevItem(&DevItem{DevID: 1, TotalBytes: 1 << 30, Rotational: true, Path: "disk.img"}))
	f.Add(MarshalDevItem(&DevItem{DevID: 7}))
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, UnmarshalDevItem, MarshalDevItem) })
}

func FuzzUnmarshalBlockGroupItem(f *testing.F) {
	f.Add(MarshalBlockGroupItem(&BlockGroupItem{Used: 1, Type: ChunkData, Profile: ProfileRaid1}))
	f.Add(MarshalBlockGroupItem(&BlockGroupItem{Used: 2, Type: ChunkMetadata, Profile: ProfileDup, Flags: BlockGroupFallback}))
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, UnmarshalBlockGroupItem, MarshalBlockGroupItem) })
}

func FuzzUnmarshalMetadataItem(f *testing.F) {
	f.Add(MarshalMetadataItem(&MetadataItem{Refs: 1, Generation: 2, Owner: FSTree}))
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, UnmarshalMetadataItem, MarshalMetadataItem) })
}

func FuzzUnmarshalExtentItem(f *testing.F) {
	f.Add(MarshalExtentItem(&ExtentItem{Refs: 1, Generation: 2, RAMBytes: 4096, Compression: CompressZstd}))
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, UnmarshalExtentItem, MarshalExtentItem) })
}

func FuzzUnmarshalInodeItem(f *testing.F) {
	f.Add(MarshalInodeItem(testInode()))
	f.Add(MarshalInodeItem(&InodeItem{Mode: ModeDir | 0o755, Nlink: 1, Seq: 2}))
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, UnmarshalInodeItem, MarshalInodeItem) })
}

func FuzzUnmarshalDirEntries(f *testing.F) {
	f.Add(MarshalDirEntries([]DirEntry{{Ino: 257, Type: FileTypeRegular, Name: "a"}, {Ino: 258, Type: FileTypeDir, Name: "bb"}}))
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, UnmarshalDirEntries, MarshalDirEntries) })
}

func FuzzUnmarshalDirEntry(f *testing.F) {
	f.Add(MarshalDirEntry(DirEntry{Ino: 257, Type: FileTypeSymlink, Name: "link"}))
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, UnmarshalDirEntry, MarshalDirEntry) })
}

func FuzzUnmarshalInodeRefs(f *testing.F) {
	f.Add(MarshalInodeRefs([]InodeRef{{Index: 2, Name: "a"}, {Index: 3, Name: "b"}}))
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, UnmarshalInodeRefs, MarshalInodeRefs) })
}

func FuzzUnmarshalXattrs(f *testing.F) {
	f.Add(MarshalXattrs([]Xattr{{Name: "user.a", Value: []byte("v")}, {Name: "user.b"}}))
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, UnmarshalXattrs, MarshalXattrs) })
}

func FuzzUnmarshalFileExtentItem(f *testing.F) {
	f.Add(MarshalFileExtentItem(&FileExtentItem{Type: FileExtentInline, Inline: []byte("data")}))
	f.Add(MarshalFileExtentItem(&FileExtentItem{Type: FileExtentRegular, Compression: CompressZstd, DiskLogical: 1 << 20, DiskLen: 4096, NumBytes: 8192, RAMBytes: 8192}))
	f.Add(MarshalFileExtentItem(&FileExtentItem{Type: FileExtentPrealloc, DiskLogical: 1 << 20, DiskLen: 4096, NumBytes: 4096, RAMBytes: 4096}))
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, UnmarshalFileExtentItem, MarshalFileExtentItem) })
}

func FuzzUnmarshalExtentDataRef(f *testing.F) {
	f.Add(MarshalExtentDataRef(&ExtentDataRef{Tree: FSTree, Ino: 257, Offset: 4096, Count: 1}))
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, UnmarshalExtentDataRef, MarshalExtentDataRef) })
}

func FuzzUnmarshalDedupeItem(f *testing.F) {
	f.Add(MarshalDedupeItem(&DedupeItem{Hash: DedupeHash(Checksum(CsumBLAKE3, []byte("x"))), Length: 4096, HashAlgo: CsumBLAKE3}))
	f.Add(MarshalDedupeItem(&DedupeItem{Hash: DedupeHash(Checksum(CsumXXH3, []byte("x"))), Length: 4096, HashAlgo: CsumXXH3, Strong: &[DedupeHashLen]byte{9}}))
	unmarshal := func(b []byte) (*DedupeItem, error) { return UnmarshalDedupeItem(7, b) }
	f.Fuzz(func(t *testing.T, b []byte) { roundTrip(t, b, unmarshal, MarshalDedupeItem) })
}
