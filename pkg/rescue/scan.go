package rescue

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/store"
)

// leafRef is a valid leaf the scan found: where, how new, which keys.
type leafRef struct {
	logical, gen uint64
	first, last  format.Key
}

// scanBatch is how many bytes of a chunk's first copy one read takes.
const scanBatch = 1 << 20

// scanLeaves reads every node-aligned block of the metadata chunks, at
// most limit bytes, and returns the non-empty leaves of tree owner that
// validate (checksum, fsid, their own address) with a generation no newer
// than the superblock's, newest first. Only their keys are kept: the
// fill reads a chosen leaf again.
func scanLeaves(st *store.FS, owner format.TreeID, limit uint64) ([]leafRef, error) {
	sb := st.Super()
	ns := uint64(sb.NodeSize)
	var out []leafRef
	var scanned uint64
	buf := make([]byte, scanBatch)
	for _, c := range st.Vol.Chunks.All() {
		if c.Type != format.ChunkMetadata {
			continue // fs-tree nodes live in metadata chunks only
		}
		start := (c.Logical + ns - 1) / ns * ns
		for l := start; l+ns <= c.End(); {
			n := min(uint64(len(buf)), (c.End()-l)/ns*ns)
			if scanned+n > limit {
				return sortLeaves(out), fmt.Errorf("stopped after %d bytes (the scan limit)", scanned)
			}
			scanned += n
			out = scanRange(st, owner, l, buf[:n], out)
			l += n
		}
	}
	return sortLeaves(out), nil
}

// scanRange validates each node of [l, l+len(buf)), reading the first
// copy in one piece and the other copies of a node that fails one by one.
func scanRange(st *store.FS, owner format.TreeID, l uint64, buf []byte, out []leafRef) []leafRef {
	sb := st.Super()
	ns := int(sb.NodeSize)
	whole := st.Vol.ReadCopy(l, buf, 0) == nil
	for off := 0; off+ns <= len(buf); off += ns {
		want := format.NodeExpect{FSID: sb.FSID, AltFSID: sb.NewFSID, Logical: l + uint64(off), Owner: owner, Level: -1}
		var n *format.Node
		var err error
		if whole {
			n, err = format.UnmarshalNode(buf[off:off+ns], sb.CsumType, want)
		}
		if !whole || (err != nil && claims(buf[off:off+ns], sb.FSID, owner)) {
			n, err = st.ReadNodeCopy(want, -1) // this copy is bad: the others may not be
		}
		if err != nil || !n.IsLeaf() || len(n.Items) == 0 || n.Generation > sb.Generation {
			continue
		}
		out = append(out, leafRef{n.Logical, n.Generation, n.Items[0].Key, n.Items[len(n.Items)-1].Key})
	}
	return out
}

// claims reports whether a block's header names the filesystem and
// owner (checksum unchecked): only such a block is worth the other
// copies' reads; free space and other trees' nodes are not.
func claims(b []byte, fsid [16]byte, owner format.TreeID) bool {
	return len(b) >= format.NodeHeaderSize && bytes.Equal(b[32:48], fsid[:]) && binary.LittleEndian.Uint64(b[64:72]) == uint64(owner)
}

func sortLeaves(ls []leafRef) []leafRef {
	sort.SliceStable(ls, func(i, j int) bool { return ls[i].gen > ls[j].gen })
	return ls
}
