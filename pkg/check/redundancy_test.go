package check

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// writeDegraded opens devs as a degraded set (some members left out)
// and writes a file of n random bytes at name: its data and the nodes
// of the commit land in new chunks below the set's profiles.
func writeDegraded(t *testing.T, devs []*device.MemDevice, name string, n int) []byte {
	t.Helper()
	st := openSet(t, devs, true)
	f, err := fsys.New(st, fsys.Options{Now: func() time.Time { return time.Unix(1700000000, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	in, err := f.Create(name, fsys.Attr{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(n), 1))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	if err := f.WriteAt(in, data, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return data
}

// readBack reads name (@SNAP:PATH: in snapshot SNAP) from devs (a
// degraded open when some are left out) and compares it with want.
func readBack(t *testing.T, devs []*device.MemDevice, name string, want []byte) {
	t.Helper()
	st := openSet(t, devs, false)
	defer st.Close()
	f, err := fsys.New(st, fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if snap, rest, ok := strings.Cut(strings.TrimPrefix(name, "@"), ":"); ok && strings.HasPrefix(name, "@") {
		if f, err = f.OpenSnapshot(snap); err != nil {
			t.Fatal(err)
		}
		name = rest
	}
	in, err := f.Resolve(name, false)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(want))
	if n, err := f.ReadAt(in, got, 0); err != nil || n != len(want) || !bytes.Equal(got, want) {
		t.Fatalf("%s with %d devices: read %d bytes, %v, equal %v", name, len(devs), n, err, bytes.Equal(got, want))
	}
}

// TestChunkBelowProfile is issue 36's "redundancy lost is a problem": a
// raid1 set written while its second member was missing has data and
// metadata chunks at single and dup, on the first device only. fsck
// reports each (CHUNK_BELOW_PROFILE) and that losing devid 1 would lose
// them; -p leaves them; -y moves them to raid1, after which fsck is
// clean, nothing is exposed, and the file reads with either device lost.
// So on an image with a snapshot taken while degraded (its nodes, shared
// with the live tree, in those chunks): a move keeps every logical
// address, and the snapshot reads the file too.
func TestChunkBelowProfile(t *testing.T) {
	for _, snap := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "snapshot"}[snap], func(t *testing.T) { testChunkBelowProfile(t, snap) })
	}
}

func testChunkBelowProfile(t *testing.T, snap bool) {
	l := layout{2, format.ProfileRaid1, format.ProfileRaid1}
	devs := build(t, l, 60)
	data := writeDegraded(t, devs[:1], "/degraded", 3<<20)
	if snap {
		st := openSet(t, devs[:1], true)
		f, err := fsys.New(st, fsys.Options{})
		must(t, err)
		_, err = f.CreateSnapshot("s")
		must(t, err)
		must(t, f.Close())
		// And a live value to mend in the same rounds (DIR_SIZE): the
		// chunk moves are not "withheld" beside it.
		st = openSet(t, devs[:1], true)
		tx, err := st.Begin()
		must(t, err)
		b, err := tx.Tree(format.FSTree).Get(inodeKey(format.RootDirIno))
		must(t, err)
		in, err := format.UnmarshalInodeItem(bytes.Clone(b))
		must(t, err)
		in.Size += 7
		must(t, tx.Tree(format.FSTree).Put(inodeKey(format.RootDirIno), format.MarshalInodeItem(in)))
		must(t, tx.Commit())
		must(t, st.Close())
	}
	rep := checkDevs(t, devs)
	var below []string
	for _, p := range rep.Problems {
		if p.Warning || snap && (p.Code == SuperGeneration || p.Code == DirSize) { // the member away lags (more commits with the snapshot's)
			continue
		}
		if p.Code != ChunkBelowProfile {
			t.Fatalf("unexpected problem %v", p)
		}
		below = append(below, p.Message)
	}
	if len(below) < 2 || rep.Clean() {
		t.Fatalf("%d chunks below profile reported, want data and metadata: %q", len(below), below)
	}
	if len(rep.Exposure) != 1 || rep.Exposure[0].DevID != 1 || rep.Exposure[0].Chunks != len(below) || rep.Exposure[0].Used < 3<<20 {
		t.Fatalf("exposure %+v, want devid 1 with the %d chunks below profile and the file's 3 MiB", rep.Exposure, len(below))
	}
	modes := []Mode{ModePreen, ModeRepair}
	if snap {
		modes = modes[1:] // -y meets DIR_SIZE beside the chunks below the profiles
	}
	for _, mode := range modes {
		rep, err := Repair(func() (*volume.Volume, error) { return writable(devs) }, Options{Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		fixed := 0
		for _, p := range rep.Problems {
			if p.Fixed && p.Code == ChunkBelowProfile {
				fixed++
			}
		}
		if want := map[Mode]int{ModePreen: 0, ModeRepair: len(below)}[mode]; fixed != want {
			t.Fatalf("mode %d: %d problems fixed, want %d: %v", mode, fixed, want, rep.Problems)
		}
		if mode == ModeRepair && rep.RepairLimited != "" {
			t.Fatalf("-y limited: %s", rep.RepairLimited)
		}
	}
	if rep := checkDevs(t, devs); !rep.Clean() || len(rep.Problems) != 0 || len(rep.Exposure) != 0 {
		t.Fatalf("after -y: problems %v, exposure %+v", rep.Problems, rep.Exposure)
	}
	for i := range devs {
		readBack(t, []*device.MemDevice{devs[1-i]}, "/degraded", data)
		if snap {
			readBack(t, []*device.MemDevice{devs[1-i]}, "@s:/degraded", data)
		}
	}
}

func writable(devs []*device.MemDevice) (*volume.Volume, error) { return memVolume(devs, true) }

func memVolume(devs []*device.MemDevice, write bool) (*volume.Volume, error) {
	ds := make([]device.Device, len(devs))
	for i, d := range devs {
		ds[i] = d
	}
	return volume.FromDevices(ds, write)
}

// openSet opens devs as a set that may lack members.
func openSet(t *testing.T, devs []*device.MemDevice, write bool) *store.FS {
	t.Helper()
	vol, err := memVolume(devs, write)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenDegraded(vol)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
