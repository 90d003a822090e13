package check

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"strings"
	"syscall"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/inspect"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// snapImage is a populated image with two snapshots: s1 of the populated
// tree, then /big removed and /mid overwritten, s2, then /small removed
// from the live tree. bigIno is /big's inode (only s1 has it).
func snapImage(t *testing.T) (devs []*device.MemDevice, bigIno uint64) {
	f, devs := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	populate(t, f)
	bigIno = resolve(t, f, "/big").Ino
	must(t, f.Sync())
	_, err := f.CreateSnapshot("s1")
	must(t, err)
	must(t, f.Remove("/big"))
	must(t, f.Remove("/dir/hard")) // /big's other name
	must(t, f.WriteAt(resolve(t, f, "/mid"), pattern(4096, 9), 0))
	_, err = f.CreateSnapshot("s2")
	must(t, err)
	must(t, f.Remove("/small"))
	must(t, f.Sync())
	return devs, bigIno
}

// snapshotRoot is the root of the snapshot named name.
func snapshotRoot(t *testing.T, st *store.FS, name string) format.RootPtr {
	t.Helper()
	all, err := st.Snapshots()
	must(t, err)
	for _, s := range all {
		if s.Name == name {
			return s.Root
		}
	}
	t.Fatalf("no snapshot %q", name)
	return format.RootPtr{}
}

// leafOf descends from root to the leaf that holds key k.
func leafOf(t *testing.T, vol *volume.Volume, root uint64, k format.Key) *format.Node {
	t.Helper()
	n := readNode(t, vol, root)
	for !n.IsLeaf() {
		next := n.Ptrs[0].Logical
		for _, p := range n.Ptrs {
			if !k.Less(p.Key) {
				next = p.Logical
			}
		}
		n = readNode(t, vol, next)
	}
	return n
}

// TestSnapshotImageClean: an image whose snapshots share nodes and data
// with the live tree and each other checks clean, data included, with
// each shared node read once and counted under its several pointers.
func TestSnapshotImageClean(t *testing.T) {
	devs, _ := snapImage(t)
	rep := fsckDevs(t, devs, Options{CheckData: true})
	expect(t, rep)
	if rep.Snapshots != 2 {
		t.Fatalf("%d snapshots checked, want 2", rep.Snapshots)
	}
	if got := repairDevs(t, devs, ModeRepair); !got.Clean() || got.RepairLimited != "" {
		t.Fatalf("repair of a clean snapshot image: %v %q", got.Problems, got.RepairLimited)
	}
}

