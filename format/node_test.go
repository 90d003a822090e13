package format

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

var testFSID = [16]byte{0xdd, 0xf5, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9}

var allCsums = []CsumType{CsumCRC32C, CsumXXHash64, CsumSHA256, CsumBLAKE3}

func testLeaf() *Node {
	return &Node{
		NodeHeader: NodeHeader{FSID: testFSID, Logical: 5 << 20, Generation: 42, Owner: FSTree},
		Items: []Item{
			{Key: Key{RootDirIno, InodeItemKey, 0}, Data: MarshalInodeItem(&InodeItem{Mode: ModeDir | 0o755, Nlink: 1, Seq: 3})},
			{Key: Key{RootDirIno, DirItemKey, NameHash([]byte("a"))}, Data: MarshalDirEntries([]DirEntry{{Ino: 257, Type: FileTypeRegular, Name: "a"}})},
			{Key: Key{RootDirIno, DirIndexKey, 2}, Data: MarshalDirEntry(DirEntry{Ino: 257, Type: FileTypeRegular, Name: "a"})},
			{Key: Key{257, InodeItemKey, 0}, Data: []byte{}}, // empty values are legal
			{Key: Key{257, FileExtentKey, 0}, Data: MarshalFileExtentItem(&FileExtentItem{Type: FileExtentInline, Inline: []byte("hello")})},
		},
	}
}

func testInternal() *Node {
	return &Node{
		NodeHeader: NodeHeader{FSID: testFSID, Logical: 6 << 20, Generation: 43, Owner: ExtentTree, Level: 2},
		Ptrs: []KeyPtr{
			{Key: Key{0, 0, 0}, Logical: 7 << 20, Generation: 40},
			{Key: Key{1 << 20, ExtentItemKey, 4096}, Logical: 8 << 20, Generation: 43},
			{Key: Key{1 << 20, MetadataItemKey, 0}, Logical: 9 << 20, Generation: 12},
		},
	}
}

func expectOf(n *Node) NodeExpect {
	return NodeExpect{FSID: n.FSID, Logical: n.Logical, Generation: n.Generation, Owner: n.Owner, Level: int(n.Level)}
}

