package store

import (
	"bytes"
	"errors"
	"slices"
	"syscall"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/volume"
)

// openWithout opens the set on devs, degraded: its other members are gone.
func openWithout(t *testing.T, devs []*device.MemDevice) *FS {
	t.Helper()
	var ds []device.Device
	for _, d := range devs {
		ds = append(ds, d)
	}
	vol, err := volume.FromDevices(ds, true)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := OpenDegraded(vol)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// checkReadable checks the model on a set that may lack members: every
// tree item reads, and every data extent reads as written from each copy
// on a present device, from one at least.
func (m *relocModel) checkReadable(t *testing.T, fs *FS) {
	t.Helper()
	checkModel(t, fs, m.items)
	for at, want := range m.data {
		read := 0
		for c := 0; c < fs.Vol.Copies(at); c++ {
			got := make([]byte, len(want))
			if err := fs.Vol.ReadCopy(at, got, c); err != nil {
				continue // a copy on a missing member
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("data %d copy %d differs from what was written", at, c)
			}
			read++
		}
		if read == 0 {
			t.Fatalf("data %d: no copy reads", at)
		}
	}
}

// without is devs less the ones at the indexes in drop.
func without(devs []*device.MemDevice, drop ...int) []*device.MemDevice {
	var out []*device.MemDevice
	for i, d := range devs {
		if !slices.Contains(drop, i) {
			out = append(out, d)
		}
	}
	return out
}

// replaceInTurn makes a set of profile p on n devices, loses the members
// gone (devids), replaces each in turn with --degraded's path (a spare
// each), checking after each that everything reads, and returns the
// filesystem on the whole set, its devices and the model.
func replaceInTurn(t *testing.T, p format.Profile, n int, gone []uint64) (*FS, []*device.MemDevice, *relocModel) {
	t.Helper()
	devs := memDevs(n+len(gone), 1<<30)
	fs := create(t, devs[:n], p, p)
	m := fillModel(t, fs, 36, 3)
	for _, id := range gone {
		if stripesOn(fs, id) == 0 {
			t.Fatalf("device %d holds nothing", id)
		}
	}
	fs.Close()
	var lost []int
	for _, id := range gone {
		lost = append(lost, int(id)-1)
	}
	set := without(devs[:n], lost...)
	fs = openWithout(t, set)
	m.checkReadable(t, fs)
	for i, id := range gone {
		spare := devs[n+i]
		if _, err := fs.ReplaceDevice(id, NewDevice{Dev: spare, Path: spare.Name()}, nil); err != nil {
			t.Fatalf("replace device %d (%d of %d gone): %v", id, len(gone)-i, len(gone), err)
		}
		if stripesOn(fs, id) != 0 {
			t.Fatalf("device %d still holds %d stripes", id, stripesOn(fs, id))
		}
		m.checkReadable(t, fs)
		fs.Close()
		set = append(set, spare)
		fs = openWithout(t, set)
		m.checkReadable(t, fs)
	}
	if fs.Degraded() {
		t.Fatalf("set still degraded after every replace: %v", fs.Missing())
	}
	fs.Close()
	fs = reopen(t, set, false)
	m.check(t, fs) // every copy of every node and extent, as written
	for _, c := range fs.Vol.Chunks.All() {
		if pi, _ := c.Profile.Info(); !pi.Striped && len(c.Stripes) != pi.Copies || c.Profile != p && c.Type == format.ChunkData {
			t.Fatalf("chunk %d is %v on %d stripes after the replaces", c.Logical, c.Profile, len(c.Stripes))
		}
	}
	return fs, set, m
}

// loseEach opens the set without each subset of one or two (k) of devs
// in turn and checks everything still reads.
func loseEach(t *testing.T, devs []*device.MemDevice, k int, m *relocModel) {
	t.Helper()
	for i := range devs {
		drops := [][]int{{i}}
		if k == 2 {
			drops = nil
			for j := i + 1; j < len(devs); j++ {
				drops = append(drops, []int{i, j})
			}
		}
		for _, d := range drops {
			fs := openWithout(t, without(devs, d...))
			m.checkReadable(t, fs)
			fs.Close()
		}
	}
}

// TestReplaceTwoMissingRaid1C3 is issue 36: raid1c3 on three devices,
// two lost; replacing them one at a time rebuilds each chunk's stripe of
// the replaced device from the surviving copy, the other missing stripe
// waiting for its own replace. After both the set survives the loss of
// any device, and after the balance replace hints at (its own commits
// made raid1 chunks while two devices were present) of any two.
func TestReplaceTwoMissingRaid1C3(t *testing.T) {
	fs, devs, m := replaceInTurn(t, format.ProfileRaid1C3, 3, []uint64{2, 3})
	n, data, meta := fs.BelowProfile()
	t.Logf("%d chunks below profile after the replaces: %v", n, layout(fs))
	if _, err := fs.Balance(&data, &meta, nil); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := fs.BelowProfile(); n != 0 {
		t.Fatalf("%d chunks below profile after balance", n)
	}
	fs.Close()
	loseEach(t, devs, 1, m)
	loseEach(t, devs, 2, m)
}

// TestReplaceMissingRaid10: raid10 on four devices, one lost, or one of
// each pair (every chunk pairs devices 1,2 and 3,4 here: replaceInTurn
// reads everything degraded first); the pair's surviving member is the
// source of each rebuilt stripe.
func TestReplaceMissingRaid10(t *testing.T) {
	for _, gone := range [][]uint64{{2}, {2, 4}} {
		fs, devs, m := replaceInTurn(t, format.ProfileRaid10, 4, gone)
		fs.Close()
		loseEach(t, devs, 1, m)
	}
}

// TestFinishReplaceTwoMissing: a replace of device 2 on raid1c3 minus two
// that fails after the new device joined (EIO on it after n writes) is
// finished by FinishReplace on a fresh open, device 3's stripes still
// kept missing; replacing device 3 then makes the set whole.
func TestFinishReplaceTwoMissing(t *testing.T) {
	joined := 0
	for n := 7; n <= 14; n++ { // the writes around the join's commit
		devs := memDevs(5, 1<<30)
		fs := create(t, devs[:3], format.ProfileRaid1C3, format.ProfileRaid1C3)
		m := fillModel(t, fs, 37, 3)
		fs.Close()
		fs = openWithout(t, devs[:1])
		bad := device.NewFaulty(devs[3], device.FailAfter(n, device.OpWrite, syscall.EIO))
		id, err := fs.ReplaceDevice(2, NewDevice{Dev: bad, Path: devs[3].Name()}, nil)
		fs.Close()
		if err == nil || id == 0 || !member(t, devs[0], id) {
			continue // done before the fault, or failed before the join committed
		}
		joined++
		fs = openWithout(t, []*device.MemDevice{devs[0], devs[3]})
		// Device 2 is gone already when only a superblock write of the
		// commit that dropped it failed.
		if err := fs.FinishReplace(2, id, nil); err != nil && !errors.Is(err, ErrNoDevice) {
			t.Fatalf("EIO after %d writes: finish: %v", n, err)
		}
		if _, err := fs.ReplaceDevice(3, NewDevice{Dev: devs[4], Path: devs[4].Name()}, nil); err != nil {
			t.Fatalf("EIO after %d writes: replace 3: %v", n, err)
		}
		fs.Close()
		fs = reopen(t, []*device.MemDevice{devs[0], devs[3], devs[4]}, false)
		m.check(t, fs)
		fs.Close()
	}
	if joined < 4 {
		t.Fatalf("%d faults struck after the new device joined, want 4 at least", joined)
	}
}

// member reports whether devid is a member of the set dev belongs to, as
// committed.
func member(t *testing.T, dev *device.MemDevice, devid uint64) bool {
	t.Helper()
	fs := openWithout(t, []*device.MemDevice{dev})
	defer fs.Close()
	return slices.ContainsFunc(fs.DevItems(), func(d *format.DevItem) bool { return d.DevID == devid })
}