// TestSnapshotSurgery: damage that only the snapshots' trees or counts
// show is found and placed.
func TestSnapshotSurgery(t *testing.T) {
	base, bigIno := snapImage(t)
	t.Run("meta-refs", func(t *testing.T) {
		s := newSurgeon(t, base)
		root := snapshotRoot(t, s.st, "s2")
		k := format.Key{ObjectID: root.Logical, Type: format.MetadataItemKey, Offset: uint64(root.Level)}
		m, err := format.UnmarshalMetadataItem(s.get(format.ExtentTree, k))
		must(t, err)
		m.Refs++
		s.put(format.ExtentTree, k, format.MarshalMetadataItem(m))
		expect(t, s.check(Options{}), want{code: MetaRefs, logical: root.Logical})
		// -y sets refs to the pointers counted (the one tree fix an image
		// with snapshots gets), and a check after is clean.
		if got := repairDevs(t, s.devs, ModeRepair); !got.Clean() {
			t.Fatalf("repair of META_REFS: %v (limited %q)", got.Problems, got.RepairLimited)
		}
		expect(t, fsckDevs(t, s.devs, Options{CheckData: true}))
	})
	t.Run("meta-refs-low", func(t *testing.T) {
		s := newSurgeon(t, base)
		var k format.Key
		var m *format.MetadataItem
		for _, it := range s.items(format.ExtentTree, format.Key{}, format.MaxKey) {
			if it.Key.Type == format.MetadataItemKey && m == nil {
				if x, err := format.UnmarshalMetadataItem(it.Data); err == nil && x.Refs >= 2 {
					k, m = it.Key, x
				}
			}
		}
		if m == nil {
			t.Fatal("no shared node")
		}
		m.Refs = 1 // a later delete would free a node another tree still points at
		s.put(format.ExtentTree, k, format.MarshalMetadataItem(m))
		expect(t, s.check(Options{}), want{code: MetaRefs, logical: k.ObjectID})
		if got := repairDevs(t, s.devs, ModeRepair); !got.Clean() {
			t.Fatalf("repair of META_REFS: %v", got.Problems)
		}
		expect(t, fsckDevs(t, s.devs, Options{CheckData: true}))
	})
	t.Run("snapshot-only-extent-refs", func(t *testing.T) {
		s := newSurgeon(t, base)
		var logical, length uint64
		for _, it := range s.items(format.ExtentTree, format.Key{}, format.MaxKey) {
			if it.Key.Type != format.ExtentItemKey {
				continue
			}
			// /big's first extent: only s1 points at it.
			leaf := leafOf(t, s.st.Vol, snapshotRoot(t, s.st, "s1").Logical, format.Key{ObjectID: bigIno, Type: format.FileExtentKey})
			for _, fx := range leaf.Items {
				var x format.FileExtentItem
				if fx.Key.ObjectID == bigIno && fx.Key.Type == format.FileExtentKey && format.DecodeFileExtentItem(fx.Data, &x) == nil && x.DiskLogical == it.Key.ObjectID {
					logical, length = it.Key.ObjectID, it.Key.Offset
				}
			}
		}
		if logical == 0 {
			t.Fatal("no extent of /big found")
		}
		k := format.Key{ObjectID: logical, Type: format.ExtentItemKey, Offset: length}
		e, err := format.UnmarshalExtentItem(s.get(format.ExtentTree, k))
		must(t, err)
		e.Refs += 5
		s.put(format.ExtentTree, k, format.MarshalExtentItem(e))
		expect(t, s.check(Options{}), want{code: ExtentRefs, logical: logical})
		// Counted over every tree (only s1 points at it): -y sets it.
		if got := repairDevs(t, s.devs, ModeRepair); !got.Clean() {
			t.Fatalf("repair of EXTENT_REFS: %v (limited %q)", got.Problems, got.RepairLimited)
		}
		expect(t, fsckDevs(t, s.devs, Options{CheckData: true}))
	})
	t.Run("snapshot-namespace", func(t *testing.T) {
		s := newSurgeon(t, base)
		must(t, s.tx.Commit())
		leaf := leafOf(t, s.st.Vol, snapshotRoot(t, s.st, "s1").Logical, format.Key{ObjectID: bigIno, Type: format.InodeItemKey})
		found := false
		for i, it := range leaf.Items {
			if it.Key.ObjectID == bigIno && it.Key.Type == format.InodeItemKey {
				in, err := format.UnmarshalInodeItem(it.Data)
				must(t, err)
				in.Nlink = 7
				leaf.Items[i].Data = format.MarshalInodeItem(in)
				found = true
			}
		}
		if !found {
			t.Fatal("no inode item of /big in s1")
		}
		writeNode(t, s.st.Vol, leaf)
		rep := fsckDevs(t, s.devs, Options{})
		expect(t, rep, want{code: Nlink, ino: bigIno})
		if p := rep.Problems[0]; p.Tree != "fs@s1" {
			t.Fatalf("problem in tree %q, want fs@s1", p.Tree)
		}
		// Snapshots are read-only: a repair leaves it, and says so.
		got := repairDevs(t, s.devs, ModeRepair)
		if got.Clean() || got.Problems[0].Fixed {
			t.Fatalf("repair changed a snapshot: %v", got.Problems)
		}
	})
	t.Run("snapshot-value-left", func(t *testing.T) {
		// A wrong value in a snapshot's own leaf (the root's size in s1)
		// is left, and the live tree's inode of the same number is not
		// set to the snapshot's count.
		s := newSurgeon(t, base)
		must(t, s.tx.Commit())
		k := format.Key{ObjectID: format.RootDirIno, Type: format.InodeItemKey}
		leaf := leafOf(t, s.st.Vol, snapshotRoot(t, s.st, "s1").Logical, k)
		for i, it := range leaf.Items {
			if it.Key == k {
				in, err := format.UnmarshalInodeItem(it.Data)
				must(t, err)
				in.Size += 7
				leaf.Items[i].Data = format.MarshalInodeItem(in)
			}
		}
		writeNode(t, s.st.Vol, leaf)
		expect(t, fsckDevs(t, s.devs, Options{}), want{code: DirSize, ino: format.RootDirIno})
		got := repairDevs(t, s.devs, ModeRepair)
		if len(got.Problems) != 1 || got.Problems[0].Tree != "fs@s1" || got.Problems[0].Fixed {
			t.Fatalf("after the repair: %v", got.Problems)
		}
		expect(t, fsckDevs(t, s.devs, Options{}), want{code: DirSize, ino: format.RootDirIno}) // the live tree still clean
	})
	t.Run("duplicate-name", func(t *testing.T) {
		s := newSurgeon(t, base)
		all, err := s.st.Snapshots()
		must(t, err)
		dup := all[0].SnapshotItem
		dup.UUID[0] ^= 0xff
		s.put(format.SnapshotTree, format.Key{ObjectID: 99, Type: format.SnapshotItemKey}, format.MarshalSnapshotItem(&dup))
		// The rejected item's tree counts as in use: its root has one
		// pointer more than its refs say (a delete of either item would
		// free the tree the other names).
		expect(t, s.check(Options{}), want{code: SnapshotBad}, want{code: MetaRefs, logical: dup.Root.Logical})
	})
	t.Run("live-entry-fix", func(t *testing.T) {
		// A live entry's type and a live directory item's hash key are
		// mended on an image with snapshots; s1's root leaf keeps its
		// own, right, entries.
		s := newSurgeon(t, base)
		root := uint64(format.RootDirIno)
		idx, e := s.entry(root, "mid")
		e.Type = format.FileTypeSymlink
		s.put(format.FSTree, format.Key{ObjectID: root, Type: format.DirIndexKey, Offset: idx}, format.MarshalDirEntry(e))
		s.put(format.FSTree, dirItemKey(root, "mid"), format.MarshalDirEntries([]format.DirEntry{e}))
		k := dirItemKey(root, "dir")
		to := k
		to.Offset++
		s.move(format.FSTree, k, to)
		expect(t, s.check(Options{}), want{code: DirItemHash, ino: root}, want{code: EntryType, ino: root})
		f := repairedClean(t, s)
		var err error
		for _, tree := range []string{"", "s1"} {
			v := f
			if tree != "" {
				v, err = f.OpenSnapshot(tree)
				must(t, err)
			}
			for name, typ := range map[string]format.FileType{"mid": format.FileTypeRegular, "dir": format.FileTypeDir} {
				in, err := v.Resolve("/"+name, false)
				if err != nil {
					t.Fatalf("%q: /%s: %v", tree, name, err)
				}
				found := false
				must(t, v.ReadDir(resolveIn(t, v, "/"), func(d fsys.DirEntry) bool {
					if d.Name == name {
						found = d.Ino == in.Ino && d.Type == typ
					}
					return true
				}))
				if !found {
					t.Fatalf("%q: /%s's entry is not a type %d entry of inode %d", tree, name, typ, in.Ino)
				}
			}
		}
	})
	t.Run("live-name-fix", func(t *testing.T) {
		// In the live tree: an entry naming no inode, and /mid's back
		// reference gone (an orphan, its entry without a ref). -y mends
		// the live names; s1 lists and reads as before.
		s1Before := treeListing(t, openedFS(t, base), "s1")
		s := newSurgeon(t, base)
		root := uint64(format.RootDirIno)
		s.link(root, "ghost", 90000, format.FileTypeRegular)
		mid := s.ino("/mid")
		s.del(format.FSTree, format.Key{ObjectID: mid, Type: format.InodeRefKey, Offset: root})
		expect(t, s.check(Options{}), want{code: Orphan, ino: mid}, want{code: EntryNoRef, ino: root}, want{code: EntryDangling, ino: root}, want{code: InodeMissing, ino: 90000})
		f := repairedClean(t, s)
		if got := treeListing(t, f, "s1"); !maps.Equal(got, s1Before) {
			t.Fatalf("s1 after the repair: %v\nbefore: %v", got, s1Before)
		}
		if in := resolveIn(t, f, "/mid"); in.Ino != mid {
			t.Fatalf("live /mid is inode %d, want %d", in.Ino, mid)
		}
	})
	t.Run("rejected-snapshot-kept", func(t *testing.T) {
		// s2 given s1's UUID: the check rejects its item (SNAPSHOT_BAD),
		// but the store still opens it. Its nodes and data count as in
		// use, and -y frees or re-counts nothing: after 200 new files
		// in the live tree s2 reads as before. (Not walked, its nodes
		// were META_LEAKED and -y freed them: the next write failed.)
		before := treeListing(t, openedFS(t, base), "s2")
		s := newSurgeon(t, base)
		all, err := s.st.Snapshots()
		must(t, err)
		var it format.SnapshotItem
		var id, uuid1 = uint64(0), [16]byte{}
		for _, x := range all {
			switch x.Name {
			case "s1":
				uuid1 = x.UUID
			case "s2":
				it, id = x.SnapshotItem, x.ID
			}
		}
		it.UUID = uuid1
		s.put(format.SnapshotTree, format.Key{ObjectID: id, Type: format.SnapshotItemKey}, format.MarshalSnapshotItem(&it))
		expect(t, s.check(Options{}), want{code: SnapshotBad})
		if got := repairDevs(t, s.devs, ModeRepair); got.Clean() {
			t.Fatalf("the rejected item went unreported: %v", got.Problems)
		}
		vol, err := volume.FromDevices(asDevices(s.devs), true)
		must(t, err)
		st, err := store.OpenVolume(vol)
		must(t, err)
		f, err := fsys.New(st, fsys.Options{})
		must(t, err)
		for i := range 200 {
			in, err := f.Create(fmt.Sprintf("/new%03d", i), fsys.Attr{Mode: 0o644})
			must(t, err)
			must(t, f.WriteAt(in, pattern(5000, byte(i)), 0))
		}
		must(t, f.Close())
		if got := treeListing(t, openedFS(t, s.devs), "s2"); !maps.Equal(got, before) {
			t.Fatalf("s2 after -y and 200 writes: %v\nbefore: %v", got, before)
		}
	})
	t.Run("live-extent-drop-low-refs", func(t *testing.T) {
		// Live /zeros made a fifo (its file extents dropped by -y) and
		// its first data extent's refs set to 1, though s1 and s2 point
		// at it too; a live file extent of /trunc that does not decode
		// keeps -y from trusting any data count (EXTENT_REFS unfixed):
		// -y drops /zeros's live file extents but frees no data extent;
		// s1 reads /zeros as before, also after 40 files come and go.
		s1Before := treeListing(t, openedFS(t, base), "s1")
		s := newSurgeon(t, base)
		z := s.ino("/zeros")
		l, n := s.diskExtent(z)
		s.inode(z, func(in *format.InodeItem) { in.Mode = syscall.S_IFIFO | 0o600 })
		k := format.Key{ObjectID: l, Type: format.ExtentItemKey, Offset: n}
		e, err := format.UnmarshalExtentItem(s.get(format.ExtentTree, k))
		must(t, err)
		e.Refs = 1
		s.put(format.ExtentTree, k, format.MarshalExtentItem(e))
		s.put(format.FSTree, format.Key{ObjectID: s.ino("/trunc"), Type: format.FileExtentKey}, []byte{1, 2, 3})
		rep := s.check(Options{})
		if !hasCode(rep.Problems, NotFileExtents) || !hasCode(rep.Problems, ExtentRefs) {
			t.Fatalf("damage not seen: %v", rep.Problems)
		}
		got := repairDevs(t, s.devs, ModeRepair)
		if !hasCode(got.Problems, NotFileExtents) || got.RepairLimited != "" {
			t.Fatalf("repair: %v (limited %q)", got.Problems, got.RepairLimited)
		}
		if got := treeListing(t, openedFS(t, s.devs), "s1"); !maps.Equal(got, s1Before) {
			t.Fatalf("s1 after the repair: %v\nbefore: %v", got, s1Before)
		}
		churn(t, s.devs)
		if got := treeListing(t, openedFS(t, s.devs), "s1"); !maps.Equal(got, s1Before) {
			t.Fatalf("s1 after the repair and 40 files: %v\nbefore: %v", got, s1Before)
		}
		if after := fsckDevs(t, s.devs, Options{CheckData: true}); hasCode(after.Problems, NotFileExtents) || hasCode(after.Problems, DataCopyBad) {
			t.Fatalf("after the repair: %v", after.Problems)
		}
	})
	t.Run("shared-leaf-low-refs-live-fix", func(t *testing.T) {
		// A leaf the live tree shares with s2 has a wrong nlink and an
		// INODE_REF that does not decode (written in place: both trees
		// show them) and its metadata item says refs 1. -y sets the refs
		// before it copies the leaf to mend the live tree (FS_ITEM_BAD,
		// fixed first, copied it with refs 1 and took no reference to its
		// data for the copy); s2 reads as before, after a repair cut short
		// one round in and the live file removed, after the repair, and
		// after 40 files.
		s := newSurgeon(t, sharedLeafImage(t, 300, false))
		leaf, ino, path := sharedLeaf(t, s)
		s.setLeafRefs(leaf.Logical, 1)
		must(t, s.tx.Commit())
		bad := false
		for i, it := range leaf.Items {
			switch {
			case it.Key == inodeKey(ino):
				in, err := format.UnmarshalInodeItem(it.Data)
				must(t, err)
				in.Nlink += 4
				leaf.Items[i].Data = format.MarshalInodeItem(in)
			case !bad && it.Key.Type == format.InodeRefKey && it.Key.ObjectID != ino:
				leaf.Items[i].Data = []byte{1, 2, 3} // FS_ITEM_BAD, fixed first
				bad = true
			}
		}
		writeNode(t, s.st.Vol, leaf)
		s2Before := snapshotTree(t, s.devs, "s2")
		rep := fsckDevs(t, s.devs, Options{})
		if !hasCode(rep.Problems, MetaRefs) || !hasCode(rep.Problems, Nlink) || !hasCode(rep.Problems, FSItemBad) {
			t.Fatalf("damage not seen: %v", rep.Problems)
		}
		// One round, as a repair cut short leaves it, then the live file
		// removed: its data extents must keep s2's reference.
		r := &repairer{open: opener(s.devs), opt: Options{Mode: ModeRepair}, all: []Problem{}, index: map[problemID]int{}}
		if _, err := r.round(0); err != nil {
			t.Fatal(err)
		}
		f2 := openedWritable(t, s.devs)
		must(t, f2.Remove(path))
		must(t, f2.Close())
		checkSnapshotKept(t, "after one round of -y and the live "+path+" removed", s2Before, snapshotTree(t, s.devs, "s2"))
		got := repairDevs(t, s.devs, ModeRepair)
		for _, p := range got.Problems {
			if p.Tree == format.FSTree.String() && !p.Fixed || (p.Code == MetaRefs && !p.Fixed) {
				t.Fatalf("-y left %v", p)
			}
		}
		checkSnapshotKept(t, "after -y", s2Before, snapshotTree(t, s.devs, "s2"))
		churn(t, s.devs)
		checkSnapshotKept(t, "after -y and 40 files", s2Before, snapshotTree(t, s.devs, "s2"))
		for _, p := range fsckDevs(t, s.devs, Options{CheckData: true}).Problems {
			if !strings.HasPrefix(p.Tree, "fs@") { // the snapshots keep their nlink: read-only
				t.Fatalf("after the repair: %v", p)
			}
		}
	})
	t.Run("shared-leaf-extent-item-gone", func(t *testing.T) {
		// In a leaf the live tree shares with s2: a data extent item
		// gone (FILE_EXTENT_NO_ITEM), another file extent that does not
		// decode (so no data count is trusted: the item gets no fix) and
		// a wrong nlink, written in place. Copying the leaf to mend the
		// live nlink would take a reference to the extent with no item
		// and drop the round's transaction, every round (nothing fixed):
		// -y leaves the live fixes, says why, and makes the others.
		s := newSurgeon(t, sharedLeafImage(t, 300, false))
		leaf, ino, _ := sharedLeaf(t, s)
		gone, garbled := -1, -1
		for i, it := range leaf.Items {
			var x format.FileExtentItem
			if it.Key.Type != format.FileExtentKey || format.DecodeFileExtentItem(it.Data, &x) != nil {
				continue
			}
			switch {
			case gone < 0 && x.Type != format.FileExtentInline && x.DiskLogical != 0:
				gone = i
				s.del(format.ExtentTree, format.Key{ObjectID: x.DiskLogical, Type: format.ExtentItemKey, Offset: x.DiskLen})
			case garbled < 0:
				garbled = i
			}
		}
		if gone < 0 || garbled < 0 {
			t.Fatalf("leaf %d: no two file extents to damage", leaf.Logical)
		}
		must(t, s.tx.Commit())
		leaf.Items[garbled].Data = []byte{1, 2, 3}
		for i, it := range leaf.Items {
			if it.Key == inodeKey(ino) {
				in, err := format.UnmarshalInodeItem(it.Data)
				must(t, err)
				in.Nlink += 4
				leaf.Items[i].Data = format.MarshalInodeItem(in)
			}
		}
		writeNode(t, s.st.Vol, leaf)
		rep := fsckDevs(t, s.devs, Options{})
		if !hasCode(rep.Problems, FileExtentNoItem) || !hasCode(rep.Problems, Nlink) || !hasCode(rep.Problems, FSItemBad) {
			t.Fatalf("damage not seen: %v", rep.Problems)
		}
		got := repairDevs(t, s.devs, ModeRepair)
		if !strings.Contains(got.RepairLimited, "counts") {
			t.Fatalf("repair_limited %q, want the counts named: %v", got.RepairLimited, got.Problems)
		}
		for _, p := range got.Problems {
			if p.Code == BGUsed && !p.Fixed { // the round's other fixes were not dropped with it
				t.Fatalf("-y left %v", p)
			}
		}
	})
	t.Run("live-value-fix", func(t *testing.T) {
		// A live inode's count and its directory's size repaired on an
		// image with snapshots; the snapshot's copy of the leaf is not
		// touched (its inode keeps its own, right, values).
		s := newSurgeon(t, base)
		mid := s.ino("/mid")
		s.inode(mid, func(in *format.InodeItem) { in.Nlink = 5 })
		s.inode(format.RootDirIno, func(in *format.InodeItem) { in.Size += 7 })
		expect(t, s.check(Options{}), want{code: Nlink, ino: mid}, want{code: DirSize, ino: format.RootDirIno})
		f := repairedClean(t, s)
		var err error
		for tree, want := range map[string]uint32{"": 1, "s1": 1} {
			v := f
			if tree != "" {
				v, err = f.OpenSnapshot(tree)
				must(t, err)
			}
			in, err := v.Resolve("/mid", false)
			if err != nil || in.Nlink != want {
				t.Fatalf("%q: /mid nlink %v (%v), want %d", tree, in, err, want)
			}
		}
	})
}

