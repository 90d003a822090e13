// Package zeros tells runs of zero bytes apart (holes a writer leaves
// out, discards, NBD write-zeroes) and supplies them, one helper for the
// packages that used to keep their own.
package zeros

import "bytes"

// BlockSize is the most Block returns.
const BlockSize = 64 << 10

// block is zeros: bytes.Equal against it runs at memory speed, several
// times a byte loop's.
var block = make([]byte, BlockSize)

// Is reports whether b holds only zero bytes.
func Is(b []byte) bool {
	for len(b) > 0 {
		n := min(len(b), len(block))
		if !bytes.Equal(b[:n], block[:n]) {
			return false
		}
		b = b[n:]
	}
	return true
}

// Block returns n zero bytes, n at most 64 KiB (padding, holes written
// out). The slice is shared: callers only read it.
func Block(n int) []byte { return block[:n:n] }
