// Package cdc cuts data into content-defined chunks with a gear rolling
// hash (as FastCDC): cut points depend on the bytes around them, not on
// their offset, so data shifted by a few bytes still cuts into the same
// chunks and dedupes.
package cdc

import "math/rand/v2"

// gear maps a byte to a random 64-bit value; fixed forever (FORMAT.md:
// the same input must always cut the same way).
var gear = func() (g [256]uint64) {
	r := rand.New(rand.NewPCG(0x64646673, 0x636463))
	for i := range g {
		g[i] = r.Uint64()
	}
	return g
}()

// Params are the chunk sizes: avg a power of two, min ≤ avg ≤ max.
type Params struct{ Min, Avg, Max int }

// ForAverage returns FastCDC's usual sizes around avg: avg/4 .. avg*4.
func ForAverage(avg int) Params { return Params{Min: avg / 4, Avg: avg, Max: avg * 4} }

// Cut returns the length of the first chunk of p (all of p if shorter
// than Max and no cut point is found).
func Cut(p []byte, c Params) int {
	if len(p) <= c.Min {
		return len(p)
	}
	n := min(len(p), c.Max)
	// Normalised chunking: a harder mask before the average size and an
	// easier one after it keep chunk sizes close to Avg.
	bits := 0
	for 1<<bits < c.Avg {
		bits++
	}
	hard := uint64(1)<<(bits+1) - 1
	easy := uint64(1)<<(max(bits-1, 1)) - 1
	var h uint64
	i := c.Min
	for ; i < min(n, c.Avg); i++ {
		h = h<<1 + gear[p[i]]
		if h&(hard<<(64-bits-1)) == 0 {
			return i + 1
		}
	}
	for ; i < n; i++ {
		h = h<<1 + gear[p[i]]
		if h&(easy<<(64-bits+1)) == 0 {
			return i + 1
		}
	}
	return n
}
