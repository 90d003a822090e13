// Package units parses and prints byte sizes the way storage tools do:
// binary suffixes K, M, G, T, P, E (optionally followed by "iB" or "B").
package units

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

var suffixes = []string{"", "K", "M", "G", "T", "P", "E"}

// MaxSize is the largest size ParseSize takes: file sizes and offsets
// are int64 (off_t), and every size the tools take names bytes of a file
// or a device.
const MaxSize = math.MaxInt64

// ParseSize parses "4096", "64K", "1.5G", "1TiB". Suffixes are powers of
// 1024. A size past MaxSize is refused as too large, never wrapped.
func ParseSize(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "i")
	shift := 0
	if n := len(t); n > 0 {
		for i, suf := range suffixes[1:] {
			if strings.EqualFold(t[n-1:], suf) {
				shift = 10 * (i + 1)
				t = t[:n-1]
				break
			}
		}
	}
	if t == "" {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	tooLarge := func() error {
		return fmt.Errorf("size %q is too large (the limit is %d bytes, 8E - 1)", s, uint64(MaxSize))
	}
	if v, err := strconv.ParseUint(t, 10, 64); err == nil {
		if bits.LeadingZeros64(v) < shift || v<<shift > MaxSize {
			return 0, tooLarge()
		}
		return v << shift, nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || !(f >= 0) { // !(f >= 0): NaN too
		return 0, fmt.Errorf("invalid size %q (want a number with an optional K, M, G, T suffix)", s)
	}
	// float64(MaxSize) rounds up to 2^63: v below it fits.
	if v := f * float64(uint64(1)<<shift); v < float64(MaxSize) {
		return uint64(v), nil
	}
	return 0, tooLarge()
}

// Human prints n with a binary suffix and two decimals: "1.00GiB".
func Human(n uint64) string {
	if n < 1024 {
		return fmt.Sprintf("%dB", n)
	}
	f := float64(n)
	i := 0
	for f >= 1024 && i < len(suffixes)-1 {
		f /= 1024
		i++
	}
	return fmt.Sprintf("%.2f%siB", f, suffixes[i])
}

// Short prints n as coreutils' -h does (ls -lh, du -h, df -h): powers of
// 1024 with a one-letter suffix, one decimal below 10, rounded up:
// 1023, 1.0K, 1.1K (1025), 10K, 11K (10241), 4.8M.
func Short(n uint64) string {
	if n < 1024 {
		return strconv.FormatUint(n, 10)
	}
	unit, i := uint64(1024), 1
	for n/unit >= 1024 && i < len(suffixes)-1 {
		unit <<= 10
		i++
	}
	// Tenths of the unit rounded up, in integers (exact for any n).
	q, r := n/unit, n%unit
	if tenths := q*10 + (r*10+unit-1)/unit; tenths < 100 {
		return fmt.Sprintf("%d.%d%s", tenths/10, tenths%10, suffixes[i])
	}
	whole := q
	if r != 0 {
		whole++
	}
	if whole >= 1024 && i < len(suffixes)-1 {
		return "1.0" + suffixes[i+1]
	}
	return fmt.Sprintf("%d%s", whole, suffixes[i])
}

// SatAdd is a + b, or the largest uint64 when that wraps: totals of
// sizes a crafted image claims (five files of 2^62 bytes) must not wrap
// to a small number.
func SatAdd(a, b uint64) uint64 {
	s, carry := bits.Add64(a, b, 0)
	if carry != 0 {
		return ^uint64(0)
	}
	return s
}
