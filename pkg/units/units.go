// Package units parses and prints byte sizes the way storage tools do:
// binary suffixes K, M, G, T, P, E (optionally followed by "iB" or "B").
package units

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

var suffixes = []string{"", "K", "M", "G", "T", "P", "E"}

// ParseSize parses "4096", "64K", "1.5G", "1TiB". Suffixes are powers of 1024.
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
	if v, err := strconv.ParseUint(t, 10, 64); err == nil {
		if shift > 0 && bits.LeadingZeros64(v) < shift {
			return 0, fmt.Errorf("size %q is too large", s)
		}
		return v << shift, nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("invalid size %q (want a number with an optional K, M, G, T suffix)", s)
	}
	v := f * float64(uint64(1)<<shift)
	if v >= 1<<64 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return uint64(v), nil
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
