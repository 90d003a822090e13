package volume

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
)

// ReadChunk reads around an absent device; WriteChunk writes only the
// targets it is told to; ReplaceChunk switches what the map resolves.
func TestRemapPrimitives(t *testing.T) {
	d1, d2, d3 := device.NewMemDevice("a", 1<<20), device.NewMemDevice("b", 1<<20), device.NewMemDevice("c", 1<<20)
	v := New([]*Dev{{ID: 1, Dev: d1}, {ID: 2, Dev: d2}, {ID: 3, Dev: d3}}, nil, true)
	item := &format.ChunkItem{Length: 1 << 16, Profile: format.ProfileRaid1,
		Stripes: []format.Stripe{{DevID: 1, Offset: 4096}, {DevID: 2, Offset: 8192}}}
	if err := v.AddChunk(1<<20, item); err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte{7}, 4096)
	if err := v.Write(1<<20, data); err != nil {
		t.Fatal(err)
	}
	old, _ := v.Chunks.Lookup(1 << 20)
	oldC := &Chunk{Logical: old.Logical, ChunkItem: old.ChunkItem}
	moved := &format.ChunkItem{Length: 1 << 16, Profile: format.ProfileRaid1,
		Stripes: []format.Stripe{{DevID: 1, Offset: 4096}, {DevID: 3, Offset: 65536}}}
	newC := &Chunk{Logical: 1 << 20, ChunkItem: moved}
	gone := v.DetachDevice(2)
	if gone == nil || gone.ID != 2 {
		t.Fatal("DetachDevice did not return device 2")
	}
	got := make([]byte, 4096)
	// Copy 1 (device 2) is absent: the read falls back to copy 0.
	if err := v.ReadChunk(oldC, 0, got, 1); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read around the absent device: %v", err)
	}
	// Other bytes, so a write to device 1's kept stripe would show.
	marked := bytes.Repeat([]byte{9}, 4096)
	onlyDev3 := func(tg Target) bool { return tg.DevID == 3 }
	if err := v.WriteChunk(newC, 0, marked, onlyDev3); err != nil {
		t.Fatal(err)
	}
	if err := v.Chunks.ReplaceChunk(1<<20, moved); err != nil {
		t.Fatal(err)
	}
	for m, want := range [][]byte{data, marked} {
		clear(got)
		if err := v.ReadCopy(1<<20, got, m); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("copy %d after the switch: %v, holds %d", m, err, got[0])
		}
	}
	// Nothing landed outside device 3's new stripe.
	probe := make([]byte, 4096)
	d3.ReadAt(probe, 0)
	if !bytes.Equal(probe, make([]byte, 4096)) {
		t.Fatal("WriteChunk wrote outside the new stripe")
	}
	if err := v.Chunks.ReplaceChunk(1<<20, &format.ChunkItem{Length: 1 << 15}); err == nil {
		t.Fatal("a layout of another length was accepted")
	}
	// With no copy left, the error says which device is missing.
	v.DetachDevice(1)
	if err := v.ReadChunk(oldC, 0, got, 0); !errors.Is(err, ErrMissingDevice) {
		t.Fatalf("no copy readable: %v", err)
	}
}
