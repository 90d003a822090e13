package format

import (
	"bytes"
	"testing"
)

// TestRebuildDedupeItem: the item a writer makes for a block (hash of the
// block, its length) comes back from the stored data, padded or not, for
// either hash; other data gives nothing.
func TestRebuildDedupeItem(t *testing.T) {
	block := bytes.Repeat([]byte("ddfs block "), 1000) // 11000 bytes
	block = append(block, 0, 0, 0)                     // a block ending in zeros
	for _, algo := range []CsumType{CsumSHA256, CsumBLAKE3, CsumXXH3} {
		want := DedupeItem{Hash: DedupeHash(Checksum(algo, block)), Length: uint64(len(block)), HashAlgo: algo}
		prefix := DedupeHashPrefix(want.Hash)
		padded := append(bytes.Clone(block), make([]byte, 12288-len(block))...)
		for _, c := range []struct {
			data   []byte
			padded bool
		}{{block, false}, {padded, true}} {
			got, ok := RebuildDedupeItem(c.data, prefix, c.padded, CsumSHA256)
			if !ok || *got != want {
				t.Fatalf("algo %d padded %v: %+v %v, want %+v", algo, c.padded, got, ok, want)
			}
		}
		if _, ok := RebuildDedupeItem(padded, prefix, false, algo); ok {
			t.Fatal("padded data matched as a whole block")
		}
		changed := bytes.Clone(padded)
		changed[7] ^= 1
		if _, ok := RebuildDedupeItem(changed, prefix, true, algo); ok {
			t.Fatal("changed data matched")
		}
	}
}
