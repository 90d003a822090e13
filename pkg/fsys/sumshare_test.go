package fsys

import "testing"

// TestSumSharesBound: SumShares learns no more blocks than its memory
// bound holds, and keeps those it learned.
func TestSumSharesBound(t *testing.T) {
	s := NewSumShares(2 * sumShareBytes)
	for i := range 3 {
		s.learn([32]byte{byte(i)}, [32]byte{byte(i + 1)})
	}
	if s.Len() != 2 || s.m[[32]byte{1}] != [20]byte{2} {
		t.Fatalf("learned %d: %v", s.Len(), s.m)
	}
}
