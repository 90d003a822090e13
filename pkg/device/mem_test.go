package device

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

func readAll(t *testing.T, d Device, off int64, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := d.ReadAt(b, off); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return b
}

func TestMemSparse(t *testing.T) {
	d := NewMemDevice("mem", 1<<40)
	data := pattern(10000, 1)
	off := int64(1<<39 - 3000) // straddles pages
	if _, err := d.WriteAt(data, off); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, d, off, len(data)); !bytes.Equal(got, data) {
		t.Fatal("read back differs")
	}
	if n := len(d.cur); n != 3 {
		t.Fatalf("%d pages allocated, want 3", n)
	}
	if got := readAll(t, d, 0, 4096); !bytes.Equal(got, make([]byte, 4096)) {
		t.Fatal("unwritten range not zero")
	}
	// Discard zeroes, freeing whole pages.
	if err := d.Discard(off+100, 8000); err != nil {
		t.Fatal(err)
	}
	want := append([]byte(nil), data...)
	clear(want[100:8100])
	if got := readAll(t, d, off, len(data)); !bytes.Equal(got, want) {
		t.Fatal("discard did not zero the range")
	}
	if n := len(d.cur); n != 2 {
		t.Fatalf("%d pages after discard, want 2", n)
	}
	if _, err := d.WriteAt([]byte{1}, 1<<40); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("write past end: %v", err)
	}
	if n, err := d.ReadAt(make([]byte, 10), 1<<40-4); n != 4 || err != io.EOF {
		t.Fatalf("read across end = %d, %v", n, err)
	}
}

func TestMemCrash(t *testing.T) {
	old := bytes.Repeat([]byte{0xAA}, 8192)
	newer := bytes.Repeat([]byte{0xBB}, 8192)

	d := NewMemDevice("mem", 1<<20)
	d.WriteAt(old, 4096)
	d.Flush()
	d.WriteAt(newer, 4096)
	d.Discard(0, 4096) // nothing there; still a pending op
	if d.Unflushed() != 2 {
		t.Fatalf("Unflushed = %d, want 2", d.Unflushed())
	}
	snap := d.Snapshot()
	if got := readAll(t, d, 4096, 8192); !bytes.Equal(got, newer) {
		t.Fatal("reads do not see unflushed write")
	}
	d.Crash()
	if got := readAll(t, d, 4096, 8192); !bytes.Equal(got, old) {
		t.Fatal("after Crash the unflushed write survived")
	}
	if d.Unflushed() != 0 {
		t.Fatalf("Unflushed after crash = %d", d.Unflushed())
	}
	if got := readAll(t, snap, 4096, 8192); !bytes.Equal(got, old) {
		t.Fatal("Snapshot is not the durable state")
	}
}

func TestMemCrashPartial(t *testing.T) {
	// Blocks of 4 atomic units, so a write can tear inside a block.
	const n, bs = 16, 4 * atomicWriteSize
	old := bytes.Repeat([]byte{0xAA}, bs)
	newer := bytes.Repeat([]byte{0xBB}, bs)
	seen := map[string]bool{}
	for seed := uint64(0); seed < 20; seed++ {
		d := NewMemDevice("mem", n*bs)
		for i := range n {
			d.WriteAt(old, int64(i)*bs)
		}
		d.Flush()
		for i := range n {
			d.WriteAt(newer, int64(i)*bs)
		}
		d.CrashPartial(rand.New(rand.NewPCG(seed, 1)))

		got := readAll(t, d, 0, n*bs)
		var nNew, nOld, nTorn int
		for i := range n {
			blk := got[i*bs : (i+1)*bs]
			switch {
			case bytes.Equal(blk, newer):
				nNew++
			case bytes.Equal(blk, old):
				nOld++
			default:
				// A torn block is new atomic units then old ones.
				cut := bytes.IndexByte(blk, 0xAA)
				if cut%atomicWriteSize != 0 || !bytes.Equal(blk[:cut], newer[:cut]) || !bytes.Equal(blk[cut:], old[cut:]) {
					t.Fatalf("seed %d: block %d is not torn at an atomic-unit boundary", seed, i)
				}
				nTorn++
			}
		}
		if nTorn > 1 {
			t.Fatalf("seed %d: %d torn blocks, want at most 1", seed, nTorn)
		}
		if nNew+nOld+nTorn != n {
			t.Fatalf("seed %d: counts %d+%d+%d", seed, nNew, nOld, nTorn)
		}
		switch {
		case nNew == n:
			seen["all"] = true
		case nNew == 0 && nTorn == 0:
			seen["none"] = true
		default:
			seen["between"] = true
		}
		if nTorn == 1 {
			seen["torn"] = true
		}
	}
	// Fixed seeds: the mix is deterministic, and must include real
	// in-between states and tears.
	if !seen["between"] || !seen["torn"] {
		t.Fatalf("outcomes seen: %v", seen)
	}

	// Same seed, same state.
	a, b := NewMemDevice("a", 1<<16), NewMemDevice("b", 1<<16)
	for _, d := range []*MemDevice{a, b} {
		for i := range 16 {
			d.WriteAt(pattern(4096, byte(i)), int64(i)*4096)
		}
		d.CrashPartial(rand.New(rand.NewPCG(7, 7)))
	}
	if !bytes.Equal(readAll(t, a, 0, 1<<16), readAll(t, b, 0, 1<<16)) {
		t.Fatal("CrashPartial not deterministic for a seed")
	}
}