var errPowerCut = errors.New("power cut")

// cutDrop is an image cut off half-way through freeing deleted snapshot
// s's tree (/big and 400 files only s held), in steps of 8.
func cutDrop(t *testing.T) *device.MemDevice {
	t.Helper()
	f, devs := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	populate(t, f)
	addFiles(t, f, 400, true)
	_, err := f.CreateSnapshot("s")
	must(t, err)
	must(t, f.Remove("/big"))
	for i := range 400 {
		must(t, f.Remove(fmt.Sprintf("/dir/g%03d", i)))
	}
	must(t, f.Sync())
	deleteCut := func(rule device.Rule) (*device.MemDevice, error) {
		d := devs[0].Snapshot()
		g, err := fsys.OpenDevices([]device.Device{device.NewFaulty(d, rule)}, true, fsys.Options{DropStep: 8})
		must(t, err)
		return d, g.DeleteSnapshot("s")
	}
	writes := 0
	_, err = deleteCut(func(op device.OpKind, _, _ int64, count int) error {
		if op == device.OpWrite {
			writes = count + 1
		}
		return nil
	})
	must(t, err)
	d, err := deleteCut(device.FailAfter(writes/2, device.OpWrite, errPowerCut))
	if !errors.Is(err, errPowerCut) {
		t.Fatalf("cut delete: %v", err)
	}
	return d
}

