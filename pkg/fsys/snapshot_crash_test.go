package fsys

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
)

// snapState is what a committed state holds: the live namespace and
// each snapshot's.
type snapState struct {
	live  snapModel
	snaps map[string]snapModel
}

func (s snapState) clone() snapState {
	c := snapState{live: s.live.clone(), snaps: map[string]snapModel{}}
	for k, v := range s.snaps {
		c.snaps[k] = v // snapshots never change
	}
	return c
}

// nsEqual reports whether f's files are the model's.
func nsEqual(t *testing.T, f *FS, m snapModel) bool {
	t.Helper()
	for i := 0; i < snapFiles; i++ {
		p := fmt.Sprintf("/f%d", i)
		want, ok := m[p]
		in, err := f.Resolve(p, true)
		if !ok || errors.Is(err, syscall.ENOENT) {
			if ok != (err == nil) {
				return false
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, in.Size)
		if n, err := f.ReadAt(in, got, 0); uint64(n) != in.Size || err != nil && n != len(got) {
			t.Fatalf("%s: read %d of %d: %v", p, n, in.Size, err)
		}
		if !bytes.Equal(got, want) {
			return false
		}
	}
	return true
}

// stateIs reports whether f holds state s.
func stateIs(t *testing.T, f *FS, s snapState) bool {
	t.Helper()
	all, err := f.Snapshots()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, sn := range all {
		names = append(names, sn.Name)
	}
	if !slices.Equal(names, slices.Sorted(maps.Keys(s.snaps))) || !nsEqual(t, f, s.live) {
		return false
	}
	for _, name := range names {
		v, err := f.OpenSnapshot(name)
		if err != nil {
			t.Fatal(err)
		}
		if !nsEqual(t, v, s.snaps[name]) {
			return false
		}
	}
	return true
}

// snapCrashRun opens d through a device cut after budget writes and runs
// snapshot create, rollback and delete between random changes. states
// are the committed states in order (states[0]: as opened); done is how
// many of them the run saw committed.
func snapCrashRun(t *testing.T, d *device.MemDevice, base snapState, budget int) (states []snapState, done int, left int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(39, 21))
	f := openWith(t, []device.Device{cutDev{d, &budget}}, true, Options{MaxInline: 64, DropStep: 3}) // deletes and rollbacks drop in many steps
	cur := base.clone()
	states = append(states, cur.clone())
	step := func(commit func() error, after func()) bool {
		for i := 0; i < 6; i++ {
			snapOp(t, f, cur.live, rng)
		}
		// The operation commits the pending changes first, then itself.
		states = append(states, cur.clone())
		after()
		states = append(states, cur.clone())
		if err := commit(); err != nil {
			if !errors.Is(err, errCut) {
				t.Fatal(err)
			}
			return false
		}
		done = len(states)
		return true
	}
	cut := func(err error) bool {
		if err != nil && !errors.Is(err, errCut) {
			t.Fatal(err)
		}
		return err == nil
	}
	// A receive (§6.13): while it runs, and after a cut, the state is the
	// one before it (the next writer undoes it); its finish adds "r".
	receive := func() bool {
		for i := 0; i < 6; i++ {
			snapOp(t, f, cur.live, rng)
		}
		states = append(states, cur.clone())
		if !cut(f.BeginReceive(format.ReceiveItem{Name: "r", ReceivedUUID: [16]byte{9}}, "")) {
			return false
		}
		done = len(states)
		recv := snapModel{}
		for i := 0; i < 12; i++ {
			// Writes only, their errors returned: the background data
			// writes may meet the cut inside WriteAt.
			if !cut(recvWrite(f, recv, rng)) || i%4 == 3 && !cut(f.Sync()) {
				return false
			}
		}
		next := cur.clone()
		next.snaps["r"] = recv.clone()
		states = append(states, next)
		if _, err := f.FinishReceive(); !cut(err) {
			return false
		}
		cur, done = next, len(states)
		return true
	}
	_ = step(func() error { _, err := f.CreateSnapshot("b"); return err }, func() { cur.snaps["b"] = cur.live.clone() }) &&
		step(func() error { return f.Rollback("a") }, func() { cur.live = cur.snaps["a"].clone() }) &&
		step(func() error { return f.DeleteSnapshot("b") }, func() { delete(cur.snaps, "b") }) &&
		step(func() error { return f.DeleteSnapshot("a") }, func() { delete(cur.snaps, "a") }) &&
		receive()
	return states, done, budget
}

// TestSnapshotCrashMatrix cuts the power after every write of a run of
// snapshot create, rollback and delete and a receive (a random subset of the unflushed
// writes lands): the next open finds a committed state the run went
// through, no older than the last operation that returned, and reference
// counts that match an independent count.
func TestSnapshotCrashMatrix(t *testing.T) {
	rng := rand.New(rand.NewPCG(39, 20))
	f, devs := newTestFS(t, 128<<20, 1)
	f.opt.MaxInline = 64
	base := snapState{live: snapModel{}, snaps: map[string]snapModel{}}
	for i := 0; i < 40; i++ {
		snapOp(t, f, base.live, rng)
	}
	if _, err := f.CreateSnapshot("a"); err != nil {
		t.Fatal(err)
	}
	base.snaps["a"] = base.live.clone()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	states, done, left := snapCrashRun(t, devs[0].Snapshot(), base, 1<<30)
	if done != len(states) {
		t.Fatalf("uncut run: %d of %d states", done, len(states))
	}
	writes := 1<<30 - left
	t.Logf("%d writes, %d states", writes, len(states))
	for cut := 0; cut < writes; cut++ {
		d := devs[0].Snapshot()
		_, done, _ := snapCrashRun(t, d, base, cut)
		d.CrashPartial(rand.New(rand.NewPCG(uint64(cut), 22)))
		g := openDevices(t, []device.Device{d})
		found := -1
		for i := max(done-1, 0); i < len(states) && found < 0; i++ {
			if stateIs(t, g, states[i]) {
				found = i
			}
		}
		if found < 0 {
			t.Fatalf("cut %d: the set is in none of the states from %d on", cut, max(done-1, 0))
		}
		checkRefs(t, g)
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// recvWrite writes a random range of a random file of f (made if new),
// as model m records it.
func recvWrite(f *FS, m snapModel, rng *rand.Rand) error {
	p := fmt.Sprintf("/f%d", rng.IntN(snapFiles))
	in, err := f.Resolve(p, true)
	if errors.Is(err, syscall.ENOENT) {
		in, err = f.Create(p, Attr{Mode: 0o644})
	}
	if err != nil {
		return err
	}
	off, buf := rng.IntN(256<<10), make([]byte, 1+rng.IntN(24<<10))
	for i := range buf {
		buf[i] = byte(rng.IntN(4))
	}
	if err := f.WriteAt(in, buf, uint64(off)); err != nil {
		return err
	}
	data := m[p]
	if len(data) < off+len(buf) {
		data = append(data, make([]byte, off+len(buf)-len(data))...)
	}
	copy(data[off:], buf)
	m[p] = data
	return nil
}
