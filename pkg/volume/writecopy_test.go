package volume

import (
	"bytes"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
)

// WriteCopy must change exactly the copy it names.
func TestWriteCopyTouchesOneCopy(t *testing.T) {
	d1, d2 := device.NewMemDevice("a", 1<<20), device.NewMemDevice("b", 1<<20)
	v := New([]*Dev{{ID: 1, Dev: d1}, {ID: 2, Dev: d2}}, nil, true)
	item := &format.ChunkItem{Length: 1 << 16, Profile: format.ProfileRaid1,
		Stripes: []format.Stripe{{DevID: 1, Offset: 4096}, {DevID: 2, Offset: 8192}}}
	if err := v.AddChunk(1<<20, item); err != nil {
		t.Fatal(err)
	}
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
