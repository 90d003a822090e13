package format

import (
	"bytes"
	"encoding/binary"
)

// A tree being dropped (FORMAT.md §6.12): a deleted snapshot's tree, or
// the live tree a rollback replaced, is freed in steps, each a commit;
// the snapshot tree's DROP_ITEM holds what is left of it.

// DropItemSize is the size of a DROP_ITEM value.
const DropItemSize = 32

// DropItem is a tree being dropped.
type DropItem struct {
	Root       RootPtr // what is left of the tree (refs 1)
	Generation uint64  // the commit that last changed the item; ≥ Root.Generation
}

// DropKey is the key of the DROP_ITEM of the tree whose root was at
// logical when its drop began.
func DropKey(logical uint64) Key { return Key{ObjectID: logical, Type: DropItemKey} }

// MarshalDropItem encodes d.
func MarshalDropItem(d *DropItem) []byte {
	b := make([]byte, DropItemSize)
	le := binary.LittleEndian
	le.PutUint64(b[0:], d.Root.Logical)
	le.PutUint64(b[8:], d.Root.Generation)
	b[16] = d.Root.Level
	le.PutUint64(b[24:], d.Generation)
	return b
}

// UnmarshalDropItem decodes and validates a DROP_ITEM value.
func UnmarshalDropItem(b []byte) (*DropItem, error) {
	if len(b) != DropItemSize {
		return nil, corruptf(ErrShort, "drop item: %d bytes, want %d", len(b), DropItemSize)
	}
	le := binary.LittleEndian
	d := &DropItem{Root: RootPtr{Logical: le.Uint64(b[0:]), Generation: le.Uint64(b[8:]), Level: b[16]}, Generation: le.Uint64(b[24:])}
	switch {
	case bytes.Count(b[17:24], zero) != 7:
		return nil, corruptf(nil, "drop item: reserved bytes not zero")
	case d.Root.Logical == 0 || d.Root.Level >= MaxLevel || d.Root.Generation == 0 || d.Root.Generation > d.Generation:
		return nil, corruptf(nil, "drop item: root %d gen %d level %d at generation %d", d.Root.Logical, d.Root.Generation, d.Root.Level, d.Generation)
	}
	return d, nil
}