func TestNodeRoundTrip(t *testing.T) {
	empty := &Node{NodeHeader: NodeHeader{FSID: testFSID, Logical: 4096, Generation: 1, Owner: CsumTree}}
	for _, c := range allCsums {
		for _, n := range []*Node{testLeaf(), testInternal(), empty} {
			for _, size := range []uint32{4096, 16384, 65536} {
				b := MarshalNode(n, size, c)
				if len(b) != int(size) {
					t.Fatalf("%v: %d bytes", c, len(b))
				}
				got, err := UnmarshalNode(b, c, expectOf(n))
				if err != nil {
					t.Fatalf("%v level %d size %d: %v", c, n.Level, size, err)
				}
				if empty == n {
					// A decoded empty leaf has an empty, non-nil item list.
					got.Items = nil
				}
				if !reflect.DeepEqual(got, n) {
					t.Fatalf("%v level %d size %d:\n got %+v\nwant %+v", c, n.Level, size, got, n)
				}
				// Unknown expectations are not checked.
				if _, err := UnmarshalNode(b, c, NodeExpect{FSID: n.FSID, Logical: n.Logical, Level: -1}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

func TestNodeLayout(t *testing.T) {
	n := testLeaf()
	b := MarshalNode(n, 4096, CsumCRC32C)
	le := binary.LittleEndian
	if sum := Checksum(CsumCRC32C, b[32:]); le.Uint32(b[0:]) != le.Uint32(sum[:]) || !bytes.Equal(b[4:32], make([]byte, 28)) {
		t.Error("crc32c not little-endian in bytes 0..3 with zero padding")
	}
	if le.Uint64(b[48:]) != n.Logical || le.Uint64(b[56:]) != n.Generation || le.Uint64(b[64:]) != uint64(n.Owner) ||
		le.Uint32(b[72:]) != uint32(len(n.Items)) || b[76] != 0 {
		t.Error("header fields not at the offsets of FORMAT.md §4.1")
	}
	// Item data is packed from the end of the node, in item order.
	end := uint32(4096)
	for i, it := range n.Items {
		o := NodeHeaderSize + i*LeafItemSize
		end -= uint32(len(it.Data))
		if GetKey(b[o:]) != it.Key || le.Uint32(b[o+KeySize:]) != end || le.Uint32(b[o+KeySize+4:]) != uint32(len(it.Data)) {
			t.Errorf("item %d header", i)
		}
	}
	if used := NodeHeaderSize + n.UsedBytes(); !bytes.Equal(b[NodeHeaderSize+len(n.Items)*LeafItemSize:end], make([]byte, 4096-used)) {
		t.Error("free space is not zero")
	}
	if got := MaxItemData(4096); got != 4096-80-25 {
		t.Errorf("MaxItemData(4096) = %d", got)
	}
}

// TestNodeByteFlips: any flipped byte of a node, including the zero padding
// of a short checksum, is a checksum error.
func TestNodeByteFlips(t *testing.T) {
	for _, c := range allCsums {
		for _, n := range []*Node{testLeaf(), testInternal()} {
			good := MarshalNode(n, 4096, c)
			for i := range len(good) {
				b := bytes.Clone(good)
				b[i] ^= 0x5a
				_, err := UnmarshalNode(b, c, expectOf(n))
				if !errors.Is(err, ErrChecksum) || !errors.Is(err, ErrCorrupt) {
					t.Fatalf("%v level %d byte %d: %v", c, n.Level, i, err)
				}
			}
		}
	}
}

func TestNodeExpectations(t *testing.T) {
	leaf := testLeaf()
	good := expectOf(leaf)
	cases := []struct {
		name string
		want func(w *NodeExpect)
	}{
		{"misdirected (wrong logical)", func(w *NodeExpect) { w.Logical += 4096 }},
		{"stale (older generation)", func(w *NodeExpect) { w.Generation++ }},
		{"newer generation", func(w *NodeExpect) { w.Generation-- }},
		{"wrong owner", func(w *NodeExpect) { w.Owner = ExtentTree }},
		{"wrong level", func(w *NodeExpect) { w.Level = 1 }},
		{"other filesystem", func(w *NodeExpect) { w.FSID[0] ^= 1 }},
	}
	b := MarshalNode(leaf, 4096, CsumXXHash64)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := good
			tc.want(&w)
			_, err := UnmarshalNode(b, CsumXXHash64, w)
			if !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrChecksum) {
				t.Fatalf("got %v, want a header mismatch", err)
			}
		})
	}
}

// TestNodeAltFSID: while a fsid change is in progress, a node carrying the
// new fsid is accepted, one carrying a third fsid is not (§3.8), and
// ResealNodeFSID changes only bytes 0..47.
func TestNodeAltFSID(t *testing.T) {
	leaf := testLeaf()
	b := MarshalNode(leaf, 4096, CsumCRC32C)
	orig := bytes.Clone(b)
	next := [16]byte{0xaa, 0xbb}
	ResealNodeFSID(b, CsumCRC32C, next)
	if !bytes.Equal(b[48:], orig[48:]) {
		t.Fatal("reseal changed bytes past the header's fsid")
	}
	w := expectOf(leaf)
	if _, err := UnmarshalNode(b, CsumCRC32C, w); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("new fsid without AltFSID: %v", err)
	}
	w.AltFSID = next
	n, err := UnmarshalNode(b, CsumCRC32C, w)
	if err != nil || n.FSID != next {
		t.Fatalf("new fsid with AltFSID: %v", err)
	}
	if _, err := UnmarshalNode(orig, CsumCRC32C, w); err != nil {
		t.Fatalf("old fsid with AltFSID: %v", err)
	}
	ResealNodeFSID(b, CsumCRC32C, [16]byte{0xcc})
	if _, err := UnmarshalNode(b, CsumCRC32C, w); !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrChecksum) {
		t.Fatalf("third fsid: %v", err)
	}
}

