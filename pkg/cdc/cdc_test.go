package cdc

import (
	"math/rand/v2"
	"testing"
)

func chunks(p []byte, c Params) map[string]bool {
	out := map[string]bool{}
	for len(p) > 0 {
		n := Cut(p, c)
		out[string(p[:n])] = true
		p = p[n:]
	}
	return out
}

func TestShiftedDataDedupes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	data := make([]byte, 8<<20)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	c := ForAverage(64 << 10)
	a := chunks(data, c)
	b := chunks(append([]byte{42}, data...), c)
	shared := 0
	for k := range b {
		if a[k] {
			shared++
		}
	}
	if shared < len(b)*9/10 {
		t.Fatalf("1-byte shift: %d of %d chunks shared", shared, len(b))
	}
	// Sizes stay within bounds and near the average.
	total, n := 0, 0
	for k := range a {
		if len(k) > c.Max || (len(k) < c.Min && len(k) != len(data)%c.Max) {
			t.Fatalf("chunk of %d bytes", len(k))
		}
		total += len(k)
		n++
	}
	if avg := total / n; avg < c.Avg/2 || avg > c.Avg*2 {
		t.Fatalf("average chunk %d for target %d", avg, c.Avg)
	}
}
