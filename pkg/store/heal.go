package store

import (
	"fmt"
	"sync"

	"github.com/ddfs/ddfs/format"
)

// Heal is one bad copy a read met while a good copy served the data
// (self-healing read, as ZFS and btrfs do).
type Heal struct {
	Logical  uint64 // first byte of the bad range
	Len      int
	Copy     int // 0-based copy number, as volume.ReadCopy numbers them
	DevID    uint64
	Path     string
	Metadata bool  // a tree node (else file data)
	Cause    error // why the copy was bad (checksum, I/O)
	// Repaired: the copy was rewritten from the good data. A set opened
	// read-only only reports; WriteErr says why a rewrite failed.
	Repaired bool
	WriteErr error
}

func (h Heal) String() string {
	what := "data"
	if h.Metadata {
		what = "metadata"
	}
	s := fmt.Sprintf("%s copy %d of logical %d+%d on device %d (%s): %v", what, h.Copy+1, h.Logical, h.Len, h.DevID, h.Path, h.Cause)
	switch {
	case h.Repaired:
		return s + ": rewritten from a good copy"
	case h.WriteErr != nil:
		return s + ": rewrite failed: " + h.WriteErr.Error()
	}
	return s + ": left as is (opened read-only)"
}

// HealStats counts the bad copies reads met and those rewritten.
type HealStats struct {
	Found    int `json:"found"`
	Repaired int `json:"repaired"`
}

type healState struct {
	mu     sync.Mutex
	stats  HealStats
	report func(Heal)
	// held counts callers that rewrite and report bad copies themselves
	// (HoldHealing): reads then leave bad copies as they are.
	held int
}

// HoldHealing makes reads leave bad copies alone, unreported, until the
// returned release is called. A scrub holds it: its workers verify and
// rewrite every copy and count each bad one once, and a heal by its own
// tree walk racing with them would rewrite and count some twice.
func (fs *FS) HoldHealing() (release func()) {
	fs.heal.mu.Lock()
	fs.heal.held++
	fs.heal.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			fs.heal.mu.Lock()
			fs.heal.held--
			fs.heal.mu.Unlock()
		})
	}
}

// OnHeal sets the function told of every bad copy a read meets (the
// tools print one line on stderr); nil drops them.
func (fs *FS) OnHeal(fn func(Heal)) {
	fs.heal.mu.Lock()
	fs.heal.report = fn
	fs.heal.mu.Unlock()
}

// HealStats returns the bad copies met and rewritten so far.
func (fs *FS) HealStats() HealStats {
	fs.heal.mu.Lock()
	defer fs.heal.mu.Unlock()
	return fs.heal.stats
}

// HealCopy handles copy mirror of [logical, +len(good)), found bad for
// cause while good (verified by the caller) came from another copy: on a
// writable set it rewrites that copy in place and flushes it, then
// reports. A copy on a missing device is neither rewritten nor reported:
// a degraded open already said the device is gone.
func (fs *FS) HealCopy(logical uint64, good []byte, mirror int, metadata bool, cause error) Heal {
	h := Heal{Logical: logical, Len: len(good), Copy: mirror, Metadata: metadata, Cause: cause}
	fs.heal.mu.Lock()
	held := fs.heal.held > 0
	fs.heal.mu.Unlock()
	if held {
		return h
	}
	if ts, err := fs.Vol.Locate(logical); err == nil && mirror < len(ts) {
		h.DevID = ts[mirror].DevID
		if d, ok := fs.Vol.Device(h.DevID); ok {
			h.Path = d.Path
		} else {
			return h
		}
	}
	if c, ok := fs.Vol.Chunks.Lookup(logical); ok && c.IsParity() && mirror > 0 {
		return h // parity: scrub's row pass rewrites it, after the row's data
	}
	if fs.Vol.Writable() {
		h.WriteErr = fs.RewriteCopy(logical, good, mirror)
		h.Repaired = h.WriteErr == nil
	}
	fs.heal.mu.Lock()
	fs.heal.stats.Found++
	if h.Repaired {
		fs.heal.stats.Repaired++
	}
	report := fs.heal.report
	fs.heal.mu.Unlock()
	if report != nil {
		report(h)
	}
	return h
}

// RewriteCopy writes good over copy mirror of [logical, +len(good)) and
// flushes that copy's devices: the repair primitive of self-healing
// reads, scrub and fsck. The caller has verified good.
func (fs *FS) RewriteCopy(logical uint64, good []byte, mirror int) error {
	if err := fs.Vol.WriteCopy(logical, good, mirror); err != nil {
		return err
	}
	return fs.Vol.Flush()
}

// nodeBufs holds readNodeHealing's read buffers, one per copy.
var nodeBufs = sync.Pool{New: func() any { return new([]byte) }}

// readNodeHealing reads every copy of a node and returns the one that
// fits its place (ChooseCopy), healing the copies that do not. Every
// copy is read, not only the first that validates: two copies that both
// validate but differ are told apart only by reading both, and a reader
// must never return the one fsck would call wrong (issue 36).
func (fs *FS) readNodeHealing(p Place) (*format.Node, error) {
	copies := fs.Vol.Copies(p.Logical)
	if copies == 0 {
		return nil, fmt.Errorf("logical %d is in no chunk: %w", p.Logical, ErrCorrupt)
	}
	if n := fs.aheadNode(p, copies); n != nil {
		return n, nil
	}
	// The node decodes into its own memory (UnmarshalNode copies what
	// it keeps), so the read buffers go back for the next read: a run
	// over a large tree read 150 MB of node buffers into garbage.
	bufs, readErrs := make([][]byte, copies), make([]error, copies)
	if c, ok := fs.Vol.Chunks.Lookup(p.Logical); ok && c.IsParity() {
		// Copies 1.. of a parity chunk are rebuilds from the whole row,
		// equal to copy 0 whenever parity is right: read them only when
		// copy 0 does not fit (scrub checks parity).
		if n := fs.readFirstCopy(p); n != nil {
			return n, nil
		}
	}
	for m := range bufs {
		bp := nodeBufs.Get().(*[]byte)
		defer nodeBufs.Put(bp)
		if len(*bp) != int(fs.sb.NodeSize) {
			*bp = make([]byte, fs.sb.NodeSize)
		}
		bufs[m] = *bp
		readErrs[m] = fs.Vol.ReadCopy(p.Logical, bufs[m], m)
	}
	ch, err := ChooseCopy(bufs, readErrs, fs.sb.CsumType, p)
	if err != nil {
		return nil, err
	}
	for i, b := range ch.Bad {
		fs.HealCopy(p.Logical, bufs[ch.Winner], b, true, ch.Causes[i])
	}
	return ch.Node, nil
}

// readFirstCopy is copy 0 of the node at p when it fits p, else nil.
func (fs *FS) readFirstCopy(p Place) *format.Node {
	bp := nodeBufs.Get().(*[]byte)
	defer nodeBufs.Put(bp)
	if len(*bp) != int(fs.sb.NodeSize) {
		*bp = make([]byte, fs.sb.NodeSize)
	}
	err := fs.Vol.ReadCopy(p.Logical, *bp, 0)
	ch, cerr := ChooseCopy([][]byte{*bp}, []error{err}, fs.sb.CsumType, p)
	if cerr != nil || ch.Winner != 0 {
		return nil
	}
	return ch.Node
}