func TestNodeStructureCorruption(t *testing.T) {
	le := binary.LittleEndian
	item := func(i int) int { return NodeHeaderSize + i*LeafItemSize }
	ptr := func(i int) int { return NodeHeaderSize + i*KeyPtrSize }
	cases := []struct {
		name string
		node func() *Node
		cut  func(b []byte) // applied before resealing; nil = none
		want error          // besides ErrCorrupt; nil = none
	}{
		{"leaf keys out of order", func() *Node {
			n := testLeaf()
			n.Items[1], n.Items[2] = n.Items[2], n.Items[1]
			return n
		}, nil, nil},
		{"leaf duplicate key", func() *Node {
			n := testLeaf()
			n.Items[2].Key = n.Items[1].Key
			return n
		}, nil, nil},
		{"internal keys out of order", func() *Node {
			n := testInternal()
			n.Ptrs[0].Key = MaxKey
			return n
		}, nil, nil},
		{"internal null child", func() *Node {
			n := testInternal()
			n.Ptrs[1].Logical = 0
			return n
		}, nil, nil},
		{"internal without pointers", func() *Node {
			n := testInternal()
			n.Ptrs = nil
			return n
		}, nil, nil},
		{"level too deep", func() *Node {
			n := testInternal()
			n.Level = MaxLevel
			return n
		}, nil, nil},
		{"item data past node end", testLeaf, func(b []byte) { le.PutUint32(b[item(0)+KeySize:], 4096-10) }, nil},
		{"item size past node end", testLeaf, func(b []byte) { le.PutUint32(b[item(0)+KeySize+4:], 1<<20) }, nil},
		{"item data over item headers", testLeaf, func(b []byte) { le.PutUint32(b[item(4)+KeySize:], uint32(item(4))) }, nil},
		{"item data overlaps previous item", testLeaf, func(b []byte) { le.PutUint32(b[item(1)+KeySize:], le.Uint32(b[item(1)+KeySize:])+1) }, nil},
		{"item data not in item order", testLeaf, func(b []byte) {
			// Swap the data offsets of items 0 and 1: item 1's data now lies after item 0's.
			o0, o1 := le.Uint32(b[item(0)+KeySize:]), le.Uint32(b[item(1)+KeySize:])
			le.PutUint32(b[item(0)+KeySize:], o1)
			le.PutUint32(b[item(1)+KeySize:], o0)
		}, nil},
		{"too many items", testLeaf, func(b []byte) { le.PutUint32(b[72:], 200) }, nil},
		{"huge item count", testLeaf, func(b []byte) { le.PutUint32(b[72:], 0xffffffff) }, nil},
		{"too many pointers", testInternal, func(b []byte) { le.PutUint32(b[72:], 4096/KeyPtrSize) }, nil},
		{"pointer key order by surgery", testInternal, func(b []byte) { PutKey(b[ptr(2):], Key{}) }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.node()
			b := MarshalNode(n, 4096, CsumBLAKE3)
			if tc.cut != nil {
				tc.cut(b)
				reseal(b, CsumBLAKE3)
			}
			w := expectOf(n)
			w.Level = -1
			_, err := UnmarshalNode(b, CsumBLAKE3, w)
			if !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrChecksum) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("got %v, want a structural ErrCorrupt", err)
			}
		})
	}
	if _, err := UnmarshalNode(make([]byte, NodeHeaderSize), CsumCRC32C, NodeExpect{Level: -1}); !errors.Is(err, ErrShort) {
		t.Errorf("short node: %v", err)
	}
}

func TestNodeHelpers(t *testing.T) {
	l, in := testLeaf(), testInternal()
	if !l.IsLeaf() || in.IsLeaf() || l.NumItems() != 5 || in.NumItems() != 3 {
		t.Error("IsLeaf/NumItems")
	}
	if l.FirstKey() != l.Items[0].Key || in.FirstKey() != in.Ptrs[0].Key || (&Node{}).FirstKey() != (Key{}) {
		t.Error("FirstKey")
	}
	if in.UsedBytes() != 3*KeyPtrSize {
		t.Errorf("UsedBytes internal = %d", in.UsedBytes())
	}
}

// Decoded items share one copy of the node's data area; an append to one
// item's data must not write into the item stored before it.
func TestUnmarshalNodeItemsDoNotAlias(t *testing.T) {
	n := &Node{NodeHeader: NodeHeader{FSID: testFSID, Logical: 1 << 20, Generation: 3, Owner: FSTree}}
	n.Items = []Item{{Key: Key{ObjectID: 1}, Data: []byte("first")}, {Key: Key{ObjectID: 2}, Data: []byte("second")}}
	got, err := UnmarshalNode(MarshalNode(n, 4096, CsumCRC32C), CsumCRC32C, expectOf(n))
	if err != nil {
		t.Fatal(err)
	}
	for i := range got.Items {
		_ = append(got.Items[i].Data, "XXXXXXXXXXXX"...)
	}
	if string(got.Items[0].Data) != "first" || string(got.Items[1].Data) != "second" {
		t.Fatalf("items after appends: %q %q", got.Items[0].Data, got.Items[1].Data)
	}
}

// TestMarshalNodeToReusedBuffer: encoding into a buffer that held another
// node (or any bytes) gives exactly the bytes of a fresh encoding.
func TestMarshalNodeToReusedBuffer(t *testing.T) {
	for _, c := range allCsums {
		buf := bytes.Repeat([]byte{0xa5}, 16384)
		for _, n := range []*Node{testLeaf(), testInternal(), testLeaf()} {
			want := MarshalNode(n, 16384, c)
			if got := MarshalNodeTo(buf, n, c); !bytes.Equal(got, want) {
				t.Fatalf("%v level %d: reused buffer encodes differently", c, n.Level)
			}
		}
	}
}
