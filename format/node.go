package format

import (
	"bytes"
	"encoding/binary"
)

// Node layout (FORMAT.md §4.1 "Node"). A node fills nodesize bytes:
//
//	+--------+----------------------+-----------------+-----------------+
//	| header | item headers ->      |   free space    |  <- item data   |  leaf (level 0)
//	+--------+----------------------+-----------------+-----------------+
//	| header | key ptrs ->          |   free space (zero)               |  internal (level > 0)
//	+--------+----------------------+-----------------------------------+
//
// Header (80 bytes):
//
//	off size field
//	  0   32 csum        over bytes 32..nodesize
//	 32   16 fsid        must equal the superblock's
//	 48    8 logical     the node's own logical address
//	 56    8 generation  transaction that wrote it
//	 64    8 owner       TreeID
//	 72    4 nritems
//	 76    1 level       0 = leaf
//	 77    3 reserved    zero
const (
	NodeHeaderSize = 80
	// NodeFSIDEnd ends the checksum and fsid (bytes 0..47): all that a
	// fsid change rewrites in a node (FORMAT.md §3.8).
	NodeFSIDEnd = 48
	// LeafItemSize: key (17) + data offset u32 (from node start) + data size u32.
	LeafItemSize = KeySize + 8
	// KeyPtrSize: key (17) + child logical u64 + child generation u64.
	KeyPtrSize = KeySize + 16
	// MaxLevel bounds tree height; deeper is corruption.
	MaxLevel = 8
)

// Item is one key/value of a leaf.
type Item struct {
	Key  Key
	Data []byte
}

// KeyPtr is one child pointer of an internal node.
type KeyPtr struct {
	Key        Key // smallest key in the child's subtree at the time of the write
	Logical    uint64
	Generation uint64
}

// NodeHeader is the common header of every node.
type NodeHeader struct {
	FSID       [16]byte
	Logical    uint64
	Generation uint64
	Owner      TreeID
	Level      uint8
}

// Node is a decoded B+tree node: Items for a leaf, Ptrs otherwise.
type Node struct {
	NodeHeader
	Items []Item
	Ptrs  []KeyPtr
	// dataBytes is the sum of len(Data) over Items while counted is set
	// (in memory only, not on disk): the B-tree checks a leaf's fill on
	// every insert and delete, and summing a leaf's items for it was 7-10%
	// of a small-file build's CPU. The edit methods (nodeitems.go) keep it;
	// a node built or changed any other way is summed instead.
	dataBytes int
	counted   bool
}

// IsLeaf reports level == 0.
func (n *Node) IsLeaf() bool { return n.Level == 0 }

// NumItems is the number of items or pointers.
func (n *Node) NumItems() int {
	if n.IsLeaf() {
		return len(n.Items)
	}
	return len(n.Ptrs)
}

// FirstKey is the smallest key of the node (zero key if empty).
func (n *Node) FirstKey() Key {
	if n.IsLeaf() {
		if len(n.Items) == 0 {
			return Key{}
		}
		return n.Items[0].Key
	}
	if len(n.Ptrs) == 0 {
		return Key{}
	}
	return n.Ptrs[0].Key
}

// UsedBytes is the space the node's contents take after the header: O(1)
// for a leaf the edit methods keep counted, else SumUsedBytes.
func (n *Node) UsedBytes() int {
	if n.IsLeaf() && n.counted {
		return len(n.Items)*LeafItemSize + n.dataBytes
	}
	return n.SumUsedBytes()
}

// SumUsedBytes is UsedBytes summed over the items, whatever the count
// says: what MarshalNode lays out, so a writer checks it before writing.
func (n *Node) SumUsedBytes() int {
	if !n.IsLeaf() {
		return len(n.Ptrs) * KeyPtrSize
	}
	return len(n.Items)*LeafItemSize + dataBytes(n.Items)
}

func dataBytes(items []Item) int {
	d := 0
	for _, it := range items {
		d += len(it.Data)
	}
	return d
}

