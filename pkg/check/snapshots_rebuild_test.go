package check

import (
	"fmt"
	"slices"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
)

// TestRepairRebuildsFSTreeSnapshot: every copy of a live fs-tree leaf is
// bad on an image of 300 small files whose snapshot s2 shares most
// leaves. -y rebuilds the
// live tree from the nodes that read: live files that read before read
// after, the snapshot reads as it did after the damage; then every live
// file with data is removed and 40 files written into the freed space,
// and the snapshot still reads the same: the data extents of the shared
// leaves the rebuild copied took the new tree's reference (without it
// the removals free the snapshot's data). The lost leaf is the live
// tree's alone (the snapshot stays whole: a second -n is clean), or one
// the snapshot shares (it loses the leaf too: -y then names the
// snapshot's tree alone as incomplete, and fixes no count).
func TestRepairRebuildsFSTreeSnapshot(t *testing.T) {
	base, deep := sharedLeafImage(t, 300, true), sharedLeafImage(t, 2500, true)
	for _, tc := range []struct {
		name   string
		base   []*device.MemDevice
		files  int
		shared bool
	}{
		{"live-only leaf", base, 300, false},
		{"shared leaf", base, 300, true},
		// Three levels: leaves below a shared interior node have refs 1
		// and are shared all the same.
		{"shared leaf, three levels", deep, 2500, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			devs := loseLeaf(t, tc.base, tc.shared)
			before := contents(t, devs)
			snap := snapshotTree(t, devs, "s2")
			rep := repairDevs(t, devs, ModeRepair)
			if rep.RebuiltTree != "fs" || rep.NodesLost != 1 {
				t.Fatalf("rebuilt %q without %d nodes (limited: %q), want the fs tree without 1", rep.RebuiltTree, rep.NodesLost, rep.RepairLimited)
			}
			after := contents(t, devs)
			for ino, sum := range before {
				if after[ino] != sum {
					t.Errorf("inode %d read before -y, not after", ino)
				}
			}
			checkSnapshotKept(t, "after -y", snap, snapshotTree(t, devs, "s2"))
			if !tc.shared {
				cleanAfter(t, devs, "-n after -y")
			} else if !slices.Equal(rep.Incomplete, []string{"fs@s2"}) {
				t.Errorf("incomplete after -y: %q, want the snapshot's tree alone (fs@s2)", rep.Incomplete)
			}
			removeLiveData(t, devs, tc.files)
			churn(t, devs)
			checkSnapshotKept(t, "after the live files went and 40 were written", snap, snapshotTree(t, devs, "s2"))
		})
	}
}

// loseLeaf is a copy of base with every copy of a live fs-tree leaf
// flipped: one that holds /dir's inode (changed after the snapshot: the
// live tree's alone), or one the snapshot shares.
func loseLeaf(t *testing.T, base []*device.MemDevice, shared bool) []*device.MemDevice {
	t.Helper()
	s := newSurgeon(t, base)
	defer s.st.Close()
	defer s.tx.Abort()
	var leaf *format.Node
	if shared {
		leaf, _, _ = sharedLeaf(t, s)
	} else {
		sb := s.st.Super()
		leaf = leafOf(t, s.st.Vol, sb.Roots.Root(format.FSTree).Logical, inodeKey(s.ino("/dir")))
		k := format.Key{ObjectID: leaf.Logical, Type: format.MetadataItemKey}
		if m, err := format.UnmarshalMetadataItem(s.get(format.ExtentTree, k)); err != nil || m.Refs != 1 {
			t.Fatalf("/dir's leaf %d: refs %d (%v), want the live tree's alone", leaf.Logical, m.Refs, err)
		}
	}
	ts, err := s.st.Vol.Locate(leaf.Logical)
	must(t, err)
	for _, c := range ts {
		flip(s.devs[c.DevID-1], int64(c.Physical)+300)
	}
	return s.devs
}

// removeLiveData removes the files with data from the live tree (those
// that still resolve: the rebuild lost some).
func removeLiveData(t *testing.T, devs []*device.MemDevice, files int) {
	t.Helper()
	f := openedWritable(t, devs)
	if f == nil {
		t.Fatal("the repaired set does not open for writing")
	}
	paths := []string{"/small", "/mid", "/big", "/dir/hard", "/sparse", "/zeros", "/trunc"}
	for i := range files - 1 {
		paths = append(paths, fmt.Sprintf("/dir/g%03d", i))
	}
	for _, p := range paths {
		if _, err := f.Resolve(p, false); err != nil {
			continue // lost, or a name left dangling (-y withheld that fix)
		}
		must(t, f.Remove(p))
	}
	must(t, f.Close())
}

// TestDeepSharedImage: the three-level image of the rebuild test has
// what that case needs: a live leaf with refs 1 below an interior node
// the snapshot shares.
func TestDeepSharedImage(t *testing.T) {
	s := newSurgeon(t, sharedLeafImage(t, 2500, true))
	defer s.st.Close()
	defer s.tx.Abort()
	sb := s.st.Super()
	root := sb.Roots.Root(format.FSTree)
	if root.Level < 2 {
		t.Fatalf("fs tree of %d levels, want 3", root.Level+1)
	}
	refs := func(n *format.Node) uint64 {
		m, err := format.UnmarshalMetadataItem(s.get(format.ExtentTree, format.Key{ObjectID: n.Logical, Type: format.MetadataItemKey, Offset: uint64(n.Level)}))
		must(t, err)
		return m.Refs
	}
	for _, p := range readNode(t, s.st.Vol, root.Logical).Ptrs {
		mid := readNode(t, s.st.Vol, p.Logical)
		if refs(mid) >= 2 && refs(readNode(t, s.st.Vol, mid.Ptrs[0].Logical)) == 1 {
			return
		}
	}
	t.Fatal("no leaf with refs 1 below a shared interior node")
}
