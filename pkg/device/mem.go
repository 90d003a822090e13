package device

import (
	"math/rand/v2"
	"sync"
)

const (
	memPageSize = 4096
	// atomicWriteSize is the unit a torn write is cut at: a device
	// persists an aligned 4 KiB block whole or not at all (4Kn disks, the
	// NVMe atomic write unit; btrfs makes the same assumption for its 4 KiB
	// superblock). Only a longer write can be torn, between such blocks.
	atomicWriteSize = 4096
)

// MemDevice is a sparse in-memory device for tests, with crash simulation.
// Writes land in a volatile layer that reads see at once; Flush makes them
// durable; Crash and CrashPartial throw away what a power cut would lose.
// Only written pages take memory, so a 1 TiB MemDevice is free.
//
// Close does nothing, so a test can "reopen" the same MemDevice; it does
// not flush either, exactly like closing a file without fsync.
type MemDevice struct {
	mu      sync.Mutex
	name    string
	size    int64
	cur     pages // durable state plus pending, what reads see
	durable pages
	pending []memOp // unflushed writes and discards, in issue order
}

var _ Device = (*MemDevice)(nil)

type memOp struct {
	off     int64
	data    []byte // private copy; nil for a discard
	n       int64
	discard bool
}

// NewMemDevice returns an all-zero device of size bytes.
func NewMemDevice(name string, size int64) *MemDevice {
	return &MemDevice{name: name, size: max(size, 0), cur: pages{}, durable: pages{}}
}

func (m *MemDevice) ReadAt(p []byte, off int64) (int, error) {
	n, eof := clipRead(m.name, off, len(p), m.size)
	if n == 0 {
		return 0, eof
	}
	m.mu.Lock()
	m.cur.read(p[:n], off)
	m.mu.Unlock()
	return n, eof
}

func (m *MemDevice) WriteAt(p []byte, off int64) (int, error) {
	if err := checkRange("write", m.name, off, int64(len(p)), m.size); err != nil {
		return 0, err
	}
	op := memOp{off: off, data: append([]byte(nil), p...), n: int64(len(p))}
	m.mu.Lock()
	m.cur.apply(op)
	m.pending = append(m.pending, op)
	m.mu.Unlock()
	return len(p), nil
}

// Discard zeroes the range (volatile until Flush, like a write).
func (m *MemDevice) Discard(off, length int64) error {
	if err := checkRange("discard", m.name, off, length, m.size); err != nil {
		return err
	}
	op := memOp{off: off, n: length, discard: true}
	m.mu.Lock()
	m.cur.apply(op)
	m.pending = append(m.pending, op)
	m.mu.Unlock()
	return nil
}

// Flush makes every write so far durable.
func (m *MemDevice) Flush() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, op := range m.pending {
		m.durable.apply(op)
	}
	m.pending = nil
	return nil
}

// Crash drops every unflushed write: the device is back at its last
// durable state, as after a power cut with a volatile disk cache.
func (m *MemDevice) Crash() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pending = nil
	m.cur = m.durable.clone()
}

// CrashPartial is a power cut where the disk had already persisted a random
// subset of the unflushed writes (disks reorder within a flush epoch). The
// last persisted write may be torn: only a prefix of its 4 KiB blocks
// (atomicWriteSize) made it.
func (m *MemDevice) CrashPartial(rng *rand.Rand) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var kept []memOp
	for _, op := range m.pending {
		if rng.IntN(2) == 1 {
			kept = append(kept, op)
		}
	}
	if len(kept) > 0 {
		last := &kept[len(kept)-1]
		*last = tear(*last, rng)
	}
	for _, op := range kept {
		m.durable.apply(op)
	}
	m.pending = nil
	m.cur = m.durable.clone()
}

// tear keeps a random non-empty prefix of op, cut at an absolute
// atomicWriteSize boundary.
func tear(op memOp, rng *rand.Rand) memOp {
	if op.discard {
		return op
	}
	first := (op.off/atomicWriteSize + 1) * atomicWriteSize // first boundary inside
	end := op.off + op.n
	if first >= end {
		return op
	}
	cuts := (end-first+atomicWriteSize-1)/atomicWriteSize + 1 // boundaries plus "all"
	k := rng.Int64N(cuts)
	cut := min(first+k*atomicWriteSize, end)
	op.n = cut - op.off
	op.data = op.data[:op.n]
	return op
}

// Snapshot returns a new MemDevice holding this one's durable state.
func (m *MemDevice) Snapshot() *MemDevice {
	m.mu.Lock()
	defer m.mu.Unlock()
	return &MemDevice{name: m.name, size: m.size, cur: m.durable.clone(), durable: m.durable.clone()}
}

// Unflushed returns how many writes and discards a crash would lose.
func (m *MemDevice) Unflushed() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.pending)
}

func (m *MemDevice) Size() int64  { return m.size }
func (m *MemDevice) Close() error { return nil }
func (m *MemDevice) Name() string { return m.name }

// pages is a sparse byte store; a missing page reads as zeros.
type pages map[int64]*[memPageSize]byte

func (ps pages) apply(op memOp) {
	for done := int64(0); done < op.n; {
		pos := op.off + done
		idx, in := pos/memPageSize, pos%memPageSize
		l := min(op.n-done, memPageSize-in)
		pg := ps[idx]
		switch {
		case op.discard && l == memPageSize:
			delete(ps, idx)
		case op.discard:
			if pg != nil {
				clear(pg[in : in+l])
			}
		default:
			if pg == nil {
				pg = new([memPageSize]byte)
				ps[idx] = pg
			}
			copy(pg[in:in+l], op.data[done:done+l])
		}
		done += l
	}
}

func (ps pages) read(p []byte, off int64) {
	for done := 0; done < len(p); {
		pos := off + int64(done)
		idx, in := pos/memPageSize, pos%memPageSize
		l := min(len(p)-done, memPageSize-int(in))
		if pg := ps[idx]; pg != nil {
			copy(p[done:done+l], pg[in:])
		} else {
			clear(p[done : done+l])
		}
		done += l
	}
}

func (ps pages) clone() pages {
	c := make(pages, len(ps))
	for k, pg := range ps {
		cp := *pg
		c[k] = &cp
	}
	return c
}