// TestDropInProgressClean: an image cut off half-way through freeing a
// deleted snapshot's tree, in many small steps, checks clean, data
// included: what is left of the tree (its DROP_ITEM) counts toward node
// and data references and has no namespace to check; fsck reports no
// snapshot.
func TestDropInProgressClean(t *testing.T) {
	d := cutDrop(t)
	vol, err := volume.FromDevices([]device.Device{d}, false)
	must(t, err)
	st, err := store.OpenVolume(vol)
	must(t, err)
	if n, err := st.PendingDrops(); n != 1 || err != nil {
		t.Fatalf("%d drops pending (%v), want the cut one", n, err)
	}
	rep := fsckDevs(t, []*device.MemDevice{d}, Options{CheckData: true})
	expect(t, rep)
	if rep.Snapshots != 0 {
		t.Fatalf("%d snapshots checked, want 0", rep.Snapshots)
	}
}

// resolveIn is v's inode of p.
func resolveIn(t *testing.T, v *fsys.FS, p string) *fsys.Inode {
	t.Helper()
	in, err := v.Resolve(p, false)
	must(t, err)
	return in
}

// repairedClean repairs s's image, which must come out clean with
// nothing withheld (and check clean with data after), and opens it.
func repairedClean(t *testing.T, s *surgeon) *fsys.FS {
	t.Helper()
	got := repairDevs(t, s.devs, ModeRepair)
	if !got.Clean() || got.RepairLimited != "" {
		t.Fatalf("repair on a snapshot image: %v, limited %q", got.Problems, got.RepairLimited)
	}
	if after := fsckDevs(t, s.devs, Options{CheckData: true}); !after.Clean() {
		t.Fatalf("after the repair: %v", after.Problems)
	}
	st, err := store.OpenVolume(volumeOf(t, s.devs))
	must(t, err)
	f, err := fsys.New(st, fsys.Options{})
	must(t, err)
	return f
}

