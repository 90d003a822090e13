package format

// maxPaddingTries bounds the block lengths RebuildDedupeItem tries inside
// an uncompressed extent's last sector (§6.8, rebuilding an entry).
const maxPaddingTries = 64

// RebuildDedupeItem derives the DEDUPE_ITEM of a deduped extent from the
// extent's data and the hash prefix its EXTENT_ITEM records (FORMAT.md
// §6.8, rebuilding an entry). data is the decompressed data of a
// compressed extent (exactly the block), or the whole sector-padded data
// of an uncompressed one (padded): the block is then data or a prefix of
// it whose cut tail is zero. The hash is sha256, blake3 or xxh3, prefer first;
// false when no length and hash give the prefix (the data changed or was
// damaged).
func RebuildDedupeItem(data []byte, prefix uint64, padded bool, prefer CsumType) (*DedupeItem, bool) {
	if len(data) == 0 || len(data) > maxDedupeBlock {
		return nil, false
	}
	algos := []CsumType{CsumSHA256, CsumBLAKE3, CsumXXH3}
	for i, a := range algos {
		if a == prefer {
			algos[0], algos[i] = algos[i], algos[0]
		}
	}
	try := func(n int) (*DedupeItem, bool) {
		for _, a := range algos {
			if h := DedupeHash(Checksum(a, data[:n])); DedupeHashPrefix(h) == prefix {
				return &DedupeItem{Hash: h, Length: uint64(n), HashAlgo: a}, true
			}
		}
		return nil, false
	}
	if d, ok := try(len(data)); ok || !padded {
		return d, ok
	}
	last := len(data) - 1
	for last >= 0 && data[last] == 0 {
		last--
	}
	for n := last + 1; n < len(data) && n <= last+maxPaddingTries; n++ {
		if n > 0 {
			if d, ok := try(n); ok {
				return d, true
			}
		}
	}
	return nil, false
}
