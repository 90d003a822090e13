package volume

import (
	"bytes"
	"errors"
	"testing"
)

// ReadCopy of a whole-copy chunk (raid1 here) reads the named copy's
// device at the stripe offset plus the offset into the chunk, refuses a
// range past the chunk's end and allocates nothing (the FUSE mount's 4K
// reads go through it).
func TestReadCopyWhole(t *testing.T) {
	v, d1, d2, item := raid1Pair(t, false)
	// Each device holds its own pattern where the chunk's byte 12288 lies.
	a, b := bytes.Repeat([]byte{0xa1}, 512), bytes.Repeat([]byte{0xb2}, 512)
	if _, err := d1.WriteAt(a, 4096+12288); err != nil {
		t.Fatal(err)
	}
	if _, err := d2.WriteAt(b, 8192+12288); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 512)
	for mirror, want := range [][]byte{a, b, a} { // mirror 2 wraps to copy 0
		clear(got)
		if err := v.ReadCopy(1<<20+12288, got, mirror); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("mirror %d read %#x, want %#x", mirror, got[0], want[0])
		}
	}
	if err := v.ReadCopy(1<<20+1<<16-256, got, 0); err == nil {
		t.Fatal("a read past the chunk's end was served")
	}
	if n := testing.AllocsPerRun(100, func() { _ = v.ReadCopy(1<<20+12288, got, 1) }); n != 0 {
		t.Fatalf("ReadCopy allocates %v times a read", n)
	}
	gone := New([]*Dev{{ID: 1, Dev: d1}}, nil, false)
	if err := gone.AddChunk(1<<20, item); err != nil {
		t.Fatal(err)
	}
	if err := gone.ReadCopy(1<<20, got, 1); !errors.Is(err, ErrMissingDevice) {
		t.Fatalf("copy on a missing device: %v, want ErrMissingDevice", err)
	}
}