// treeListing is each entry of snapshot name's root: its inode, type
// and, for a regular file, the sha256 of its bytes.
func treeListing(t *testing.T, f *fsys.FS, name string) map[string]string {
	t.Helper()
	v, err := f.OpenSnapshot(name)
	must(t, err)
	out := map[string]string{}
	must(t, v.ReadDir(resolveIn(t, v, "/"), func(d fsys.DirEntry) bool {
		sum := ""
		if in, err := v.Inode(d.Ino); err == nil && d.Type == format.FileTypeRegular {
			buf := make([]byte, in.Size)
			n, err := v.ReadAt(in, buf, 0)
			sum = fmt.Sprintf("%x %d %v", sha256.Sum256(buf[:n]), n, err)
		}
		out[d.Name] = fmt.Sprint(d.Ino, d.Type, sum)
		return true
	}))
	return out
}

// TestDropItemRejectedKept: a DROP_ITEM the check rejects (its key offset
// not 0) whose tree the store still goes on dropping: its nodes and data
// look leaked and unreferenced to the check, and a data extent item it
// shares with /mid is gone. -y repairs only copies and superblocks while
// a snapshot-tree item is bad, and says so: freed, the next drop step
// would lower the refs of whatever file reused the space; rebuilt from
// the live tree's count, it would free /mid's data.
func TestDropItemRejectedKept(t *testing.T) {
	d := cutDrop(t)
	devs := []*device.MemDevice{d}
	// Through the store alone: an fsys open would finish the drop.
	vol, err := volume.FromDevices(asDevices(devs), true)
	must(t, err)
	st, err := store.OpenVolume(vol)
	must(t, err)
	tx, err := st.Begin()
	must(t, err)
	var k format.Key
	var b []byte
	must(t, tx.Tree(format.SnapshotTree).Scan(format.Key{}, format.MaxKey, func(it format.Item) (bool, error) {
		if it.Key.Type == format.DropItemKey {
			k, b = it.Key, bytes.Clone(it.Data)
		}
		return true, nil
	}))
	if b == nil {
		t.Fatal("no drop item")
	}
	must(t, tx.Tree(format.SnapshotTree).Delete(k))
	k.Offset = 1
	must(t, tx.Tree(format.SnapshotTree).Put(k, b))
	// And /mid's data extent item gone: the live tree and the dropping
	// one point at it; rebuilt with the live tree's count alone, the
	// next drop step would free it under /mid.
	mid, err := inspect.Lookup(st.Tree(format.FSTree), "/mid")
	must(t, err)
	xb, err := tx.Tree(format.FSTree).Get(format.Key{ObjectID: mid, Type: format.FileExtentKey})
	must(t, err)
	x, err := format.UnmarshalFileExtentItem(bytes.Clone(xb))
	must(t, err)
	must(t, tx.Tree(format.ExtentTree).Delete(format.Key{ObjectID: x.DiskLogical, Type: format.ExtentItemKey, Offset: x.DiskLen}))
	must(t, tx.Commit())
	must(t, st.Close())
	rep := fsckDevs(t, devs, Options{})
	if !hasCode(rep.Problems, ItemBad) || !hasCode(rep.Problems, ExtentUnreferenced) || !hasCode(rep.Problems, FileExtentNoItem) {
		t.Fatalf("damage not seen as expected: %v", rep.Problems)
	}
	got := repairDevs(t, devs, ModeRepair)
	for _, p := range got.Problems {
		if p.Fixed && p.Code != ItemBad && p.Pass != PassSuper {
			t.Errorf("-y %v beside a bad snapshot-tree item", p)
		}
	}
	if !strings.Contains(got.RepairLimited, "ITEM_BAD") {
		t.Errorf("repair_limited %q does not say why", got.RepairLimited)
	}
	if after := fsckDevs(t, devs, Options{}); !hasCode(after.Problems, ExtentUnreferenced) {
		t.Fatalf("the dropping tree's extents are gone after -y: %v", after.Problems)
	}
}

