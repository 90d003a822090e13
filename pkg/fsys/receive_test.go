package fsys

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/check"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

func receiveItem(name string, parent [16]byte) format.ReceiveItem {
	return format.ReceiveItem{Name: name, ReceivedUUID: [16]byte{0xee, byte(len(name))}, ParentUUID: parent}
}

// readOnlyView opens a committed copy of d read-only, as ddfs ls does.
func readOnlyView(t *testing.T, d *device.MemDevice) *FS {
	t.Helper()
	return openWith(t, []device.Device{d.Snapshot()}, false, Options{})
}

// fsckClean requires fsck --check-data of a committed copy of d to find nothing.
func fsckClean(t *testing.T, d *device.MemDevice, what string) *check.Report {
	t.Helper()
	vol, err := volume.FromDevices([]device.Device{d.Snapshot()}, false)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := check.CheckVolume(vol, check.Options{CheckData: true})
	if err != nil || !rep.Clean() {
		t.Fatalf("%s: fsck %v %v", what, err, rep.Problems)
	}
	return rep
}

// TestReceiveParksLive: while a receive builds its tree (over several
// commits), readers see the live namespace as it was and fsck is clean;
// finishing makes the tree a snapshot carrying the stream's uuids, and
// the live namespace comes back with its inode numbers safe from reuse.
func TestReceiveParksLive(t *testing.T) {
	f, devs := newTestFS(t, 256<<20, 1)
	write(t, f, "/live", rnd(1, 50000))
	if err := f.BeginReceive(receiveItem("r1", [16]byte{}), ""); err != nil {
		t.Fatal(err)
	}
	for i, p := range []string{"/a", "/b", "/c"} {
		write(t, f, p, rnd(uint64(10+i), 70000))
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	v := readOnlyView(t, devs[0])
	if got := readAll(t, v, "/live"); !bytes.Equal(got, rnd(1, 50000)) {
		t.Fatal("a reader during the receive does not see the live namespace")
	}
	if _, err := v.Resolve("/a", false); err == nil {
		t.Fatal("a reader sees the half-received tree")
	}
	fsckClean(t, devs[0], "during the receive")
	if snaps, _ := f.Snapshots(); len(snaps) != 0 {
		t.Fatalf("snapshots during the receive: %v", snaps)
	}
	id, err := f.FinishReceive()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readAll(t, f, "/live"), rnd(1, 50000)) {
		t.Fatal("live namespace not back")
	}
	s, err := f.st.FindSnapshot("r1")
	if err != nil || s.ID != id || s.ReceivedUUID != receiveItem("r1", [16]byte{}).ReceivedUUID {
		t.Fatalf("snapshot %+v %v", s, err)
	}
	r, err := f.OpenSnapshot("r1")
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range []string{"/a", "/b", "/c"} {
		if !bytes.Equal(readAll(t, r, p), rnd(uint64(10+i), 70000)) {
			t.Fatalf("received %s differs", p)
		}
	}
	if _, err := r.Resolve("/live", false); err == nil {
		t.Fatal("the received tree holds the live file")
	}
	r.Close()
	// New live files must not take the received tree's inode numbers.
	in := write(t, f, "/new", []byte("x"))
	for _, p := range []string{"/a", "/b", "/c"} {
		v, _ := f.OpenSnapshot("r1")
		if rin, _ := v.Resolve(p, false); rin.Ino == in.Ino {
			t.Fatalf("inode %d reused", in.Ino)
		}
		v.Close()
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if f.st.Super().Incompat&format.IncompatReceive != 0 {
		t.Fatal("receive flag left set")
	}
	checkRefs(t, f)
	fsckClean(t, devs[0], "after the receive")
}

// TestReceiveAbortFreesAll: an abandoned receive, whether undone by the
// receiver or by the next writer after a power cut, leaves the image as
// it was: the live namespace, no snapshot, no flag, and its data space
// back (the allocator's count).
func TestReceiveAbortFreesAll(t *testing.T) {
	for _, crash := range []bool{false, true} {
		f, devs := newTestFS(t, 256<<20, 1)
		write(t, f, "/live", rnd(2, 40000))
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		before := physical(f)
		if err := f.BeginReceive(receiveItem("r", [16]byte{}), ""); err != nil {
			t.Fatal(err)
		}
		write(t, f, "/partial", rnd(3, 300000))
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		write(t, f, "/unsynced", rnd(4, 10000))
		if crash {
			f = reopenFS(t, devs) // the writer undoes the receive at open
		} else {
			if err := f.AbortReceive(); err != nil {
				t.Fatal(err)
			}
		}
		if _, ok, err := f.st.Receiving(); ok || err != nil {
			t.Fatalf("crash %v: receive still in progress (%v)", crash, err)
		}
		if got := physical(f); got != before {
			t.Fatalf("crash %v: %d data bytes in use, %d before the receive", crash, got, before)
		}
		if !bytes.Equal(readAll(t, f, "/live"), rnd(2, 40000)) {
			t.Fatalf("crash %v: live namespace lost", crash)
		}
		if snaps, _ := f.Snapshots(); len(snaps) != 0 || f.st.Super().Incompat&(format.IncompatReceive|format.IncompatSnapshots) != 0 {
			t.Fatalf("crash %v: snapshots %v, incompat %#x", crash, snaps, f.st.Super().Incompat)
		}
		fsckClean(t, devs[0], "after the abort")
	}
}

// TestReceiveOnBase: an incremental receive starts from its base
// snapshot's tree, shares it, and leaves the base as it was. The live
// tree, reopened, holds lower inode numbers than the base: the files the
// receive makes must not take the base's.
func TestReceiveOnBase(t *testing.T) {
	f, devs := newTestFS(t, 256<<20, 1)
	write(t, f, "/kept", rnd(5, 90000))
	write(t, f, "/gone", rnd(6, 9000))
	if _, err := f.CreateSnapshot("base"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/kept", "/gone"} { // live differs from the base
		if err := f.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f = reopenFS(t, devs)
	if err := f.BeginReceive(receiveItem("next", [16]byte{1}), "base"); err != nil {
		t.Fatal(err)
	}
	if err := f.Remove("/gone"); err != nil {
		t.Fatal(err)
	}
	write(t, f, "/added", rnd(7, 5000))
	if _, err := f.FinishReceive(); err != nil {
		t.Fatal(err)
	}
	next, _ := f.OpenSnapshot("next")
	if !bytes.Equal(readAll(t, next, "/kept"), rnd(5, 90000)) || !bytes.Equal(readAll(t, next, "/added"), rnd(7, 5000)) {
		t.Fatal("received tree differs")
	}
	if _, err := next.Resolve("/gone", false); err == nil {
		t.Fatal("removed file still in the received tree")
	}
	next.Close()
	base, _ := f.OpenSnapshot("base")
	if !bytes.Equal(readAll(t, base, "/gone"), rnd(6, 9000)) {
		t.Fatal("the base changed")
	}
	base.Close()
	if _, err := f.Resolve("/kept", false); err == nil {
		t.Fatal("live namespace not back")
	}
	if err := f.BeginReceive(receiveItem("x", [16]byte{1}), "nosuch"); !errors.Is(err, store.ErrNoSnapshot) {
		t.Fatalf("receive on a missing base: %v", err)
	}
	checkRefs(t, f)
	fsckClean(t, devs[0], "after an incremental receive")
}
