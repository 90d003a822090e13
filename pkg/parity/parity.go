// Package parity computes and uses the parity strips of raid5 and raid6
// rows (FORMAT.md §4.4 "Parity profiles"): P is the XOR of the data
// strips, Q (raid6) the sum of g^i·D_i over GF(2^8) with the polynomial
// x^8+x^4+x^3+x^2+1 and g = 2, as Linux md raid6. The SIMD arithmetic is
// klauspost/reedsolomon's, given exactly that matrix.
package parity

import (
	"fmt"
	"sync"

	"github.com/klauspost/reedsolomon"
)

// Code encodes and rebuilds the rows of one geometry: data strips and
// parity strips (1 or 2).
type Code struct {
	data, parity int
	enc          reedsolomon.Encoder
}

var codes sync.Map // [2]int{data, parity} → *Code

// For returns the code of rows with data data strips and parity parity
// strips (cached: building one inverts nothing, but costs allocations).
func For(data, parity int) (*Code, error) {
	if data < 1 || data+parity > 256 || parity < 1 || parity > 2 {
		return nil, fmt.Errorf("parity code with %d data and %d parity strips", data, parity)
	}
	k := [2]int{data, parity}
	if c, ok := codes.Load(k); ok {
		return c.(*Code), nil
	}
	enc, err := reedsolomon.New(data, parity, reedsolomon.WithCustomMatrix(Matrix(data, parity)))
	if err != nil {
		return nil, fmt.Errorf("parity code %d+%d: %w", data, parity, err)
	}
	c, _ := codes.LoadOrStore(k, &Code{data: data, parity: parity, enc: enc})
	return c.(*Code), nil
}

// Matrix is the parity rows of the code: P = all ones; Q = 2^i.
func Matrix(data, parity int) [][]byte {
	m := make([][]byte, parity)
	m[0] = make([]byte, data)
	for i := range m[0] {
		m[0][i] = 1
	}
	if parity == 2 {
		m[1] = make([]byte, data)
		g := byte(1)
		for i := range m[1] {
			m[1][i] = g
			g = mul2(g)
		}
	}
	return m
}

// mul2 multiplies by g = 2 in GF(2^8) mod 0x11d.
func mul2(b byte) byte {
	if b&0x80 != 0 {
		return b<<1 ^ 0x1d
	}
	return b << 1
}

// Encode fills the parity strips of shards (data strips first, then P,
// then Q; all the same length) from the data strips.
func (c *Code) Encode(shards [][]byte) error { return c.enc.Encode(shards) }

// Rebuild fills the strips of shards that are nil (at most parity of
// them) from the others. A nil parity strip is rebuilt too.
func (c *Code) Rebuild(shards [][]byte) error { return c.enc.Reconstruct(shards) }

// RebuildData is Rebuild for the data strips alone: a missing parity
// strip stays missing (a read needs no parity back).
func (c *Code) RebuildData(shards [][]byte) error { return c.enc.ReconstructData(shards) }

// Data and Parity are the code's strip counts.
func (c *Code) Data() int   { return c.data }
func (c *Code) Parity() int { return c.parity }
