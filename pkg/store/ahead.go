package store

import "github.com/ddfs/ddfs/format"

// readAhead holds the raw bytes of the nodes after the last one read from
// the first copy: a walk of a tree (du, ls -R, tar-out, cp out, fsck)
// mostly reads nodes laid out one after the other, and one device read of
// aheadNodes nodes costs about what one of a single node does (issue 16:
// du -s of 100k files made 4,000 reads, 57% of them of the very next
// node). Only read-only sets use it, so a node cannot be rewritten under
// the window; every node taken from it is still checked in full by
// UnmarshalNode, and one that fails is read again.
type readAhead struct {
	start uint64
	buf   []byte
}

const aheadNodes = 8

// aheadNode returns the bytes of node want from the window, reading a
// new window when it is not there; nil when no window can serve it.
func (fs *FS) aheadNode(want format.NodeExpect) []byte {
	if fs.Vol.Writable() || want.Generation == 0 {
		return nil
	}
	ns := uint64(fs.sb.NodeSize)
	a := &fs.ahead
	if want.Logical >= a.start && want.Logical+ns <= a.start+uint64(len(a.buf)) && a.buf != nil {
		o := want.Logical - a.start
		return a.buf[o : o+ns]
	}
	c, ok := fs.Vol.Chunks.Lookup(want.Logical)
	if !ok {
		return nil
	}
	n := min(aheadNodes*ns, c.End()-want.Logical)
	if cap(a.buf) < int(aheadNodes*ns) {
		a.buf = make([]byte, aheadNodes*ns)
	}
	a.start, a.buf = want.Logical, a.buf[:n]
	if fs.Vol.ReadCopy(want.Logical, a.buf, 0) != nil {
		a.buf = nil // e.g. a bad block further on: single reads instead
		return nil
	}
	return a.buf[:ns]
}