// sharedLeafImage is the populated image with files more (with data when
// data), snapshot s2 of it, and the last file removed after: nodes far
// from the change stay shared by the live tree and s2 (refs 2).
func sharedLeafImage(t *testing.T, files int, data bool) []*device.MemDevice {
	t.Helper()
	f, own := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	populate(t, f)
	addFiles(t, f, files, data)
	must(t, f.Sync())
	_, err := f.CreateSnapshot("s2")
	must(t, err)
	must(t, f.Remove(fmt.Sprintf("/dir/g%03d", files-1)))
	must(t, f.Close())
	return own
}

// sharedLeaf is a live leaf the snapshot shares (refs >= 2) that holds
// the inode item of a file with data: the leaf, the inode and its path.
func sharedLeaf(t *testing.T, s *surgeon) (*format.Node, uint64, string) {
	t.Helper()
	sb := s.st.Super()
	live := sb.Roots.Root(format.FSTree).Logical
	for _, p := range []string{"/zeros", "/trunc", "/sparse", "/mid"} {
		i := s.ino(p)
		l := leafOf(t, s.st.Vol, live, inodeKey(i))
		k := format.Key{ObjectID: l.Logical, Type: format.MetadataItemKey}
		if m, err := format.UnmarshalMetadataItem(s.get(format.ExtentTree, k)); err == nil && m.Refs >= 2 {
			return l, i, p
		}
	}
	t.Fatal("no live leaf shared with a snapshot")
	return nil, 0, ""
}

// addFiles makes /dir/g000.. /dir/gNNN, with a few KiB each when data.
func addFiles(t *testing.T, f *fsys.FS, n int, data bool) {
	t.Helper()
	for i := range n {
		in, err := f.Create(fmt.Sprintf("/dir/g%03d", i), fsys.Attr{Mode: 0o644})
		must(t, err)
		if data {
			must(t, f.WriteAt(in, pattern(3000+i*7, byte(i)), 0))
		}
	}
}

// setLeafRefs sets the refs of the leaf at l's METADATA_ITEM.
func (s *surgeon) setLeafRefs(l, refs uint64) {
	s.t.Helper()
	k := format.Key{ObjectID: l, Type: format.MetadataItemKey}
	m, err := format.UnmarshalMetadataItem(s.get(format.ExtentTree, k))
	must(s.t, err)
	m.Refs = refs
	s.put(format.ExtentTree, k, format.MarshalMetadataItem(m))
}
