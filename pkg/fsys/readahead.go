package fsys

// dataAhead reads ahead of sequential data reads of a read-only set: a
// tree walk (tar-out, cp out, diff) reads files that lie one after the
// other on the device, so one 1 MiB read serves many of them (issue 16:
// tar-out of the Go tree made 6,600 reads), and a file read in small
// pieces (a mount's 128 KiB requests) reads its extents in order. A
// random read reads only its own sectors: a window read for each made a
// mount read 1 MiB of image per random 4 KiB request (issue 37).
//
// Streams are found by where reads land on the device, as the kernel's
// readahead finds them in a file: a read starting where one stream's
// last read ended (or a little after) continues it and doubles its
// window, up to dataAheadSize; any other read is a seek and starts a
// stream with no window. A few streams at once (several open files)
// keep their own windows. What a window serves is checked against the
// csum tree by readVerified like any read; nothing writes a read-only
// set, so a window cannot go stale.
type dataAhead struct {
	streams [aheadStreams]aheadStream
	clock   uint64 // stamps the streams' uses, for replacing the oldest
}

// aheadStream is one sequential reader's state.
type aheadStream struct {
	start uint64 // logical of buf[0]
	buf   []byte // the window; empty when none is held
	next  uint64 // where the stream's last read ended
	size  uint64 // the next window's size; 0 after a seek
	used  uint64 // dataAhead.clock at the last use
	space []byte // buf's allocation, kept across seeks
}

const (
	dataAheadSize = 1 << 20
	// aheadStreams is how many sequential readers keep their windows.
	aheadStreams = 4
	// aheadFirst is the first window of a stream: small, as a random
	// read that happens to land just after another pays for it.
	aheadFirst = 64 << 10
	// aheadGap is how far past a stream's end a read still continues it:
	// a walk skips files kept inline or elsewhere.
	aheadGap = 64 << 10
)

// readAhead fills buf (at logical, first copy) from a stream's window,
// reading a new window when the read continues a stream; false when a
// plain read should do it.
func (f *FS) readAhead(logical uint64, buf []byte) bool {
	if f.st.Vol.Writable() || len(buf) > dataAheadSize/4 {
		return false
	}
	a := &f.dahead
	a.clock++
	n := uint64(len(buf))
	s := a.find(logical, n)
	s.used = a.clock
	if len(s.buf) == 0 || logical < s.start || logical+n > s.start+uint64(len(s.buf)) {
		if s.size == 0 || !f.fillWindow(s, logical, n) {
			s.next = logical + n
			return false
		}
	}
	copy(buf, s.buf[logical-s.start:])
	s.next = logical + n
	return true
}

// find returns the stream whose window holds [logical, logical+n), or
// the one the read continues (its window grown); else the least
// recently used stream, reset (a seek).
func (a *dataAhead) find(logical, n uint64) *aheadStream {
	for i := range a.streams {
		if s := &a.streams[i]; len(s.buf) > 0 && logical >= s.start && logical+n <= s.start+uint64(len(s.buf)) {
			return s
		}
	}
	old := &a.streams[0]
	for i := range a.streams {
		s := &a.streams[i]
		if s.used > 0 && logical >= s.next && logical <= s.next+aheadGap {
			s.size = min(max(2*s.size, aheadFirst), dataAheadSize)
			return s
		}
		if s.used < old.used {
			old = s
		}
	}
	old.buf, old.size = nil, 0
	return old
}

// fillWindow reads s's next window from logical (at least n bytes, not
// past the chunk); false when it cannot.
func (f *FS) fillWindow(s *aheadStream, logical, n uint64) bool {
	c, ok := f.st.Vol.Chunks.Lookup(logical)
	if !ok || c.End()-logical < n {
		return false
	}
	if s.space == nil {
		s.space = make([]byte, dataAheadSize)
	}
	s.start, s.buf = logical, s.space[:min(max(s.size, n), c.End()-logical)]
	if f.st.Vol.ReadCopy(logical, s.buf, 0) != nil {
		s.buf, s.size = nil, 0 // a bad block nearby: plain reads, with their fallbacks
		return false
	}
	return true
}
