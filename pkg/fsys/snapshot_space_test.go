package fsys

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
)

// TestSnapshotSpace: after random writes, overwrites and removals with
// snapshots taken between them, each snapshot's exclusive data bytes are
// what deleting it frees (measured by the allocator's data usage on a
// copy of the image, not by the code under test), its referenced bytes
// are at least its exclusive ones, and a snapshot of an unchanged tree
// holds nothing exclusive.
func TestSnapshotSpace(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { snapshotSpace(t, seed) })
	}
}

func snapshotSpace(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 77))
	f, devs := newTestFS(t, 512<<20, 1)
	for i := range 40 {
		p := fmt.Sprintf("/f%d", rng.IntN(12))
		switch rng.IntN(4) {
		case 0:
			f.Remove(p)
		default:
			in, err := f.Resolve(p, false)
			if err != nil {
				in = write(t, f, p, nil)
			}
			off := uint64(rng.IntN(8)) << 16
			if err := f.WriteAt(in, rnd(seed*100+uint64(i), 4096*(1+rng.IntN(40))), off); err != nil {
				t.Fatal(err)
			}
		}
		if i%10 == 9 {
			if _, err := f.CreateSnapshot(fmt.Sprintf("s%d", i/10)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := f.CreateSnapshot("same"); err != nil { // nothing changed since s3
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	snaps, err := f.Snapshots()
	if err != nil {
		t.Fatal(err)
	}
	var roots []format.RootPtr
	for _, s := range snaps {
		roots = append(roots, s.Root)
	}
	all, err := f.st.Spaces(roots) // one walk, shared leaves read once
	if err != nil {
		t.Fatal(err)
	}
	freed := 0
	for i, s := range snaps {
		sp, err := f.st.Space(s.Root)
		if err != nil {
			t.Fatal(err)
		}
		if all[i] != sp {
			t.Fatalf("%s: Spaces says %+v, Space alone %+v", s.Name, all[i], sp)
		}
		if sp.Referenced < sp.Exclusive || sp.Exclusive < sp.ExclusiveData || sp.Referenced == 0 {
			t.Fatalf("%s: %+v", s.Name, sp)
		}
		if (s.Name == "same" || s.Name == "s3") && sp.Exclusive != 0 {
			t.Fatalf("%s shares its whole tree, yet %d bytes are exclusive", s.Name, sp.Exclusive)
		}
		g := reopenFS(t, []*device.MemDevice{devs[0].Snapshot()})
		before := physical(g)
		if err := g.DeleteSnapshot(s.Name); err != nil {
			t.Fatal(err)
		}
		if got := before - physical(g); got != sp.ExclusiveData {
			t.Fatalf("%s: deleting it freed %d data bytes, Space says %d exclusive (%+v)", s.Name, got, sp.ExclusiveData, sp)
		}
		if sp.ExclusiveData > 0 {
			freed++
		}
	}
	if freed < 2 {
		t.Fatalf("only %d snapshots held data of their own: the test is too weak", freed)
	}
}
