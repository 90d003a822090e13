package mkfs

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"github.com/ddfs/ddfs/format"
)

// ParseCompression parses "zstd", "zstd:3", "s2" or "none".
func ParseCompression(v string) (format.Compression, uint8, error) {
	name, lv, hasLevel := strings.Cut(v, ":")
	switch name {
	case "none", "off":
		return format.CompressNone, 0, nil
	case "s2":
		if hasLevel {
			return 0, 0, fmt.Errorf("compression %q: s2 has no level", v)
		}
		return format.CompressS2, 0, nil
	case "zstd":
		level := 3
		if hasLevel {
			n, err := strconv.Atoi(lv)
			if err != nil || n < 1 || n > 19 {
				return 0, 0, fmt.Errorf("compression %q: zstd level 1..19", v)
			}
			level = n
		}
		return format.CompressZstd, uint8(level), nil
	}
	return 0, 0, fmt.Errorf("unknown compression %q (want zstd[:LEVEL], s2 or none)", v)
}

// DedupeBlockLog2 checks a dedupe block size: a power of two, 4 KiB..8 MiB.
func DedupeBlockLog2(size uint64) (uint8, error) {
	if size < 4<<10 || size > 8<<20 || size&(size-1) != 0 {
		return 0, fmt.Errorf("dedupe block %d: a power of two from 4K to 8M", size)
	}
	return uint8(bits.TrailingZeros64(size)), nil
}

// ParseDedupeHash accepts xxh3, blake3 and sha256.
func ParseDedupeHash(v string) (format.CsumType, error) {
	switch v {
	case "sha256":
		return format.CsumSHA256, nil
	case "blake3":
		return format.CsumBLAKE3, nil
	case "xxh3":
		return format.CsumXXH3, nil
	}
	return 0, fmt.Errorf("dedupe hash %q: want xxh3, blake3 or sha256", v)
}

// DefaultDedupeHash is the dedupe hash of new images and of dedupe-tool
// enable on an image that never had one. xxh3 costs a twentieth of
// blake3's CPU on unique data; a match is proven by its entry's strong
// tail (BLAKE3, added while commits wait for the devices: all of them on
// a slow device) or else read back and compared, which on the fast
// devices that leave no time for tails is cheap (README, "Which hash").
const DefaultDedupeHash = format.CsumXXH3