// MaxItemData is the largest item value a leaf of this node size can hold
// (a leaf must hold at least one item).
func MaxItemData(nodesize uint32) int { return int(nodesize) - NodeHeaderSize - LeafItemSize }

// MarshalNode encodes n into a nodesize buffer and sets its checksum. The
// caller guarantees the contents fit (UsedBytes <= nodesize-header).
func MarshalNode(n *Node, nodesize uint32, csum CsumType) []byte {
	return MarshalNodeTo(make([]byte, nodesize), n, csum)
}

// MarshalNodeTo is MarshalNode into b (len(b) is the node size), which
// it clears first: a commit encodes every dirty node through one buffer.
func MarshalNodeTo(b []byte, n *Node, csum CsumType) []byte {
	clear(b)
	nodesize := len(b)
	le := binary.LittleEndian
	copy(b[32:48], n.FSID[:])
	le.PutUint64(b[48:], n.Logical)
	le.PutUint64(b[56:], n.Generation)
	le.PutUint64(b[64:], uint64(n.Owner))
	le.PutUint32(b[72:], uint32(n.NumItems()))
	b[76] = n.Level
	if n.IsLeaf() {
		end := nodesize
		for i, it := range n.Items {
			o := NodeHeaderSize + i*LeafItemSize
			end -= len(it.Data)
			copy(b[end:], it.Data)
			PutKey(b[o:], it.Key)
			le.PutUint32(b[o+KeySize:], uint32(end))
			le.PutUint32(b[o+KeySize+4:], uint32(len(it.Data)))
		}
	} else {
		for i, p := range n.Ptrs {
			o := NodeHeaderSize + i*KeyPtrSize
			PutKey(b[o:], p.Key)
			le.PutUint64(b[o+KeySize:], p.Logical)
			le.PutUint64(b[o+KeySize+8:], p.Generation)
		}
	}
	sum := Checksum(csum, b[CsumSize:])
	copy(b, sum[:])
	return b
}

// ResealNodeFSID sets the fsid of the encoded node b and recomputes its
// checksum (FORMAT.md §3.8). Only bytes 0..47 change, so a writer may
// write back the first sector alone: the change is atomic per copy.
func ResealNodeFSID(b []byte, csum CsumType, fsid [16]byte) {
	copy(b[32:48], fsid[:])
	sum := Checksum(csum, b[CsumSize:])
	copy(b, sum[:])
}

// NodeExpect is what the reader knows about a node before reading it; a
// mismatch means a misdirected, stale or foreign write.
type NodeExpect struct {
	FSID [16]byte
	// AltFSID, when non-zero, is accepted as well: the superblock's
	// new_fsid while a fsid change is in progress (FORMAT.md §3.8).
	AltFSID    [16]byte
	Logical    uint64
	Generation uint64 // 0 = unknown
	Owner      TreeID // 0 = unknown
	Level      int    // -1 = unknown
}

// UnmarshalNode decodes and validates a node: checksum, then header fields
// against want, then item bounds and key order.
func UnmarshalNode(b []byte, csum CsumType, want NodeExpect) (*Node, error) {
	return unmarshalNode(b, csum, want, true, nil)
}

// UnmarshalNodeShared is UnmarshalNode with item data that aliases b
// instead of copies of it, decoded into reuse (when not nil) with its item
// and pointer lists reused: for a reader that reads b once, leaves it
// unchanged while it uses the node and recycles nodes (fsck), it saves the
// allocations per item and per node. On error *reuse is undefined.
func UnmarshalNodeShared(b []byte, csum CsumType, want NodeExpect, reuse *Node) (*Node, error) {
	return unmarshalNode(b, csum, want, false, reuse)
}

// resize is s with length n, reusing its array when it is big enough.
func resize[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}

