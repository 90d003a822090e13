package device

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func TestRecordReplay(t *testing.T) {
	const size = 64 << 10
	log := NewLog()
	mems := []*MemDevice{NewMemDevice("a", size), NewMemDevice("b", size)}
	devs := []Device{log.Wrap(mems[0], 0), log.Wrap(mems[1], 1)}

	steps := []func() error{
		func() error { _, err := devs[0].WriteAt(pattern(4096, 1), 0); return err },
		func() error { _, err := devs[1].WriteAt(pattern(4096, 2), 8192); return err },
		func() error { return devs[0].Flush() },
		func() error { return devs[1].Flush() },
		func() error { _, err := devs[0].WriteAt(pattern(100, 3), 50); return err },
		func() error { return devs[1].Discard(8192, 4096) },
		func() error { _, err := devs[1].WriteAt(pattern(512, 4), 0); return err },
		func() error { return devs[1].Flush() },
		func() error { _, err := devs[0].WriteAt(pattern(4096, 5), 4096); return err },
		func() error { return devs[0].Flush() },
	}
	// Contents of both devices after each step, to compare with replay.
	var want [][2][]byte
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		want = append(want, [2][]byte{readAll(t, mems[0], 0, size), readAll(t, mems[1], 0, size)})
	}

	ops := log.Ops()
	if len(ops) != len(steps) {
		t.Fatalf("logged %d ops, want %d", len(ops), len(steps))
	}
	kinds := []OpKind{OpWrite, OpWrite, OpFlush, OpFlush, OpWrite, OpDiscard, OpWrite, OpFlush, OpWrite, OpFlush}
	devIdx := []int{0, 1, 0, 1, 0, 1, 1, 1, 0, 0}
	for i, op := range ops {
		if op.Kind != kinds[i] || op.Dev != devIdx[i] {
			t.Fatalf("op %d = %v on %d, want %v on %d", i, op.Kind, op.Dev, kinds[i], devIdx[i])
		}
	}
	if ops[4].Off != 50 || ops[4].Len != 100 || !bytes.Equal(ops[4].Data, pattern(100, 3)) {
		t.Fatalf("op 4 = %+v", ops[4])
	}
	pts := FlushPoints(ops)
	if want := []int{3, 4, 8, 10}; len(pts) != len(want) || pts[0] != 3 || pts[1] != 4 || pts[2] != 8 || pts[3] != 10 {
		t.Fatalf("FlushPoints = %v, want %v", pts, want)
	}

	for _, upto := range append([]int{0}, pts...) {
		fresh := []*MemDevice{NewMemDevice("a", size), NewMemDevice("b", size)}
		if err := Replay(ops, upto, fresh); err != nil {
			t.Fatal(err)
		}
		for dev := range fresh {
			exp := make([]byte, size)
			if upto > 0 {
				exp = want[upto-1][dev]
			}
			if !bytes.Equal(readAll(t, fresh[dev], 0, size), exp) {
				t.Fatalf("replay to %d: device %d differs", upto, dev)
			}
		}
	}

	if err := Replay(ops, len(ops)+1, nil); err == nil {
		t.Fatal("Replay past the log succeeded")
	}
	if err := Replay(ops, 2, mems[:1]); err == nil {
		t.Fatal("Replay with a missing device succeeded")
	}
}

// TestReplayCrashPerDevice: a flush of device a makes nothing of device b
// durable. b's write, issued before a's flush but never flushed on b, must
// be lost in some crash states; a's flushed write never.
func TestReplayCrashPerDevice(t *testing.T) {
	const size = 64 << 10
	log := NewLog()
	mems := []*MemDevice{NewMemDevice("a", size), NewMemDevice("b", size)}
	a, b := log.Wrap(mems[0], 0), log.Wrap(mems[1], 1)
	a.WriteAt(pattern(4096, 1), 0)
	b.WriteAt(pattern(4096, 2), 0)
	a.Flush()
	a.WriteAt(pattern(4096, 3), 4096)
	ops := log.Ops()
	lostB, keptB := 0, 0
	for seed := uint64(0); seed < 40; seed++ {
		devs := []*MemDevice{NewMemDevice("a", size), NewMemDevice("b", size)}
		if err := ReplayCrash(ops, len(ops), devs, rand.New(rand.NewPCG(seed, 1))); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(readAll(t, devs[0], 0, 4096), pattern(4096, 1)) {
			t.Fatalf("seed %d: the write flushed on a was lost", seed)
		}
		switch got := readAll(t, devs[1], 0, 4096); {
		case bytes.Equal(got, make([]byte, 4096)):
			lostB++
		case bytes.Equal(got, pattern(4096, 2)):
			keptB++
		}
	}
	if lostB == 0 || keptB == 0 {
		t.Fatalf("b's unflushed write: lost %d, kept %d times of 40; want both", lostB, keptB)
	}
}
