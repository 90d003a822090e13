package format

import (
	"bytes"
	"encoding/binary"
)

var zero = []byte{0}

// Snapshots (FORMAT.md §6.12). A snapshot is a read-only fs tree: its
// root pointer lives in a SNAPSHOT_ITEM of the snapshot tree (tree 8),
// and its nodes are shared with the live fs tree and other snapshots
// (METADATA_ITEM refs > 1, §4.6) until one of them changes.

// snapshotHeader is the fixed part of a SNAPSHOT_ITEM; the name follows.
const snapshotHeader = 104

// MaxSnapshots bounds the snapshots of an image: each costs a tree walk
// in fsck and space-accounting passes, and a reader lists them whole.
const MaxSnapshots = 4096

// SnapshotItem is one snapshot: the fs tree root it keeps and who it is.
type SnapshotItem struct {
	Root         RootPtr  // the fs tree as of the snapshot
	Generation   uint64   // the commit that made the snapshot
	Ctime        Timespec // when
	UUID         [16]byte // the snapshot's own UUID
	ReceivedUUID [16]byte // the sent snapshot's UUID when received (else zero)
	ParentUUID   [16]byte // the base of the incremental stream received (else zero)
	Name         string   // a directory entry name (ValidName), unique in the image
}

// MarshalSnapshotItem encodes s.
func MarshalSnapshotItem(s *SnapshotItem) []byte {
	b := make([]byte, snapshotHeader+len(s.Name))
	le := binary.LittleEndian
	le.PutUint64(b[0:], s.Root.Logical)
	le.PutUint64(b[8:], s.Root.Generation)
	b[16] = s.Root.Level
	le.PutUint64(b[24:], s.Generation)
	le.PutUint64(b[32:], uint64(s.Ctime.Sec))
	le.PutUint32(b[40:], s.Ctime.Nsec)
	le.PutUint16(b[44:], uint16(len(s.Name)))
	copy(b[48:], s.UUID[:])
	copy(b[64:], s.ReceivedUUID[:])
	copy(b[80:], s.ParentUUID[:])
	copy(b[snapshotHeader:], s.Name)
	return b
}

// UnmarshalSnapshotItem decodes and validates a SNAPSHOT_ITEM value.
func UnmarshalSnapshotItem(b []byte) (*SnapshotItem, error) {
	if len(b) < snapshotHeader {
		return nil, corruptf(ErrShort, "snapshot item: %d bytes", len(b))
	}
	le := binary.LittleEndian
	s := &SnapshotItem{
		Root:       RootPtr{Logical: le.Uint64(b[0:]), Generation: le.Uint64(b[8:]), Level: b[16]},
		Generation: le.Uint64(b[24:]),
		Ctime:      Timespec{Sec: int64(le.Uint64(b[32:])), Nsec: le.Uint32(b[40:])},
	}
	n := int(le.Uint16(b[44:]))
	copy(s.UUID[:], b[48:])
	copy(s.ReceivedUUID[:], b[64:])
	copy(s.ParentUUID[:], b[80:])
	switch {
	case len(b) != snapshotHeader+n:
		return nil, corruptf(nil, "snapshot item: name length %d in %d bytes", n, len(b))
	case bytes.Count(b[17:24], zero) != 7 || bytes.Count(b[46:48], zero) != 2 || bytes.Count(b[96:104], zero) != 8:
		return nil, corruptf(nil, "snapshot item: reserved bytes not zero")
	case s.Root.Logical == 0 || s.Root.Level >= MaxLevel || s.Root.Generation == 0 || s.Root.Generation > s.Generation:
		return nil, corruptf(nil, "snapshot item: root %d gen %d level %d at generation %d", s.Root.Logical, s.Root.Generation, s.Root.Level, s.Generation)
	case s.Ctime.Nsec >= 1e9:
		return nil, corruptf(nil, "snapshot item: ctime nsec %d", s.Ctime.Nsec)
	case s.UUID == [16]byte{}:
		return nil, corruptf(nil, "snapshot item: zero uuid")
	}
	s.Name = string(b[snapshotHeader:])
	if !validName(s.Name) {
		return nil, corruptf(nil, "snapshot item: name %q", s.Name)
	}
	return s, nil
}
