package fsys

// dataAhead holds the bytes after the last small data read of a
// read-only set: a tree walk (tar-out, cp out, diff) reads the files one
// after the other, and they lie one after the other on the device, so
// one 1 MiB read serves many files (issue 16: tar-out of the Go tree
// made 6,600 reads). What it serves is checked against the csum tree by
// readVerified like any read; nothing writes a read-only set, so the
// window cannot go stale.
type dataAhead struct {
	start uint64
	buf   []byte
}

const dataAheadSize = 1 << 20

// readAhead fills buf (at logical, first copy) from the window, reading
// a new window when needed; false when a plain read should do it.
func (f *FS) readAhead(logical uint64, buf []byte) bool {
	a := &f.dahead
	if f.st.Vol.Writable() || len(buf) > dataAheadSize/4 {
		return false
	}
	n := uint64(len(buf))
	if a.buf == nil || logical < a.start || logical+n > a.start+uint64(len(a.buf)) {
		c, ok := f.st.Vol.Chunks.Lookup(logical)
		if !ok || c.End()-logical < n {
			return false
		}
		if a.buf == nil {
			a.buf = make([]byte, dataAheadSize)
		}
		a.start, a.buf = logical, a.buf[:min(dataAheadSize, c.End()-logical)]
		if f.st.Vol.ReadCopy(logical, a.buf, 0) != nil {
			a.buf = nil // a bad block nearby: plain reads, with their fallbacks
			return false
		}
	}
	copy(buf, a.buf[logical-a.start:])
	return true
}