func unmarshalNode(b []byte, csum CsumType, want NodeExpect, clone bool, reuse *Node) (*Node, error) {
	if len(b) < NodeHeaderSize+LeafItemSize {
		return nil, corruptf(ErrShort, "node %d: %d bytes", want.Logical, len(b))
	}
	// The whole field is compared: the unused tail of a short checksum
	// must be zero, so no byte of a node escapes detection.
	if sum := Checksum(csum, b[CsumSize:]); !bytes.Equal(sum[:], b[:CsumSize]) {
		return nil, corruptf(ErrChecksum, "node %d", want.Logical)
	}
	le := binary.LittleEndian
	n := reuse
	if n == nil {
		n = &Node{}
	} else {
		*n = Node{Items: n.Items[:0], Ptrs: n.Ptrs[:0]}
	}
	copy(n.FSID[:], b[32:48])
	n.Logical = le.Uint64(b[48:])
	n.Generation = le.Uint64(b[56:])
	n.Owner = TreeID(le.Uint64(b[64:]))
	nr := int(le.Uint32(b[72:]))
	n.Level = b[76]
	switch {
	case n.FSID != want.FSID && (want.AltFSID == [16]byte{} || n.FSID != want.AltFSID):
		return nil, corruptf(nil, "node %d: belongs to another filesystem", want.Logical)
	case n.Logical != want.Logical:
		return nil, corruptf(nil, "node %d: header says logical %d (misdirected write)", want.Logical, n.Logical)
	case want.Generation != 0 && n.Generation != want.Generation:
		return nil, corruptf(nil, "node %d: generation %d, parent expects %d (stale or lost write)", want.Logical, n.Generation, want.Generation)
	case want.Owner != 0 && n.Owner != want.Owner:
		return nil, corruptf(nil, "node %d: owner %v, expected %v", want.Logical, n.Owner, want.Owner)
	case want.Level >= 0 && int(n.Level) != want.Level:
		return nil, corruptf(nil, "node %d: level %d, expected %d", want.Logical, n.Level, want.Level)
	case n.Level >= MaxLevel:
		return nil, corruptf(nil, "node %d: level %d", want.Logical, n.Level)
	}
	if n.IsLeaf() {
		if nr > (len(b)-NodeHeaderSize)/LeafItemSize {
			return nil, corruptf(nil, "node %d: %d items do not fit", want.Logical, nr)
		}
		n.Items = resize(n.Items, nr)
		dataStart := NodeHeaderSize + nr*LeafItemSize
		limit := len(b) // item data is packed from the end, in item order
		// One copy of the data area (or none: shared), not one allocation
		// per item; each item's slice is capped, so an append to one
		// never writes into the next.
		area, base := b, 0
		if clone {
			area, base = bytes.Clone(b[dataStart:]), dataStart
		}
		for i := range n.Items {
			o := NodeHeaderSize + i*LeafItemSize
			off := int(le.Uint32(b[o+KeySize:]))
			size := int(le.Uint32(b[o+KeySize+4:]))
			if off < dataStart || size > limit || off > limit-size {
				return nil, corruptf(nil, "node %d: item %d data [%d,+%d) out of bounds", want.Logical, i, off, size)
			}
			limit = off
			a := off - base
			n.Items[i] = Item{Key: GetKey(b[o:]), Data: area[a : a+size : a+size]}
			if i > 0 && !n.Items[i-1].Key.Less(n.Items[i].Key) {
				return nil, corruptf(nil, "node %d: keys out of order at item %d", want.Logical, i)
			}
		}
	} else {
		if nr == 0 || nr > (len(b)-NodeHeaderSize)/KeyPtrSize {
			return nil, corruptf(nil, "node %d: %d pointers", want.Logical, nr)
		}
		n.Ptrs = resize(n.Ptrs, nr)
		for i := range n.Ptrs {
			o := NodeHeaderSize + i*KeyPtrSize
			n.Ptrs[i] = KeyPtr{Key: GetKey(b[o:]), Logical: le.Uint64(b[o+KeySize:]), Generation: le.Uint64(b[o+KeySize+8:])}
			if i > 0 && !n.Ptrs[i-1].Key.Less(n.Ptrs[i].Key) {
				return nil, corruptf(nil, "node %d: keys out of order at pointer %d", want.Logical, i)
			}
			if n.Ptrs[i].Logical == 0 {
				return nil, corruptf(nil, "node %d: null child pointer %d", want.Logical, i)
			}
		}
	}
	return n, nil
}
