package device

import "testing"

func TestCounting(t *testing.T) {
	c := NewCounting(NewMemDevice("m", 1<<20))
	buf := make([]byte, 4096)
	c.WriteAt(buf, 0)
	c.WriteAt(buf, 4096)  // sequential: no seek
	c.WriteAt(buf, 65536) // seek
	c.ReadAt(buf, 0)      // seek
	c.Flush()
	c.Discard(0, 8192)
	s := c.Stats()
	want := Stats{Reads: 1, ReadBytes: 4096, Writes: 3, WriteBytes: 12288, Flushes: 1, Discards: 1, DiscardBytes: 8192, Seeks: 2}
	if s != want {
		t.Fatalf("got %+v, want %+v", s, want)
	}
	if got := s.ModeledSeconds(100, 1<<20); got < 0.03562 || got > 0.03563 { // 2/100 s + 16 KiB at 1 MiB/s
		t.Fatalf("modeled %v", got)
	}
}
