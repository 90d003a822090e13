package fsys

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/alloc"
	"github.com/ddfs/ddfs/pkg/check"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/inuse"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// snapFiles is how many files the workload uses: enough extents that
// the fs tree grows internal nodes, whose sharing is what is tested.
const snapFiles = 40

// snapModel is the content of every file of a namespace.
type snapModel map[string][]byte

func (m snapModel) clone() snapModel {
	c := snapModel{}
	for k, v := range m {
		c[k] = bytes.Clone(v)
	}
	return c
}

// snapOp applies one random change to the live namespace and the model.
func snapOp(t *testing.T, f *FS, m snapModel, rng *rand.Rand) {
	t.Helper()
	p := fmt.Sprintf("/f%d", rng.IntN(snapFiles))
	data, exists := m[p]
	switch op := rng.IntN(10); {
	case !exists || op < 6: // write a random range (the file made if new)
		in, err := f.Resolve(p, true)
		if errors.Is(err, syscall.ENOENT) || err != nil && !exists {
			in, err = f.Create(p, Attr{Mode: 0o644})
		}
		if err != nil {
			t.Fatal(err)
		}
		off := rng.IntN(256 << 10)
		buf := make([]byte, 1+rng.IntN(24<<10))
		for i := range buf {
			buf[i] = byte(rng.IntN(4)) // compressible, with zero runs
		}
		if err := f.WriteAt(in, buf, uint64(off)); err != nil {
			t.Fatal(err)
		}
		if len(data) < off+len(buf) {
			data = append(data, make([]byte, off+len(buf)-len(data))...)
		}
		copy(data[off:], buf)
		m[p] = data
	case op < 8: // truncate
		in, err := f.Resolve(p, true)
		if err != nil {
			t.Fatal(err)
		}
		n := rng.IntN(len(data) + 1)
		if err := f.Truncate(in, uint64(n)); err != nil {
			t.Fatal(err)
		}
		m[p] = data[:n]
	default:
		if err := f.Remove(p); err != nil {
			t.Fatal(err)
		}
		delete(m, p)
	}
}

// checkNamespace compares every file of f with the model.
func checkNamespace(t *testing.T, f *FS, m snapModel, what string) {
	t.Helper()
	for i := 0; i < snapFiles; i++ {
		p := fmt.Sprintf("/f%d", i)
		want, ok := m[p]
		_, err := f.Resolve(p, true)
		if !ok {
			if !errors.Is(err, syscall.ENOENT) {
				t.Fatalf("%s: %s: %v, want ENOENT", what, p, err)
			}
			continue
		}
		if got := readAll(t, f, p); !bytes.Equal(got, want) {
			t.Fatalf("%s: %s reads back %d bytes, want %d (or different bytes)", what, p, len(got), len(want))
		}
	}
}

