package zeros

import "testing"

// TestIs: every length around the block size, zero and with one byte set
// at the start, in the middle and at the end (a check that stops at the
// first block or skips the tail fails).
func TestIs(t *testing.T) {
	for _, n := range []int{0, 1, 4095, 64 << 10, 64<<10 + 1, 200 << 10} {
		b := make([]byte, n)
		if !Is(b) {
			t.Fatalf("%d zeros: not zero", n)
		}
		for _, at := range []int{0, n / 2, n - 1} {
			if n == 0 {
				continue
			}
			b[at] = 1
			if Is(b) {
				t.Fatalf("%d bytes, byte %d set: zero", n, at)
			}
			b[at] = 0
		}
	}
	if len(Block(512)) != 512 || !Is(Block(64<<10)) {
		t.Fatal("Block")
	}
}
