package fsys

import (
	"bytes"
	"runtime"
	"testing"
	"time"

	"github.com/ddfs/ddfs/format"
)

// TestBlockAheadTake: a block read ahead is handed over with its hash
// when it is still at the planned address and its bytes still have the
// stored sums; planned elsewhere, or damaged on the device after it was
// written, it is not (the caller reads it in turn, verified).
func TestBlockAheadTake(t *testing.T) {
	const bs = 16 << 10
	f, devs := newTestFS(t, 64<<20, 1)
	data := rnd(5, 3*bs)
	in := write(t, f, "/f", data)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	xs, err := f.extents(in.Ino, 0, 3*bs)
	if err != nil || len(xs) != 1 {
		t.Fatalf("extents %v %v", xs, err)
	}
	addr := xs[0].DiskLogical
	// Damage the third block's first sector on the device.
	tg, err := f.st.Vol.Locate(addr + 2*bs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := devs[0].WriteAt(make([]byte, 4096), int64(tg[0].Physical)); err != nil {
		t.Fatal(err)
	}
	r := f.NewBlockAhead(bs, format.CsumBLAKE3)
	defer r.Close()
	for k := uint64(0); k < 3; k++ {
		r.Plan(0, k*bs, addr+k*bs, bs)
	}
	r.Flush()
	for _, b := range r.q { // let the reader get to all three
		for b.state.Load() == aheadPlanned || b.state.Load() == aheadReading {
			runtime.Gosched()
		}
	}
	r.Begin(0)
	raw, hash, err := r.take(0, addr, bs)
	if err != nil || !bytes.Equal(raw, data[:bs]) || hash != format.DedupeHash(format.Checksum(format.CsumBLAKE3, data[:bs])) {
		t.Fatalf("block 0: %d bytes, err %v", len(raw), err)
	}
	if raw, _, err := r.take(bs, addr+bs+4096, bs); raw != nil || err != nil {
		t.Fatalf("block 1 planned elsewhere: got %d bytes, err %v", len(raw), err)
	}
	if raw, _, err := r.take(2*bs, addr+2*bs, bs); raw != nil || err != nil {
		t.Fatalf("damaged block 2: got %d bytes, err %v", len(raw), err)
	}
	if len(r.ring.out) != 1 || len(r.q) != 0 {
		t.Fatalf("%d pieces out, %d planned", len(r.ring.out), len(r.q))
	}
}

// TestBlockAheadLate: a block the reader holds longer than aheadWait (a
// busy machine can leave the reader unscheduled) is read in turn instead,
// and its buffer comes back once the reader is done with it.
func TestBlockAheadLate(t *testing.T) {
	const bs = 16 << 10
	f, _ := newTestFS(t, 64<<20, 1)
	r := f.NewBlockAhead(bs, format.CsumBLAKE3)
	defer r.Close()
	r.Plan(0, 0, 1<<20, bs)
	b := r.q[0]
	b.state.Store(aheadReading) // as if the reader had claimed it and stalled
	r.Begin(0)
	t0 := time.Now()
	if raw, _, err := r.take(0, 1<<20, bs); raw != nil || err != nil {
		t.Fatalf("stalled block taken: %d bytes, %v", len(raw), err)
	}
	if time.Since(t0) < aheadWait || len(r.late) != 1 || len(r.ring.out) != 1 {
		t.Fatalf("after %v: %d late, %d pieces out", time.Since(t0), len(r.late), len(r.ring.out))
	}
	b.state.Store(aheadDone)
	r.take(bs, 0, bs)
	if len(r.late) != 0 || len(r.ring.out) != 0 {
		t.Fatalf("done: %d late, %d pieces out", len(r.late), len(r.ring.out))
	}
}
