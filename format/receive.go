package format

import (
	"bytes"
	"encoding/binary"
)

// A receive in progress (FORMAT.md §6.13): while a stream is received,
// the root set's fs tree is the tree being built and the live tree is
// parked in the snapshot tree's one RECEIVE_ITEM, (0, 191, 0); the
// receive ends by making its tree a snapshot and putting the parked root
// back, or is undone by putting it back and dropping its tree.

// receiveHeader is the fixed part of a RECEIVE_ITEM; the name follows.
const receiveHeader = 88

// ReceiveKey is the key of the RECEIVE_ITEM.
var ReceiveKey = Key{Type: ReceiveItemKey}

// ReceiveItem is a receive in progress.
type ReceiveItem struct {
	Parked       RootPtr  // the live fs tree as it was when the receive began
	Generation   uint64   // the commit that began it; ≥ Parked.Generation
	ReceivedUUID [16]byte // the sent snapshot's uuid (not zero)
	ParentUUID   [16]byte // an incremental stream's base (zero: full)
	Base         uint64   // the snapshot id the received tree began as (0: empty)
	Applied      uint64   // stream bytes applied by the last commit (a resume point)
	Name         string   // the snapshot the receive makes (ValidName)
}

// MarshalReceiveItem encodes r.
func MarshalReceiveItem(r *ReceiveItem) []byte {
	b := make([]byte, receiveHeader+len(r.Name))
	le := binary.LittleEndian
	le.PutUint64(b[0:], r.Parked.Logical)
	le.PutUint64(b[8:], r.Parked.Generation)
	b[16] = r.Parked.Level
	le.PutUint64(b[24:], r.Generation)
	copy(b[32:], r.ReceivedUUID[:])
	copy(b[48:], r.ParentUUID[:])
	le.PutUint64(b[64:], r.Base)
	le.PutUint64(b[72:], r.Applied)
	le.PutUint16(b[80:], uint16(len(r.Name)))
	copy(b[receiveHeader:], r.Name)
	return b
}

// UnmarshalReceiveItem decodes and validates a RECEIVE_ITEM value.
func UnmarshalReceiveItem(b []byte) (*ReceiveItem, error) {
	if len(b) < receiveHeader {
		return nil, corruptf(ErrShort, "receive item: %d bytes", len(b))
	}
	le := binary.LittleEndian
	r := &ReceiveItem{
		Parked:     RootPtr{Logical: le.Uint64(b[0:]), Generation: le.Uint64(b[8:]), Level: b[16]},
		Generation: le.Uint64(b[24:]), Base: le.Uint64(b[64:]), Applied: le.Uint64(b[72:]),
	}
	copy(r.ReceivedUUID[:], b[32:])
	copy(r.ParentUUID[:], b[48:])
	n := int(le.Uint16(b[80:]))
	switch {
	case len(b) != receiveHeader+n:
		return nil, corruptf(nil, "receive item: name length %d in %d bytes", n, len(b))
	case bytes.Count(b[17:24], zero) != 7 || bytes.Count(b[82:88], zero) != 6:
		return nil, corruptf(nil, "receive item: reserved bytes not zero")
	case r.Parked.Logical == 0 || r.Parked.Level >= MaxLevel || r.Parked.Generation == 0 || r.Parked.Generation > r.Generation:
		return nil, corruptf(nil, "receive item: parked root %d gen %d level %d at generation %d", r.Parked.Logical, r.Parked.Generation, r.Parked.Level, r.Generation)
	case r.ReceivedUUID == [16]byte{}:
		return nil, corruptf(nil, "receive item: zero received uuid")
	case (r.ParentUUID == [16]byte{}) != (r.Base == 0):
		return nil, corruptf(nil, "receive item: base snapshot %d with parent uuid %x", r.Base, r.ParentUUID)
	}
	r.Name = string(b[receiveHeader:])
	if !validName(r.Name) {
		return nil, corruptf(nil, "receive item: name %q", r.Name)
	}
	return r, nil
}
