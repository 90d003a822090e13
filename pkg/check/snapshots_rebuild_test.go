package check

import (
	"fmt"
	"slices"
	"strings"
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
		leaf = liveOnlyLeaf(t, s)
		k := format.Key{ObjectID: leaf.Logical, Type: format.MetadataItemKey}
		if m, err := format.UnmarshalMetadataItem(s.get(format.ExtentTree, k)); err != nil || m.Refs != 1 {
			t.Fatalf("/dir's leaf %d: refs %d (%v), want the live tree's alone", leaf.Logical, m.Refs, err)
		}
	}
	flipCopies(t, s, leaf.Logical)
	return s.devs
}

// flipCopies damages every copy of the node at l in s's devices.
func flipCopies(t *testing.T, s *surgeon, l uint64) {
	t.Helper()
	ts, err := s.st.Vol.Locate(l)
	must(t, err)
	for _, c := range ts {
		flip(s.devs[c.DevID-1], int64(c.Physical)+300)
	}
}

// liveOnlyLeaf is the live leaf holding /dir's inode (changed after the
// snapshot: refs 1).
func liveOnlyLeaf(t *testing.T, s *surgeon) *format.Node {
	t.Helper()
	sb := s.st.Super()
	return leafOf(t, s.st.Vol, sb.Roots.Root(format.FSTree).Logical, inodeKey(s.ino("/dir")))
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

// TestRebuildSnapshotDamageBeside: the live tree's rebuild on a snapshot
// image with a second fault (review of the rebuild):
//   - a shared leaf's file extent that does not decode: the rebuild goes
//     on (that extent's count is fsck's, withheld), it does not end -y;
//   - a shared leaf whose refs say 1 (the check that would say so is
//     withheld while another shared leaf is lost): the rebuild finds it
//     through the snapshot's root all the same, so the snapshot's files
//     still read after the live ones go and the space is reused;
//   - the snapshot's own root lost: it is fs@s2's TREE_ROOT_BAD, which
//     does not put an older backup root set in place (it would lose what
//     came after); the rebuild then cannot allocate (what the lost root
//     uses is unknown: ErrSpaceInUse's check cannot finish), and -y says
//     so in repair_limited rather than failing.
func TestRebuildSnapshotDamageBeside(t *testing.T) {
	base := sharedLeafImage(t, 300, true)
	for _, tc := range []struct {
		name     string
		rootLost bool
		damage   func(t *testing.T, s *surgeon)
	}{
		{"undecodable shared file extent", false, func(t *testing.T, s *surgeon) {
			leaf, _, _ := sharedLeaf(t, s)
			i := slices.IndexFunc(leaf.Items, func(it format.Item) bool { return it.Key.Type == format.FileExtentKey })
			if i < 0 {
				t.Fatal("no file extent in the shared leaf")
			}
			leaf.Items[i].Data = []byte{1, 2, 3}
			writeNode(t, s.st.Vol, leaf)
			flipCopies(t, s, liveOnlyLeaf(t, s).Logical)
		}},
		{"shared leaf with refs 1", false, func(t *testing.T, s *surgeon) {
			var withData []*format.Node
			sb := s.st.Super()
			for _, p := range readNode(t, s.st.Vol, sb.Roots.Root(format.FSTree).Logical).Ptrs {
				c := readNode(t, s.st.Vol, p.Logical)
				k := format.Key{ObjectID: c.Logical, Type: format.MetadataItemKey}
				m, err := format.UnmarshalMetadataItem(s.get(format.ExtentTree, k))
				must(t, err)
				if m.Refs >= 2 && slices.ContainsFunc(c.Items, func(it format.Item) bool { return it.Key.Type == format.FileExtentKey }) {
					withData = append(withData, c)
				}
			}
			if len(withData) < 2 {
				t.Fatalf("%d shared leaves with data, want 2", len(withData))
			}
			s.setLeafRefs(withData[len(withData)-1].Logical, 1)
			must(t, s.tx.Commit())
			flipCopies(t, s, withData[0].Logical)
		}},
		{"snapshot root lost", true, func(t *testing.T, s *surgeon) {
			snap, err := s.st.FindSnapshot("s2")
			must(t, err)
			sb := s.st.Super()
			if snap.Root.Logical == sb.Roots.Root(format.FSTree).Logical {
				t.Fatal("the snapshot's root is the live tree's")
			}
			flipCopies(t, s, snap.Root.Logical)
			flipCopies(t, s, liveOnlyLeaf(t, s).Logical)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSurgeon(t, base)
			tc.damage(t, s)
			s.tx.Abort()
			s.st.Close()
			snap := snapshotTree(t, s.devs, "s2")
			rep, err := Repair(opener(s.devs), Options{Mode: ModeRepair, CheckData: true})
			if err != nil {
				t.Fatalf("fsck -y: %v", err)
			}
			if tc.rootLost {
				i := slices.IndexFunc(rep.Problems, func(p Problem) bool { return p.Code == TreeRootBad })
				if i < 0 || rep.Problems[i].Tree != "fs@s2" || rep.RestoredFrom != 0 || !strings.Contains(rep.RepairLimited, "rebuild failed") {
					t.Fatalf("root problem %v, backup roots of generation %d, limited %q; want fs@s2's, none, the rebuild's failure said", rep.Problems[max(i, 0)], rep.RestoredFrom, rep.RepairLimited)
				}
				return
			}
			if rep.RebuiltTree != "fs" || rep.RestoredFrom != 0 {
				t.Fatalf("rebuilt %q, backup roots of generation %d (limited %q), want the fs tree rebuilt in place", rep.RebuiltTree, rep.RestoredFrom, rep.RepairLimited)
			}
			removeLiveData(t, s.devs, 300)
			churn(t, s.devs)
			checkSnapshotKept(t, "after -y, the live files gone and 40 written", snap, snapshotTree(t, s.devs, "s2"))
		})
	}
}
