package store

import (
	"bytes"

	"github.com/ddfs/ddfs/format"
)

// readAhead holds the raw bytes, every copy, of the nodes after the last
// one read: a walk of a tree (du, ls -R, tar-out, cp out, fsck) mostly
// reads nodes laid out one after the other, and one device read of
// aheadNodes nodes costs about what one of a single node does (issue 16:
// du -s of 100k files made 4,000 reads, 57% of them of the very next
// node). Only read-only sets use it, so a node cannot be rewritten under
// the window. A node is served from it only when its copies are equal
// byte for byte and fit its place; any other is read again the slow way,
// which chooses and heals (readNodeHealing).
type readAhead struct {
	start uint64
	n     int      // bytes in the window
	bufs  [][]byte // per copy; nil while no window is held
}

const aheadNodes = 8

// aheadNode returns node p from the window, reading a new window when it
// is not there; nil when no window can serve it.
func (fs *FS) aheadNode(p Place, copies int) *format.Node {
	bufs := fs.aheadBytes(p.NodeExpect, copies)
	if bufs == nil {
		return nil
	}
	for _, b := range bufs[1:] {
		if !bytes.Equal(b, bufs[0]) {
			return nil
		}
	}
	n, err := checkPlace(bufs[0], fs.sb.CsumType, p)
	if err != nil {
		return nil
	}
	return n
}

// aheadBytes returns every copy of node want's bytes from the window.
func (fs *FS) aheadBytes(want format.NodeExpect, copies int) [][]byte {
	if fs.Vol.Writable() || want.Generation == 0 {
		return nil
	}
	ns := uint64(fs.sb.NodeSize)
	a := &fs.ahead
	if a.bufs == nil || len(a.bufs) != copies || want.Logical < a.start || want.Logical+ns > a.start+uint64(a.n) {
		if !fs.readWindow(want.Logical, copies) {
			return nil
		}
	}
	o := want.Logical - a.start
	out := make([][]byte, copies)
	for m, b := range a.bufs {
		out[m] = b[o : o+ns]
	}
	return out
}

// readWindow reads every copy of up to aheadNodes nodes from logical on;
// false (and no window) when a copy fails to read, e.g. a bad block
// further on or a missing device: single reads instead.
func (fs *FS) readWindow(logical uint64, copies int) bool {
	a := &fs.ahead
	a.bufs = a.bufs[:0]
	c, ok := fs.Vol.Chunks.Lookup(logical)
	if !ok {
		a.bufs = nil
		return false
	}
	ns := uint64(fs.sb.NodeSize)
	a.start, a.n = logical, int(min(aheadNodes*ns, c.End()-logical))
	for m := 0; m < copies; m++ {
		if len(a.bufs) < cap(a.bufs) {
			a.bufs = a.bufs[:m+1]
		} else {
			a.bufs = append(a.bufs, make([]byte, aheadNodes*ns))
		}
		if fs.Vol.ReadCopy(logical, a.bufs[m][:a.n], m) != nil {
			a.bufs = nil
			return false
		}
	}
	return true
}
