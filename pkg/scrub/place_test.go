package scrub

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/store"
)

// TestScrubCopiesDiffer (issue 36): on raid1, copy 0 of one fs leaf gets
// its first key moved and copy 0 of another a value byte changed, each
// with a valid checksum. Scrub --repair rewrites the first leaf's copy 0
// from copy 1, the only one that fits the leaf's place (a plain "first
// good copy wins" would write the altered copy over the right one), and
// leaves the second leaf alone, both copies uncorrectable: its place
// cannot tell which is right.
func TestScrubCopiesDiffer(t *testing.T) {
	devs, _ := build(t, profiles[0], rand.New(rand.NewPCG(3, 9)))
	fs := open(t, devs, false)
	ns := int(fs.Super().NodeSize)
	leaves := childLeaves(t, fs, 2)
	moved, changed := leaves[0], leaves[1]
	good := map[uint64][]byte{}
	for _, l := range leaves {
		good[l] = copiesOf(t, fs, devs, l, ns)[1]
	}
	alterCopy0(t, fs, devs, moved, func(n *format.Node) {
		if k := &n.Items[0].Key; k.Offset > 0 {
			k.Offset-- // still below item 1: a valid leaf
		} else {
			k.Type--
		}
	})
	alterCopy0(t, fs, devs, changed, func(n *format.Node) {
		d := n.Items[0].Data
		n.Items[0].Data = append(append([]byte(nil), d[:len(d)-1]...), d[len(d)-1]^1)
	})
	fs.Close()

	fs = open(t, devs, true)
	defer fs.Close()
	rep, err := Run(fs, Options{Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	var found, corrected, uncorrectable uint64
	for _, d := range rep.Devices {
		found, corrected, uncorrectable = found+d.ErrorsFound, corrected+d.ErrorsCorrected, uncorrectable+d.ErrorsUncorrectable
	}
	if found != 3 || corrected != 1 || uncorrectable != 2 {
		t.Errorf("found %d, corrected %d, uncorrectable %d; want 3, 1 (the moved leaf's copy 0), 2 (both copies of the changed leaf): %+v", found, corrected, uncorrectable, rep.Errors)
	}
	for _, e := range rep.Errors {
		if e.Corrected != (e.Logical == moved && e.Copy == 0) || e.Kind != KindMismatch {
			t.Errorf("unexpected %+v", e)
		}
	}
	got := copiesOf(t, fs, devs, moved, ns)
	if !bytes.Equal(got[0], good[moved]) || !bytes.Equal(got[1], good[moved]) {
		t.Error("the moved leaf's copies are not both the right bytes")
	}
	if got := copiesOf(t, fs, devs, changed, ns); bytes.Equal(got[0], got[1]) || !bytes.Equal(got[1], good[changed]) {
		t.Error("a copy of the leaf whose place cannot decide was rewritten")
	}
}

// childLeaves returns n fs leaves that are not the first child of their
// parent (so their pointer's key says something).
func childLeaves(t *testing.T, fs *store.FS, n int) []uint64 {
	t.Helper()
	sb := fs.Super()
	r := sb.Roots.Root(format.FSTree)
	node, err := fs.ReadNode(format.FSTree, r.Logical, r.Generation, int(r.Level))
	for err == nil && node.Level > 1 {
		node, err = fs.ReadNode(format.FSTree, node.Ptrs[0].Logical, node.Ptrs[0].Generation, int(node.Level)-1)
	}
	if err != nil || node.Level != 1 || len(node.Ptrs) <= n {
		t.Fatalf("want a level 1 fs node with %d children: %v", n+1, err)
	}
	var out []uint64
	for _, p := range node.Ptrs[1 : n+1] {
		out = append(out, p.Logical)
	}
	return out
}

// alterCopy0 rewrites copy 0 of node logical with alter applied and a
// valid checksum.
func alterCopy0(t *testing.T, fs *store.FS, devs []*device.MemDevice, logical uint64, alter func(*format.Node)) {
	t.Helper()
	sb := fs.Super()
	ts, err := fs.Vol.Locate(logical)
	if err != nil {
		t.Fatal(err)
	}
	b := copiesOf(t, fs, devs, logical, int(sb.NodeSize))[0]
	n, err := format.UnmarshalNode(b, sb.CsumType, format.NodeExpect{FSID: sb.FSID, Logical: logical, Level: -1})
	if err != nil {
		t.Fatal(err)
	}
	alter(n)
	if _, err := devs[ts[0].DevID-1].WriteAt(format.MarshalNode(n, sb.NodeSize, sb.CsumType), int64(ts[0].Physical)); err != nil {
		t.Fatal(err)
	}
}
