package scrub

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/ddfs/ddfs/format"
)

// copyState is what one copy of a node or sector turned out to be.
type copyState struct {
	present bool   // on an open device
	kind    string // "" good, else a Kind*
	detail  string
}

// verify reads every copy of u and records bad ones, repairing them from
// a good copy when asked.
func (s *scrubber) verify(u *unit) {
	u.read = map[uint64]uint64{}
	vol := s.fs.Vol
	c, ok := vol.Chunks.Lookup(u.logical)
	if !ok {
		u.err = fmt.Errorf("logical %d is in no chunk: %w", u.logical, format.ErrCorrupt)
		return
	}
	segs, err := c.Map(u.logical-c.Logical, uint64(u.length))
	if err != nil {
		u.err = err
		return
	}
	copies := vol.Copies(u.logical)
	bufs := make([][]byte, copies)
	readErrs := make([]error, copies)
	// Mirrored copies sit on different devices: read them at once, so
	// each device has a read in flight per worker (dup costs nothing).
	var wg sync.WaitGroup
	for m := 0; m < copies; m++ {
		present := true
		for _, sg := range segs {
			t := sg.Targets[m%len(sg.Targets)]
			if vol.IsMissing(t.DevID) {
				present = false
				break
			}
			u.read[t.DevID] += uint64(sg.Len)
		}
		if !present {
			continue // the device is reported missing, not each copy
		}
		bufs[m] = getBuf(u.length)
		wg.Add(1)
		go func() {
			defer wg.Done()
			readErrs[m] = vol.ReadCopy(u.logical, bufs[m], m)
		}()
	}
	wg.Wait()
	if u.meta {
		s.verifyNode(u, bufs, readErrs)
	} else {
		s.verifyData(u, bufs, readErrs)
	}
	for _, b := range bufs {
		if b != nil {
			putBuf(b)
		}
	}
}

// bufPool recycles the read buffers: a scrub reads the whole set through
// them, and fresh ones would keep the garbage collector busy.
var bufPool sync.Pool

func getBuf(n int) []byte {
	if b, ok := bufPool.Get().(*[]byte); ok && cap(*b) >= n {
		return (*b)[:n]
	}
	return make([]byte, n, max(n, pieceSectors*4096))
}

func putBuf(b []byte) { bufPool.Put(&b) }

// verifyNode checks each copy of a node: readable, checksum and header
// valid, and byte-identical to the first good copy.
func (s *scrubber) verifyNode(u *unit, bufs [][]byte, readErrs []error) {
	sb := s.fs.Super()
	want := format.NodeExpect{FSID: sb.FSID, AltFSID: sb.NewFSID, Logical: u.logical, Generation: u.gen, Owner: u.owner, Level: u.level}
	states := make([]copyState, len(bufs))
	for m, b := range bufs {
		if b == nil {
			continue
		}
		states[m].present = true
		if readErrs[m] != nil {
			states[m].kind, states[m].detail = KindIO, readErrs[m].Error()
		} else if _, err := format.UnmarshalNode(b, sb.CsumType, want); err != nil {
			states[m].kind, states[m].detail = KindCsum, err.Error()
		}
	}
	s.settle(u, u.logical, bufs, states, true)
}

// verifyData checks every sector of every copy against its checksum. A
// copy that failed to read as a whole is read again sector by sector, so
// one bad sector costs only itself.
func (s *scrubber) verifyData(u *unit, bufs [][]byte, readErrs []error) {
	sb := s.fs.Super()
	ss, cl := int(sb.SectorSize), sb.CsumType.Len()
	n := u.length / ss
	sectorErrs := make([][]error, len(bufs))
	for m, b := range bufs {
		if b != nil && readErrs[m] != nil {
			sectorErrs[m] = make([]error, n)
			for i := 0; i < n; i++ {
				sectorErrs[m][i] = s.fs.Vol.ReadCopy(u.logical+uint64(i*ss), b[i*ss:(i+1)*ss], m)
			}
		}
	}
	states := make([]copyState, len(bufs))
	sector := make([][]byte, len(bufs))
	for i := 0; i < n; i++ {
		want := u.sums[i*cl : (i+1)*cl]
		for m, b := range bufs {
			states[m] = copyState{}
			sector[m] = nil
			if b == nil {
				continue
			}
			states[m].present = true
			sector[m] = b[i*ss : (i+1)*ss]
			switch {
			case sectorErrs[m] != nil && sectorErrs[m][i] != nil:
				states[m].kind, states[m].detail = KindIO, sectorErrs[m][i].Error()
			default:
				if got := format.Checksum(sb.CsumType, sector[m]); !bytes.Equal(got[:cl], want) {
					states[m].kind, states[m].detail = KindCsum, "data checksum mismatch"
				}
			}
		}
		s.settle(u, u.logical+uint64(i*ss), sector, states, false)
	}
}

// settle compares the good copies, then records every bad copy of
// [logical, +len) and, with Repair, rewrites it from the first good one.
func (s *scrubber) settle(u *unit, logical uint64, data [][]byte, states []copyState, meta bool) {
	good := -1
	for m, st := range states {
		if !st.present || st.kind != "" {
			continue
		}
		if good < 0 {
			good = m
		} else if !bytes.Equal(data[m], data[good]) {
			states[m].kind, states[m].detail = KindMismatch, fmt.Sprintf("differs from copy %d", good+1)
		}
	}
	for m, st := range states {
		if !st.present || st.kind == "" {
			continue
		}
		e := CopyError{Logical: logical, Len: len(data[m]), Copy: m + 1, Metadata: meta, Kind: st.kind, Detail: st.detail}
		if ts, err := s.fs.Vol.Locate(logical); err == nil && m < len(ts) {
			e.DevID, e.Physical = ts[m].DevID, ts[m].Physical
		}
		switch {
		case good < 0:
			e.Uncorrectable = true
		case s.opt.Repair:
			// The device is flushed at the next checkpoint and at the end.
			if err := s.fs.Vol.WriteCopy(logical, data[good], m); err != nil {
				e.Detail += "; rewrite failed: " + err.Error()
			} else {
				e.Corrected = true
			}
		}
		u.errs = append(u.errs, e)
	}
}
