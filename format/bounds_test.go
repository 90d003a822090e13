package format

import (
	"errors"
	"fmt"
	"testing"
)

// TestSuperblockSettingsBounds: each settings byte is accepted at its
// largest (and smallest) valid value and refused one past it (FORMAT.md
// §3.2), so an off-by-one in the validation shows.
func TestSuperblockSettingsBounds(t *testing.T) {
	base, err := MarshalSuperblock(exampleSuperblock())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		off       int
		ok, wrong byte
	}{
		{sbDiscard, byte(DiscardAsync), byte(DiscardAsync) + 1},
		{sbChunking, 1, 2},
		{sbVerify, 1, 2},
		{sbDedupe, 1, 2},
		{sbDedupeLog2, 12, 11},
		{sbDedupeLog2, 23, 24},
		{sbCompress, byte(CompressS2), byte(CompressS2) + 1},
		{sbCompLevel, 19, 20},
		{sbDedupeHash, byte(CsumBLAKE3), byte(CsumXXH3) + 1},
		{sbDedupeHash, byte(CsumXXH3), byte(CsumCRC32C) + 1},
		{sbDedupeHash, byte(CsumSHA256), byte(CsumSHA256) - 1},
		{sbDedupeHash, 0, 0xff},
	} {
		t.Run(fmt.Sprintf("offset%d=%d", tc.off, tc.wrong), func(t *testing.T) {
			for _, v := range []byte{tc.ok, tc.wrong} {
				b := append([]byte(nil), base...)
				b[tc.off] = v
				reseal(b, CsumCRC32C)
				_, err := UnmarshalSuperblock(b)
				if v == tc.ok && err != nil {
					t.Fatalf("valid %d refused: %v", v, err)
				}
				if v == tc.wrong && !errors.Is(err, ErrCorrupt) {
					t.Fatalf("invalid %d: %v, want ErrCorrupt", v, err)
				}
			}
		})
	}
}

// TestNodeItemBounds: item data may end exactly at the node's end and
// start exactly after the item headers; one byte further is corrupt.
func TestNodeItemBounds(t *testing.T) {
	const ns = 4096
	n := &Node{NodeHeader: NodeHeader{Logical: 1 << 20, Generation: 1, Owner: FSTree}}
	n.Items = []Item{{Key: Key{1, 1, 0}, Data: make([]byte, MaxItemData(ns))}}
	b := MarshalNode(n, ns, CsumCRC32C)
	want := NodeExpect{Logical: 1 << 20, Level: -1}
	if _, err := UnmarshalNode(b, CsumCRC32C, want); err != nil {
		t.Fatalf("a full leaf: %v", err)
	}
	o := NodeHeaderSize + KeySize
	for name, patch := range map[string]func(b []byte){
		"data past the end":          func(b []byte) { le32(b[o:], le32get(b[o:])+1) },
		"data into the item headers": func(b []byte) { le32(b[o:], le32get(b[o:])-1); le32(b[o+4:], le32get(b[o+4:])+1) },
		"size past the end":          func(b []byte) { le32(b[o+4:], le32get(b[o+4:])+1) },
	} {
		c := append([]byte(nil), b...)
		patch(c)
		reseal(c, CsumCRC32C)
		if _, err := UnmarshalNode(c, CsumCRC32C, want); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}

func le32(b []byte, v uint32) { b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24) }
func le32get(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
