package volume

import (
	"bytes"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
)

// WriteCopy must change exactly the copy it names.
func TestWriteCopyTouchesOneCopy(t *testing.T) {
	v, _, _, _ := raid1Pair(t, true)
	old := bytes.Repeat([]byte{1}, 512)
	if err := v.Write(1<<20, old); err != nil {
		t.Fatal(err)
	}
	fresh := bytes.Repeat([]byte{2}, 512)
	if err := v.WriteCopy(1<<20, fresh, 1); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 512)
	for mirror, want := range [][]byte{old, fresh} {
		if err := v.ReadCopy(1<<20, got, mirror); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("copy %d holds %d, want %d", mirror, got[0], want[0])
		}
	}
	if err := v.WriteCopy(1<<20, fresh, 2); err == nil {
		t.Fatal("copy 2 of a two-copy chunk accepted")
	}
}

// raid1Pair is a volume of two 1 MiB memory devices with one raid1 chunk
// of 64 KiB at logical 1 MiB, its copies at offset 4096 of device 1 and
// 8192 of device 2.
func raid1Pair(t *testing.T, writable bool) (*Volume, *device.MemDevice, *device.MemDevice, *format.ChunkItem) {
	t.Helper()
	d1, d2 := device.NewMemDevice("a", 1<<20), device.NewMemDevice("b", 1<<20)
	v := New([]*Dev{{ID: 1, Dev: d1}, {ID: 2, Dev: d2}}, nil, writable)
	item := &format.ChunkItem{Length: 1 << 16, Profile: format.ProfileRaid1,
		Stripes: []format.Stripe{{DevID: 1, Offset: 4096}, {DevID: 2, Offset: 8192}}}
	if err := v.AddChunk(1<<20, item); err != nil {
		t.Fatal(err)
	}
	return v, d1, d2, item
}
