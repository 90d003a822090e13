package fsys

import "sync/atomic"

// ioAhead sizes an open file's windows as the kernel's readahead does:
// a read that continues the last one doubles the window, up to ioWindow;
// a seek collapses it to the aligned blocks the read needs, so random
// 4 KiB reads read about 4 KiB each (a 128 KiB window apiece made them
// read 32 times what they asked, issue 37). Racing ReadAt calls may
// size a window from each other's state: only the amount read ahead
// changes, never the bytes returned.
type ioAhead struct {
	next atomic.Int64 // where the last read ended
	size atomic.Int64 // the last window's size; 0 after a seek
}

const (
	// ioAlign aligns windows: a sector, what a read checks at least.
	ioAlign = 4 << 10
	// ioFirst is the first window of a sequential reader.
	ioFirst = 16 << 10
)

// window returns the file range [start, end) to read for n bytes at pos
// (a read continuing the last one when seq), within the file's size.
func (a *ioAhead) window(pos int64, n int, seq bool, size int64) (int64, int64) {
	start := pos / ioAlign * ioAlign
	end := (pos + int64(n) + ioAlign - 1) / ioAlign * ioAlign
	w := int64(0)
	if seq {
		w = min(max(2*a.size.Load(), ioFirst), ioWindow)
		end = max(end, start+w)
	}
	a.size.Store(w)
	return start, min(end, size)
}