// checkRefs counts, independently of the code under test, the pointers
// to every node reachable from the committed roots and the snapshots
// (each node visited once) and the EXTENT_DATA items of distinct leaves
// pointing at each data extent, and compares them with every
// METADATA_ITEM's and EXTENT_ITEM's refs (FORMAT.md §6.12). A node or
// extent with an item but no pointer is a leak.
func checkRefs(t *testing.T, f *FS) {
	t.Helper()
	st := f.st
	nodes, data := map[uint64]uint64{}, map[uint64]uint64{}
	seen := map[uint64]bool{}
	var walk func(owner format.TreeID, r format.RootPtr)
	walk = func(owner format.TreeID, r format.RootPtr) {
		nodes[r.Logical]++
		if seen[r.Logical] {
			return
		}
		seen[r.Logical] = true
		n, err := st.ReadNode(owner, r.Logical, r.Generation, int(r.Level))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range n.Ptrs {
			walk(owner, format.RootPtr{Logical: p.Logical, Generation: p.Generation, Level: r.Level - 1})
		}
		for _, it := range n.Items {
			if owner != format.FSTree || it.Key.Type != format.FileExtentKey {
				continue
			}
			x, err := format.UnmarshalFileExtentItem(it.Data)
			if err != nil {
				t.Fatal(err)
			}
			if x.Type != format.FileExtentInline && x.DiskLogical != 0 {
				data[x.DiskLogical]++
			}
		}
	}
	sb := st.Super()
	for id := format.TreeID(1); id <= format.NumTrees; id++ {
		if r := sb.Roots.Root(id); r.Logical != 0 {
			walk(id, r)
		}
	}
	snaps, err := st.Snapshots()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snaps {
		walk(format.FSTree, s.Root)
	}
	// What is left of trees being dropped (DROP_ITEM roots, §6.12).
	if sb.Roots.Root(format.SnapshotTree).Logical != 0 {
		err := st.Tree(format.SnapshotTree).Scan(format.Key{}, format.MaxKey, func(it format.Item) (bool, error) {
			if it.Key.Type == format.DropItemKey {
				d, err := format.UnmarshalDropItem(it.Data)
				if err != nil {
					return false, err
				}
				walk(format.FSTree, d.Root)
			}
			return true, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	items := 0
	err = st.Tree(format.ExtentTree).Scan(format.Key{}, format.MaxKey, func(it format.Item) (bool, error) {
		l := it.Key.ObjectID
		switch it.Key.Type {
		case format.MetadataItemKey:
			m, err := format.UnmarshalMetadataItem(it.Data)
			if err != nil {
				return false, err
			}
			if m.Refs != nodes[l] {
				t.Errorf("node %d (%v): refs %d, %d pointers", l, m.Owner, m.Refs, nodes[l])
			}
			delete(nodes, l)
		case format.ExtentItemKey:
			e, err := format.UnmarshalExtentItem(it.Data)
			if err != nil {
				return false, err
			}
			if e.Refs != data[l] {
				t.Errorf("data extent %d: refs %d, %d pointing leaf items", l, e.Refs, data[l])
			}
			delete(data, l)
		}
		items++
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) > 0 || len(data) > 0 {
		t.Errorf("reachable without an item: nodes %v, data extents %v", slices.Sorted(maps.Keys(nodes)), slices.Sorted(maps.Keys(data)))
	}
	if t.Failed() {
		t.FailNow()
	}
}

// TestSnapshotsModel: random changes with snapshots taken, deleted and
// rolled back to at random; every snapshot keeps reading as the namespace was when it was
// taken, the live one as the model says, writes to a snapshot fail with
// EROFS, the reference counts match an independent count after every
// step, and once every snapshot and file is gone nothing is left
// allocated to them.
func TestSnapshotsModel(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { snapshotsModel(t, seed) })
	}
}

func snapshotsModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(39, seed))
	f, _ := newTestFS(t, 512<<20, 1)
	f.opt.MaxInline = 64
	live := snapModel{}
	snaps := map[string]snapModel{}
	next := 0
	for step := 0; step < 400; step++ {
		snapOp(t, f, live, rng)
		switch r := rng.IntN(20); {
		case r < 3:
			name := fmt.Sprintf("s%d", next)
			next++
			if _, err := f.CreateSnapshot(name); err != nil {
				t.Fatal(err)
			}
			snaps[name] = live.clone()
		case r < 5 && len(snaps) > 0:
			names := slices.Sorted(maps.Keys(snaps))
			name := names[rng.IntN(len(names))]
			if err := f.DeleteSnapshot(name); err != nil {
				t.Fatal(err)
			}
			delete(snaps, name)
		case r < 6 && len(snaps) > 0:
			names := slices.Sorted(maps.Keys(snaps))
			name := names[rng.IntN(len(names))]
			if err := f.Rollback(name); err != nil {
				t.Fatal(err)
			}
			live = snaps[name].clone()
			checkNamespace(t, f, live, "after rollback to "+name)
		case r < 8:
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
			checkRefs(t, f)
			atClean(t, f) // fsck, with data: snapshots, shared nodes and their counts
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	checkRefs(t, f)
	checkNamespace(t, f, live, "live")
	for name, m := range snaps {
		v, err := f.OpenSnapshot(name)
		if err != nil {
			t.Fatal(err)
		}
		checkNamespace(t, v, m, "snapshot "+name)
		in, err := v.Resolve("/", true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := v.Create("/new", Attr{Mode: 0o644}); !errors.Is(err, syscall.EROFS) {
			t.Fatalf("create in snapshot %s: %v, want EROFS", name, err)
		}
		_ = in
		if err := v.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.CreateSnapshot("s0"); len(snaps) > 0 && snaps["s0"] != nil && !errors.Is(err, store.ErrSnapshotExists) {
		t.Fatalf("second snapshot s0: %v", err)
	}
	// Everything gone: nothing of the data may stay allocated.
	all, err := f.Snapshots()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		if err := f.DeleteSnapshot(s.Name); err != nil {
			t.Fatal(err)
		}
	}
	for p := range live {
		if err := f.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	checkRefs(t, f)
	n := 0
	err = f.st.Tree(format.ExtentTree).Scan(format.Key{}, format.MaxKey, func(it format.Item) (bool, error) {
		if it.Key.Type == format.ExtentItemKey {
			n++
		}
		return true, nil
	})
	if err != nil || n != 0 {
		t.Fatalf("%d data extents left after every file and snapshot went (%v)", n, err)
	}
}

// TestInuseSeesSnapshots: the walk trim and free-space checks trust
// (pkg/inuse) counts what only a snapshot references: a file removed
// from the live tree keeps its data and nodes in use.
func TestInuseSeesSnapshots(t *testing.T) {
	for _, parked := range []bool{false, true} {
		inuseSees(t, parked)
	}
}

// inuseSees: a file only a snapshot keeps, or (parked) only the live tree
// a receive in progress parked (§6.13), is in use.
func inuseSees(t *testing.T, parked bool) {
	f, _ := newTestFS(t, 256<<20, 1)
	data := bytes.Repeat([]byte("snapshot data "), 50000)
	in, err := f.Create("/f", Attr{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.WriteAt(in, data, 0); err != nil {
		t.Fatal(err)
	}
	xs, err := f.extents(in.Ino, 0, in.Size)
	if err != nil || len(xs) == 0 {
		t.Fatalf("extents %v %v", xs, err)
	}
	if parked {
		if err := f.BeginReceive(format.ReceiveItem{Name: "r", ReceivedUUID: [16]byte{1}}, ""); err != nil {
			t.Fatal(err)
		}
	} else {
		if _, err := f.CreateSnapshot("s"); err != nil {
			t.Fatal(err)
		}
		if err := f.Remove("/f"); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	var all []alloc.Range // call everything free: every reference conflicts
	for _, c := range f.st.Vol.Chunks.All() {
		all = append(all, alloc.Range{Start: c.Logical, Len: c.Length})
	}
	res := inuse.Check(f.st, all)
	if !res.Sure() {
		t.Fatalf("walk not sure: %+v", res)
	}
	for _, x := range xs {
		found := false
		for _, c := range res.Conflicts {
			found = found || c.What == "file extent" && c.Logical == x.DiskLogical
		}
		if !found {
			t.Fatalf("parked %v: extent %d of the file only a snapshot or the parked tree keeps is not in use", parked, x.DiskLogical)
		}
	}
}

// TestRededupeKeepsSnapshots: offline dedupe cuts extents in place only
// where no other tree points at them; a snapshot sharing the file's leaf
// keeps reading its bytes, and the counts stay exact.
func TestRededupeKeepsSnapshots(t *testing.T) {
	const bs = 128 << 10
	f, _ := newTestFS(t, 256<<20, 1)
	a := rnd(41, 6*bs)
	copy(a[4*bs:], a[:2*bs]) // blocks 4 and 5 repeat 0 and 1
	write(t, f, "/a", a)
	if _, err := f.CreateSnapshot("s"); err != nil {
		t.Fatal(err)
	}
	in, err := f.Resolve("/a", true)
	if err != nil {
		t.Fatal(err)
	}
	var rs RededupeStats
	rededupeAll(t, f, in, RededupeOptions{Block: bs, Hash: format.CsumBLAKE3}, &rs)
	if rs.Shared == 0 {
		t.Fatalf("nothing shared: %+v", rs)
	}
	checkRefs(t, f)
	v, err := f.OpenSnapshot("s")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readAll(t, v, "/a"), a) || !bytes.Equal(readAll(t, f, "/a"), a) {
		t.Fatal("a reads back wrong after the dedupe")
	}
}

// TestSnapshotsSurviveReopen: after a crash and a reopen the snapshots
// still read as taken, the open knows which nodes may be shared (a write
// after it must unshare, not free, what a snapshot keeps), and fsck
// refuses the image instead of calling shared nodes damage.
func TestSnapshotsSurviveReopen(t *testing.T) {
	rng := rand.New(rand.NewPCG(39, 7))
	f, devs := newTestFS(t, 256<<20, 1)
	f.opt.MaxInline = 64
	live := snapModel{}
	for i := 0; i < 60; i++ {
		snapOp(t, f, live, rng)
	}
	if _, err := f.CreateSnapshot("before"); err != nil {
		t.Fatal(err)
	}
	kept := live.clone()
	g := reopenFS(t, devs)    // every fs-tree node still shared
	for i := 0; i < 60; i++ { // changes after the open rewrite shared leaves
		snapOp(t, g, live, rng)
	}
	if err := g.Sync(); err != nil {
		t.Fatal(err)
	}
	checkRefs(t, g)
	checkNamespace(t, g, live, "live after reopen")
	v, err := g.OpenSnapshot("before")
	if err != nil {
		t.Fatal(err)
	}
	checkNamespace(t, v, kept, "snapshot after reopen")
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	vol, err := volume.FromDevices([]device.Device{devs[0]}, false)
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := check.CheckVolume(vol, check.Options{CheckData: true}); err != nil || !rep.Clean() || rep.Nodes == 0 {
		t.Fatalf("fsck of an image with snapshots: %v %v", err, rep.Problems)
	}
}

// TestChangeFSIDKeepsSnapshots: set-uuid rewrites the header of every
// node a snapshot keeps too (its shared ones once): after the change,
// the snapshot reads as taken under the new fsid.
func TestChangeFSIDKeepsSnapshots(t *testing.T) {
	rng := rand.New(rand.NewPCG(39, 30))
	f, devs := newTestFS(t, 256<<20, 1)
	f.opt.MaxInline = 64
	live := snapModel{}
	for i := 0; i < 60; i++ {
		snapOp(t, f, live, rng)
	}
	if _, err := f.CreateSnapshot("s"); err != nil {
		t.Fatal(err)
	}
	kept := live.clone()
	for i := 0; i < 60; i++ {
		snapOp(t, f, live, rng)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.ChangeFSID([16]byte{9, 9}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	g := reopenFS(t, devs)
	defer g.Close()
	if g.st.Super().FSID != [16]byte{9, 9} {
		t.Fatal("fsid not changed")
	}
	checkNamespace(t, g, live, "live after the fsid change")
	v, err := g.OpenSnapshot("s")
	if err != nil {
		t.Fatal(err)
	}
	checkNamespace(t, v, kept, "snapshot after the fsid change")
	checkRefs(t, g)
}

// rededupeAll passes a whole file through Rededupe and commits.
func rededupeAll(t *testing.T, f *FS, in *Inode, o RededupeOptions, st *RededupeStats) {
	t.Helper()
	step := f.Rededupe(in, o, st)
	for more := true; more; {
		var err error
		if more, err = step(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}
