package fsys

// aheadRing is BlockAhead's memory: one buffer handed out in pieces in
// the order blocks are planned, and taken back as they are taken or
// dropped. A piece is as big as its block's data and sums, so a run of
// small files has hundreds of blocks read ahead where block-sized
// buffers held six, in the same memory. Pieces come back almost in order
// (a block the reader still holds when dropped comes back later): the
// space is reused from the oldest piece still out, so one late piece
// holds back only what was handed out after it, never more than the
// buffer. Used by the FS goroutine only.
type aheadRing struct {
	mem        []byte
	out        []*ringPiece // handed out, oldest first
	head, tail int          // space in use: [head, tail), or wrapped [head, len) + [0, tail)
}

// ringPiece is one piece of the ring: mem[start:end].
type ringPiece struct {
	start, end int
	back       bool // given back, waiting for the pieces before it
}

func newAheadRing(size int) *aheadRing { return &aheadRing{mem: make([]byte, size)} }

// get hands out n bytes, nil when they do not fit now.
func (r *aheadRing) get(n int) (*ringPiece, []byte) {
	if n <= 0 || n > len(r.mem) {
		return nil, nil
	}
	if len(r.out) == 0 {
		r.head, r.tail = 0, 0
	}
	var start int
	switch {
	case r.tail >= r.head && len(r.out) == 0, r.tail > r.head:
		// Free space: [tail, len) and [0, head).
		if r.tail+n <= len(r.mem) {
			start = r.tail
		} else if n <= r.head {
			start = 0 // the end's remnant stays unused until head passes it
		} else {
			return nil, nil
		}
	default: // wrapped (or full: tail == head with pieces out)
		if r.tail+n > r.head {
			return nil, nil
		}
		start = r.tail
	}
	p := &ringPiece{start: start, end: start + n}
	r.out = append(r.out, p)
	r.tail = p.end
	return p, r.mem[p.start:p.end:p.end]
}

// put gives p back; its space is reused once every piece handed out
// before it is back too.
func (r *aheadRing) put(p *ringPiece) {
	p.back = true
	for len(r.out) > 0 && r.out[0].back {
		r.out[0] = nil
		r.out = r.out[1:]
	}
	if len(r.out) > 0 {
		r.head = r.out[0].start
	}
}

// free is how many bytes could be handed out in one piece now, at most.
func (r *aheadRing) free() int {
	switch {
	case len(r.out) == 0:
		return len(r.mem)
	case r.tail > r.head:
		return max(len(r.mem)-r.tail, r.head)
	default:
		return r.head - r.tail
	}
}
