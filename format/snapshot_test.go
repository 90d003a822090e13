package format

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func sampleSnapshot() *SnapshotItem {
	return &SnapshotItem{
		Root:       RootPtr{Logical: 1 << 22, Generation: 7, Level: 1},
		Generation: 9, Ctime: Timespec{Sec: 1700000000, Nsec: 5},
		UUID: [16]byte{1, 2}, ReceivedUUID: [16]byte{3}, ParentUUID: [16]byte{4},
		Name: "daily-2026-12-06",
	}
}

// TestSnapshotItemLayout: the bytes are FORMAT.md §6.12's, and they
// decode back to the same value.
func TestSnapshotItemLayout(t *testing.T) {
	s := sampleSnapshot()
	b := MarshalSnapshotItem(s)
	if len(b) != 104+len(s.Name) || b[0x10] != 1 || b[24] != 9 || b[44] != byte(len(s.Name)) || b[48] != 1 || b[64] != 3 || b[80] != 4 || string(b[104:]) != s.Name {
		t.Fatalf("layout: % x", b)
	}
	got, err := UnmarshalSnapshotItem(b)
	if err != nil || !reflect.DeepEqual(got, s) {
		t.Fatalf("round trip: %+v %v", got, err)
	}
}

// TestSnapshotItemRefused: every field the spec bounds is checked.
func TestSnapshotItemRefused(t *testing.T) {
	for name, mut := range map[string]func(b []byte) []byte{
		"short":            func(b []byte) []byte { return b[:103] },
		"name length":      func(b []byte) []byte { b[44]++; return b },
		"reserved root":    func(b []byte) []byte { b[20] = 1; return b },
		"reserved 46":      func(b []byte) []byte { b[47] = 1; return b },
		"reserved 96":      func(b []byte) []byte { b[100] = 1; return b },
		"no root":          func(b []byte) []byte { copy(b[0:8], make([]byte, 8)); return b },
		"root level":       func(b []byte) []byte { b[16] = MaxLevel; return b },
		"root newer":       func(b []byte) []byte { b[8] = 10; return b },
		"root gen 0":       func(b []byte) []byte { b[8] = 0; return b },
		"nsec":             func(b []byte) []byte { copy(b[40:44], []byte{0, 0xca, 0x9a, 0x3b}); return b },
		"zero uuid":        func(b []byte) []byte { b[48], b[49] = 0, 0; return b },
		"slash in name":    func(b []byte) []byte { b[105] = '/'; return b },
		"NUL in name":      func(b []byte) []byte { b[106] = 0; return b },
		"dot name":         func(b []byte) []byte { b = append(b[:104], '.'); b[44], b[45] = 1, 0; return b },
		"empty name":       func(b []byte) []byte { b = b[:104]; b[44], b[45] = 0, 0; return b },
		"trailing garbage": func(b []byte) []byte { return append(b, 'x') },
	} {
		b := mut(MarshalSnapshotItem(sampleSnapshot()))
		if _, err := UnmarshalSnapshotItem(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: accepted (%v)", name, err)
		}
	}
}

func FuzzUnmarshalSnapshotItem(f *testing.F) {
	f.Add(MarshalSnapshotItem(sampleSnapshot()))
	f.Add(bytes.Repeat([]byte{0}, 104))
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, UnmarshalSnapshotItem, MarshalSnapshotItem)
	})
}

// TestSnapshotRootNeedsFlag: a snapshot tree root is read only under
// IncompatSnapshots (§3.3).
func TestSnapshotRootNeedsFlag(t *testing.T) {
	sb := exampleSuperblock()
	sb.Roots.SetRoot(SnapshotTree, RootPtr{Logical: 1 << 24, Generation: 1})
	b, err := MarshalSuperblock(sb)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := UnmarshalSuperblock(b); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("snapshot root without the flag: %v", err)
	}
	sb.Incompat |= IncompatSnapshots
	if b, err = MarshalSuperblock(sb); err != nil {
		t.Fatal(err)
	}
	if _, err := UnmarshalSuperblock(b); err != nil {
		t.Fatalf("with the flag: %v", err)
	}
}

func sampleReceive() *ReceiveItem {
	return &ReceiveItem{Parked: RootPtr{Logical: 1 << 20, Generation: 5, Level: 1}, Generation: 9,
		ReceivedUUID: [16]byte{1, 2}, ParentUUID: [16]byte{3}, Base: 2, Applied: 4096, Name: "nightly"}
}

// TestReceiveItemRefusals: every rule of §6.13's RECEIVE_ITEM is held.
func TestReceiveItemRefusals(t *testing.T) {
	if r, err := UnmarshalReceiveItem(MarshalReceiveItem(sampleReceive())); err != nil || *r != *sampleReceive() {
		t.Fatalf("round trip: %+v %v", r, err)
	}
	for name, mut := range map[string]func(r *ReceiveItem){
		"no parked root":    func(r *ReceiveItem) { r.Parked.Logical = 0 },
		"parked gen 0":      func(r *ReceiveItem) { r.Parked.Generation = 0 },
		"parked too new":    func(r *ReceiveItem) { r.Generation = 4 },
		"level":             func(r *ReceiveItem) { r.Parked.Level = MaxLevel },
		"zero uuid":         func(r *ReceiveItem) { r.ReceivedUUID = [16]byte{} },
		"base without uuid": func(r *ReceiveItem) { r.ParentUUID = [16]byte{} },
		"uuid without base": func(r *ReceiveItem) { r.Base = 0 },
		"bad name":          func(r *ReceiveItem) { r.Name = "a/b" },
		"empty name":        func(r *ReceiveItem) { r.Name = "" },
	} {
		r := sampleReceive()
		mut(r)
		if _, err := UnmarshalReceiveItem(MarshalReceiveItem(r)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: accepted (%v)", name, err)
		}
	}
	b := MarshalReceiveItem(sampleReceive())
	for _, at := range []int{17, 23, 82, 87} {
		c := bytes.Clone(b)
		c[at] = 1
		if _, err := UnmarshalReceiveItem(c); !errors.Is(err, ErrCorrupt) {
			t.Errorf("reserved byte %d: accepted", at)
		}
	}
	if _, err := UnmarshalReceiveItem(append(b, 'x')); !errors.Is(err, ErrCorrupt) {
		t.Error("trailing byte accepted")
	}
}

func FuzzUnmarshalReceiveItem(f *testing.F) {
	f.Add(MarshalReceiveItem(sampleReceive()))
	f.Add(bytes.Repeat([]byte{0}, 88))
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b, UnmarshalReceiveItem, MarshalReceiveItem)
	})
}
