package fsys

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/alloc"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/inuse"
)

// dropImage makes an image whose snapshot "a" alone holds 10000 files,
// half inline (a tree of three levels) and half in extents (the live
// tree removed them), closed; it returns its device and the space in use
// with the snapshot and, before any file, without it.
func dropImage(t *testing.T) (d *device.MemDevice, with, without uint64) {
	f, devs := newTestFS(t, 256<<20, 1)
	_, err := f.CreateSnapshot("keep") // the snapshot tree outlives the delete
	must(t, err)
	without = spaceUsed(f)
	for i := range dropFiles {
		in, err := f.Create(fmt.Sprintf("/f%05d", i), Attr{Mode: 0o644})
		must(t, err)
		n := 2000
		if i%2 == 1 {
			n = 5000 + i%3000
		}
		must(t, f.WriteAt(in, bytes.Repeat([]byte{byte(i) | 1}, n), 0)) // not zeros: those would be holes
	}
	must(t, f.Sync())
	_, err = f.CreateSnapshot("a")
	must(t, err)
	for i := range dropFiles {
		must(t, f.Remove(fmt.Sprintf("/f%05d", i)))
	}
	must(t, f.Sync())
	if lv := f.TreeRoot().Level; lv != 0 {
		t.Fatalf("live tree of level %d", lv)
	}
	with = spaceUsed(f)
	must(t, f.Close())
	return devs[0], with, without
}

const dropFiles = 10000

func spaceUsed(f *FS) (n uint64) {
	for _, bg := range f.st.BlockGroups() {
		n += bg.Used
	}
	return n
}

// TestDropInSteps: deleting a snapshot that alone holds 10000 files frees
// them in many bounded commits (DropStep), each a whole state: after a
// power cut at every one of the delete's writes the image opens read-only
// with the snapshot gone, the live tree intact and the reference counts
// right (what is left of the tree counted from its DROP_ITEM); a writer's
// open finishes the drop, gives the space back and clears
// IncompatDropping.
func TestDropInSteps(t *testing.T) {
	base, with, without := dropImage(t)
	const step = 256
	f := openWith(t, []device.Device{base.Snapshot()}, true, Options{DropStep: step})
	gen := f.st.Super().Generation
	a, err := f.st.FindSnapshot("a")
	must(t, err)
	if lv := a.Root.Level; lv < 2 {
		t.Fatalf("snapshot tree of level %d, want >= 2", lv)
	}
	must(t, f.DeleteSnapshot("a"))
	commits := f.st.Super().Generation - gen
	if commits < 20 {
		t.Fatalf("the delete took %d commits, want many steps of %d", commits, step)
	}
	if got := spaceUsed(f); got > without+(with-without)/10 {
		t.Fatalf("%d bytes in use after the delete: %d with the snapshot, %d before its files", got, with, without)
	}
	if f.st.Super().Incompat&format.IncompatDropping != 0 {
		t.Fatal("IncompatDropping left set")
	}
	checkRefs(t, f)
	must(t, f.Close())

	// The writes of the whole delete, then a cut after each of them.
	budget := 1 << 30
	g := openWith(t, []device.Device{cutDev{base.Snapshot(), &budget}}, true, Options{DropStep: step})
	must(t, g.DeleteSnapshot("a"))
	writes := 1<<30 - budget
	mid := 0
	for cut := 0; cut < writes; cut += max(1, writes/60) {
		d := base.Snapshot()
		b := cut
		g := openWith(t, []device.Device{cutDev{d, &b}}, true, Options{DropStep: step})
		if err := g.DeleteSnapshot("a"); err == nil || !errors.Is(err, errCut) {
			t.Fatalf("cut %d of %d: %v", cut, writes, err)
		}
		r := openWith(t, []device.Device{d}, false, Options{})
		snaps, err := r.Snapshots()
		must(t, err)
		if n, err := r.st.PendingDrops(); err != nil || n > 0 && (len(snaps) != 1 || r.st.Super().Incompat&format.IncompatDropping == 0) {
			t.Fatalf("cut %d: %d drops pending (%v) with snapshots %v, incompat %#x", cut, n, err, snaps, r.st.Super().Incompat)
		} else if n > 0 {
			mid++
			inuseHoldsDrops(t, r)
		}
		checkRefs(t, r)
		must(t, r.Close())
		w := openWith(t, []device.Device{d}, true, Options{DropStep: step})
		if n, _ := w.st.PendingDrops(); n != 0 || w.st.Super().Incompat&format.IncompatDropping != 0 {
			t.Fatalf("cut %d: a writer's open left %d drops", cut, n)
		}
		checkRefs(t, w)
		if snaps, _ := w.Snapshots(); len(snaps) == 1 && spaceUsed(w) > without+(with-without)/10 {
			t.Fatalf("cut %d: %d bytes in use after the drop finished", cut, spaceUsed(w))
		}
		must(t, w.Close())
	}
	t.Logf("%d commits, %d writes, %d of the cuts inside the drop", commits, writes, mid)
	if mid < 20 {
		t.Fatalf("only %d cuts fell inside the drop", mid)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// inuseHoldsDrops: the in-use walk (trimtool's guard) counts every node
// of the trees being dropped, found here from the DROP_ITEMs by a walk
// of their own.
func inuseHoldsDrops(t *testing.T, f *FS) {
	t.Helper()
	var nodes []uint64
	var walk func(l, gen uint64, lv int)
	walk = func(l, gen uint64, lv int) {
		nodes = append(nodes, l)
		n, err := f.st.ReadNode(format.FSTree, l, gen, lv)
		must(t, err)
		for _, p := range n.Ptrs {
			walk(p.Logical, p.Generation, lv-1)
		}
	}
	must(t, f.st.Tree(format.SnapshotTree).Scan(format.Key{}, format.MaxKey, func(it format.Item) (bool, error) {
		if it.Key.Type == format.DropItemKey {
			d, err := format.UnmarshalDropItem(it.Data)
			must(t, err)
			walk(d.Root.Logical, d.Root.Generation, int(d.Root.Level))
		}
		return true, nil
	}))
	var all []alloc.Range // everything called free: every reference conflicts
	for _, c := range f.st.Vol.Chunks.All() {
		all = append(all, alloc.Range{Start: c.Logical, Len: c.Length})
	}
	res := inuse.Check(f.st, all)
	held := map[uint64]bool{}
	for _, c := range res.Conflicts {
		if c.What == "node" {
			held[c.Logical] = true
		}
	}
	for _, l := range nodes {
		if !held[l] {
			t.Fatalf("node %d of a tree being dropped is not in use (%d nodes)", l, len(nodes))
		}
	}
}
