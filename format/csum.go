package format

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/cespare/xxhash/v2"
	"github.com/zeebo/blake3"
	"github.com/zeebo/xxh3"
)

// CsumType selects the checksum algorithm of metadata and data (FORMAT.md
// §3 "Checksums"). The checksum field is always CsumSize bytes; shorter
// sums are stored little-endian at its start and the rest is zero.
type CsumType uint16

const (
	CsumCRC32C   CsumType = 0
	CsumXXHash64 CsumType = 1
	CsumSHA256   CsumType = 2
	CsumBLAKE3   CsumType = 3
	// CsumXXH3 is XXH3-128: a dedupe hash only (dedupe_hash, hash_algo;
	// FORMAT.md §3.2, §6.8), never a csum_type. It is not collision
	// resistant, so a writer byte-compares a block with its match before
	// sharing it; in exchange it costs a twentieth of blake3's CPU.
	CsumXXH3 CsumType = 4
)

// CsumSize is the size of every checksum field.
const CsumSize = 32

var crcTable = crc32.MakeTable(crc32.Castagnoli)

var csumNames = map[CsumType]string{
	CsumCRC32C: "crc32c", CsumXXHash64: "xxhash64", CsumSHA256: "sha256", CsumBLAKE3: "blake3",
}

func (c CsumType) String() string {
	if n, ok := csumNames[c]; ok {
		return n
	}
	if c == CsumXXH3 {
		return "xxh3"
	}
	return fmt.Sprintf("csum(%d)", uint16(c))
}

// Valid reports whether c is a known csum_type (xxh3 is not one).
func (c CsumType) Valid() bool { _, ok := csumNames[c]; return ok }

// ValidDedupeHash reports whether c may hash dedupe blocks (§3.2, §6.8):
// sha256, blake3 or xxh3.
func (c CsumType) ValidDedupeHash() bool {
	return c == CsumSHA256 || c == CsumBLAKE3 || c == CsumXXH3
}

// Len is the number of meaningful bytes of a checksum of this type.
func (c CsumType) Len() int {
	switch c {
	case CsumCRC32C:
		return 4
	case CsumXXHash64:
		return 8
	case CsumXXH3:
		return 16
	default:
		return 32
	}
}

// Strong reports whether c is collision resistant (sha256, blake3): equal
// sums of two sectors then mean equal bytes, so a stored sum may stand in
// for the sector's data (FORMAT.md §3.5). crc32c and xxhash64 only detect
// damage; equal sums of theirs say nothing.
func (c CsumType) Strong() bool { return c == CsumSHA256 || c == CsumBLAKE3 }

// ParseCsumType maps a name (as printed by String) to its type.
func ParseCsumType(name string) (CsumType, error) {
	for t, n := range csumNames {
		if n == name {
			return t, nil
		}
	}
	return 0, fmt.Errorf("unknown checksum algorithm %q (want crc32c, xxhash64, sha256 or blake3)", name)
}

// Checksum computes the checksum of data into a CsumSize array.
func Checksum(c CsumType, data []byte) [CsumSize]byte {
	var out [CsumSize]byte
	switch c {
	case CsumCRC32C:
		binary.LittleEndian.PutUint32(out[:], crc32.Checksum(data, crcTable))
	case CsumXXHash64:
		binary.LittleEndian.PutUint64(out[:], xxhash.Sum64(data))
	case CsumSHA256:
		out = sha256.Sum256(data)
	case CsumBLAKE3:
		out = blake3.Sum256(data)
	case CsumXXH3:
		h := xxh3.Hash128(data)
		binary.BigEndian.PutUint64(out[0:], h.Hi) // XXH128's canonical form
		binary.BigEndian.PutUint64(out[8:], h.Lo)
	}
	return out
}
