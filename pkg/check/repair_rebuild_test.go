package check

import (
	"bytes"
	"maps"
	"strings"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
)

// TestRepairRebuildsExtentItem (issue 36): a data EXTENT_ITEM deleted
// under live file extents. The file still reads; -n reports
// FILE_EXTENT_NO_ITEM, and its checksums are no orphans. -p and -y
// rebuild the item, references counted from the file extents (/big's
// head extent has two, the overwrite split it) in the same round, keep every file reading
// as before, and a second -n is clean.
func TestRepairRebuildsExtentItem(t *testing.T) {
	f, base := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	populate(t, f)
	before := contents(t, base)
	for _, path := range []string{"/mid", "/big"} {
		for _, m := range []struct {
			mode Mode
			flag string
		}{{ModePreen, "p"}, {ModeRepair, "y"}} {
			t.Run(path+" -"+m.flag, func(t *testing.T) {
				s := newSurgeon(t, base)
				l, n := s.diskExtent(s.ino(path))
				k := format.Key{ObjectID: l, Type: format.ExtentItemKey, Offset: n}
				orig := bytes.Clone(s.get(format.ExtentTree, k))
				s.del(format.ExtentTree, k)
				expect(t, s.check(Options{CheckData: true}), want{code: FileExtentNoItem, logical: l}, want{code: BGUsed})
				rep := repairDevs(t, s.devs, m.mode)
				if got := strings.Join(codesOf(rep.Problems, false), " "); got != "BG_USED+ FILE_EXTENT_NO_ITEM+" {
					t.Errorf("repair %s, want the item rebuilt in one round with its references", got)
				}
				readsAsBefore(t, s.devs, before)
				after := newSurgeon(t, s.devs)
				defer after.tx.Abort()
				if got := after.get(format.ExtentTree, k); !sameRefs(t, got, orig) {
					t.Errorf("rebuilt item %x, was %x", got, orig)
				}
				cleanAfter(t, s.devs, "-n after repair")
			})
		}
	}
}

// sameRefs compares the references, compression and size of two extent
// items (the generation is the repair's).
func sameRefs(t *testing.T, a, b []byte) bool {
	x, err := format.UnmarshalExtentItem(a)
	must(t, err)
	y, err := format.UnmarshalExtentItem(b)
	must(t, err)
	return x.Refs == y.Refs && x.RAMBytes == y.RAMBytes && x.Compression == y.Compression
}

// TestRepairRebuildsMetaItem: a node's METADATA_ITEM deleted (its space
// looks free to the allocator). -p makes it again from the node's header,
// byte for byte as the writer made it, counts it in its block group, and
// a second -n is clean.
func TestRepairRebuildsMetaItem(t *testing.T) {
	f, base := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	populate(t, f)
	for _, id := range []format.TreeID{format.FSTree, format.CsumTree} {
		t.Run(id.String(), func(t *testing.T) {
			s := newSurgeon(t, base)
			sb := s.st.Super()
			root := sb.Roots.Root(id)
			k := format.Key{ObjectID: root.Logical, Type: format.MetadataItemKey, Offset: uint64(root.Level)}
			orig := bytes.Clone(s.get(format.ExtentTree, k))
			s.del(format.ExtentTree, k)
			expect(t, s.check(Options{}), want{code: MetaMissing, logical: root.Logical}, want{code: BGUsed})
			rep := repairDevs(t, s.devs, ModePreen)
			if got := strings.Join(codesOf(rep.Problems, false), " "); got != "BG_USED+ META_MISSING+" {
				t.Errorf("repair %s", got)
			}
			after := newSurgeon(t, s.devs)
			defer after.tx.Abort()
			if got := after.get(format.ExtentTree, k); !bytes.Equal(got, orig) {
				t.Errorf("rebuilt item %x, was %x", got, orig)
			}
			cleanAfter(t, s.devs, "-n after -p")
		})
	}
}

// TestRepairRebuildsFSTree (issue 36): every copy of an fs tree leaf is
// bad. -y rebuilds the tree from the other nodes: every file that read
// before still reads, byte for byte, what the leaf held is reported lost,
// and a second -n is clean.
func TestRepairRebuildsFSTree(t *testing.T) {
	f, devs := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	populate(t, f)
	leaf := lastFSLeaf(t, devs)
	for _, nc := range allNodeCopies(t, devs) {
		if nc.logical == leaf {
			flip(devs[nc.target.DevID-1], int64(nc.target.Physical)+300)
		}
	}
	before := contents(t, devs)
	rep := repairDevs(t, devs, ModeRepair)
	if rep.RebuiltTree != "fs" || rep.NodesLost != 1 {
		t.Errorf("rebuilt %q without %d nodes, want the fs tree without 1", rep.RebuiltTree, rep.NodesLost)
	}
	after := contents(t, devs)
	for ino, sum := range before {
		if after[ino] != sum {
			t.Errorf("inode %d read before -y, not after", ino)
		}
	}
	cleanAfter(t, devs, "-n after -y")
}

