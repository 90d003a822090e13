package scrub

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/volume"
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
	u.parity = c.IsParity()
	present := func(m int) bool { return copyPresent(vol, segs, m) }
	if u.parity { // copies are rebuilt, not placed: all read while the chunk survives
		whole := !c.LostWithout(vol.IsMissing)
		present = func(int) bool { return whole }
	} else if !u.meta && len(segs) > 1 && !wholeCopy(vol, segs, copies) {
		s.verifySegments(u, segs) // striped over a missing device
		return
	}
	bufs := make([][]byte, copies)
	readErrs := make([]error, copies)
	if u.parity && present(0) {
		// Copies 1.. are rebuilds from the whole row: read them only
		// when copy 0 is bad (the row pass checks parity itself).
		bufs[0] = getBuf(u.length)
		readErrs[0] = vol.ReadCopy(u.logical, bufs[0], 0)
		if readErrs[0] == nil && s.sound(u, bufs[0]) {
			for _, sg := range segs {
				u.read[sg.Targets[0].DevID] += uint64(sg.Len)
			}
			putBuf(bufs[0])
			return
		}
		putBuf(bufs[0])
		bufs[0] = nil
	}
	// Mirrored copies sit on different devices: read them at once, so
	// each device has a read in flight per worker (dup costs nothing).
	var wg sync.WaitGroup
	for m := 0; m < copies; m++ {
		if !present(m) {
			continue // the device is reported missing, not each copy
		}
		for _, sg := range segs {
			u.read[sg.Targets[m%len(sg.Targets)].DevID] += uint64(sg.Len)
		}
		bufs[m] = getBuf(u.length)
		wg.Add(1)
		go func() {
			defer wg.Done()
			readErrs[m] = vol.ReadCopy(u.logical, bufs[m], m)
		}()
	}
	wg.Wait()
	if len(u.read) == 0 {
		s.lost(u, segs)
	} else if u.meta {
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

// wholeCopy reports whether some copy of segs lies on present devices.
func wholeCopy(vol *volume.Volume, segs []volume.Segment, copies int) bool {
	for m := 0; m < copies; m++ {
		if copyPresent(vol, segs, m) {
			return true
		}
	}
	return false
}

// copyPresent reports whether copy m of segs lies on present devices.
func copyPresent(vol *volume.Volume, segs []volume.Segment, m int) bool {
	for _, sg := range segs {
		if vol.IsMissing(sg.Targets[m%len(sg.Targets)].DevID) {
			return false
		}
	}
	return true
}

// verifySegments verifies each stripe segment of a data unit on its own:
// the ones with a copy on the present devices are checked, the others
// are lost.
func (s *scrubber) verifySegments(u *unit, segs []volume.Segment) {
	ss, cl := s.fs.Super().SectorSize, s.fs.Super().CsumType.Len()
	for _, sg := range segs {
		a, b := sg.BufOff/int(ss)*cl, (sg.BufOff+sg.Len)/int(ss)*cl
		sub := &unit{logical: u.logical + uint64(sg.BufOff), length: sg.Len, sums: u.sums[a:b]}
		s.verify(sub)
		for d, n := range sub.read {
			u.read[d] += n
		}
		u.errs = append(u.errs, sub.errs...)
		u.err = errors.Join(u.err, sub.err)
	}
}

// lost records a unit no copy of which is on a present device: data
// (or a node) that cannot be read, let alone corrected.
func (s *scrubber) lost(u *unit, segs []volume.Segment) {
	var t volume.Target
	idx := 0
	for _, sg := range segs {
		for m, c := range sg.Targets {
			if t.DevID == 0 && s.fs.Vol.IsMissing(c.DevID) {
				t, idx = c, m
			}
		}
	}
	u.errs = append(u.errs, CopyError{Logical: u.logical, Len: u.length, Copy: idx, DevID: t.DevID, Physical: t.Physical,
		Metadata: u.meta, Kind: KindMissing, Detail: "no copy on a present device", Uncorrectable: true})
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
	s.placeCopies(u, bufs, states)
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
			states[m].kind, states[m].detail = KindMismatch, fmt.Sprintf("differs from copy %d", good)
		}
	}
	for m, st := range states {
		if !st.present || st.kind == "" || (u.parity && m > 0) { // parity: the row pass (parity.go)
			continue
		}
		e := CopyError{Logical: logical, Len: len(data[m]), Copy: m, Metadata: meta, Kind: st.kind, Detail: st.detail}
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

// sound reports whether b, copy 0 of u, verifies: a node that decodes
// with u's header, or data whose every sector matches its sum.
func (s *scrubber) sound(u *unit, b []byte) bool {
	sb := s.fs.Super()
	if u.meta {
		want := format.NodeExpect{FSID: sb.FSID, AltFSID: sb.NewFSID, Logical: u.logical, Generation: u.gen, Owner: u.owner, Level: u.level}
		_, err := format.UnmarshalNode(b, sb.CsumType, want)
		return err == nil
	}
	ss, cl := int(sb.SectorSize), sb.CsumType.Len()
	for i := 0; i+ss <= len(b); i += ss {
		if got := format.Checksum(sb.CsumType, b[i:i+ss]); !bytes.Equal(got[:cl], u.sums[i/ss*cl:(i/ss+1)*cl]) {
			return false
		}
	}
	return true
}