// lastFSLeaf is the fs tree's last leaf (an fs tree of two or more).
func lastFSLeaf(t *testing.T, devs []*device.MemDevice) uint64 {
	t.Helper()
	var leaf uint64
	for _, nc := range allNodeCopies(t, devs) {
		if nc.tree == format.FSTree && nc.copy == 0 {
			leaf = nc.logical
		}
	}
	return leaf
}

// TestRepairReplacesBadAccounting: an extent, metadata or block group
// item that does not decode (ITEM_BAD) is rebuilt in its place by -p
// from what references the space (the file extents, the node, the
// chunk); files read as before and a second -n is clean.
func TestRepairReplacesBadAccounting(t *testing.T) {
	f, base := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	populate(t, f)
	before := contents(t, base)
	for _, tc := range []struct {
		name string
		key  func(s *surgeon) format.Key
	}{
		{"extent item", func(s *surgeon) format.Key {
			l, n := s.diskExtent(s.ino("/mid"))
			return format.Key{ObjectID: l, Type: format.ExtentItemKey, Offset: n}
		}},
		{"metadata item", func(s *surgeon) format.Key {
			sb := s.st.Super()
			r := sb.Roots.Root(format.FSTree)
			return format.Key{ObjectID: r.Logical, Type: format.MetadataItemKey, Offset: uint64(r.Level)}
		}},
		{"block group item", func(s *surgeon) format.Key {
			l, _ := s.diskExtent(s.ino("/mid"))
			c, _ := s.st.Vol.Chunks.Lookup(l)
			return format.Key{ObjectID: c.Logical, Type: format.BlockGroupKey, Offset: c.Length}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSurgeon(t, base)
			k := tc.key(s)
			s.get(format.ExtentTree, k)
			s.put(format.ExtentTree, k, []byte{1, 2, 3})
			must(t, s.tx.Commit())
			repairDevs(t, s.devs, ModePreen)
			readsAsBefore(t, s.devs, before)
			cleanAfter(t, s.devs, "-n after -p")
		})
	}
}

// TestRepairDirIndexOdd: a DIR_INDEX that names another inode than its
// name's DIR_ITEM entry and INODE_REF (the inode number one off, as the
// campaign's field changes make it) is pointed back by -p: the two that
// agree win, every name resolves as before and a second -n is clean.
func TestRepairDirIndexOdd(t *testing.T) {
	f, base := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	populate(t, f)
	paths := pathsOf(t, base)
	s := newSurgeon(t, base)
	idx, e := s.entry(format.RootDirIno, "mid")
	e.Ino++
	s.put(format.FSTree, dirIndexKey(format.RootDirIno, idx), format.MarshalDirEntry(e))
	if rep := s.check(Options{}); !hasCode(rep.Problems, EntryMismatch) {
		t.Fatalf("not reported: %v", rep.Problems)
	}
	repairDevs(t, s.devs, ModePreen)
	if got := pathsOf(t, s.devs); !maps.Equal(got, paths) {
		t.Errorf("names after -p differ: %d of %d", len(got), len(paths))
	}
	cleanAfter(t, s.devs, "-n after -p")
}

// TestRepairExtentReadAs: an extent item whose decompressed size no
// longer says what the file extents read (the campaign's one-off field)
// takes their view back from -p, byte for byte; a second -n is clean.
func TestRepairExtentReadAs(t *testing.T) {
	f, base := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	populate(t, f)
	before := contents(t, base)
	s := newSurgeon(t, base)
	l, n := s.diskExtent(s.ino("/mid"))
	k := format.Key{ObjectID: l, Type: format.ExtentItemKey, Offset: n}
	orig := bytes.Clone(s.get(format.ExtentTree, k))
	e, err := format.UnmarshalExtentItem(orig)
	must(t, err)
	e.RAMBytes ^= 1
	s.put(format.ExtentTree, k, format.MarshalExtentItem(e))
	expect(t, s.check(Options{}), want{code: ExtentReadAs, logical: l})
	repairDevs(t, s.devs, ModePreen)
	after := newSurgeon(t, s.devs)
	defer after.tx.Abort()
	if got := after.get(format.ExtentTree, k); !bytes.Equal(got, orig) {
		t.Errorf("item %x after -p, was %x", got, orig)
	}
	readsAsBefore(t, s.devs, before)
	cleanAfter(t, s.devs, "-n after -p")
}
