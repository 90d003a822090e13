package damaged

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/check"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/volume"
	"github.com/ddfs/ddfs/testimages/damaged/corpus"
)

// repairInPlace runs fsck in mode on devs themselves.
func repairInPlace(t *testing.T, devs []*device.MemDevice, mode check.Mode) *check.Report {
	t.Helper()
	ds := make([]device.Device, len(devs))
	for i, d := range devs {
		ds[i] = d
	}
	rep, err := check.Repair(func() (*volume.Volume, error) { return volume.FromDevices(ds, true) }, check.Options{Mode: mode, CheckData: true})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// mismatches counts the SYS_ARRAY_MISMATCH problems not fixed.
func mismatches(rep *check.Report) int {
	n := 0
	for _, p := range rep.Problems {
		if p.Code == check.SysArrayMismatch && !p.Fixed {
			n++
		}
	}
	return n
}

// TestFsckSysArrayLie: every campaign edit of a stripe offset in the
// system chunk array (every superblock copy, checksums recomputed) is
// SYS_ARRAY_MISMATCH on each copy for fsck -n (which was clean); -p and
// -y rewrite the arrays from the chunk tree, after which -n is clean,
// every file reads back and a writer opens the set.
func TestFsckSysArrayLie(t *testing.T) {
	n := 0
	for _, ndev := range []int{1, 2} {
		base, err := corpus.Base(ndev)
		if err != nil {
			t.Fatal(err)
		}
		vs, err := corpus.Variants(base, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			if !strings.HasPrefix(v.Name, "sysarray") || !strings.Contains(v.Name, " offset+") {
				continue // a devid edit breaks the array's own validation: no copy opens (exit 8)
			}
			n++
			devs, err := corpus.Damage(base, v.Damage)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := corpus.Run(devs, check.ModeCheck)
			if err != nil {
				t.Fatal(err)
			}
			if got := mismatches(rep); got != ndev || rep.Errors() != ndev {
				t.Errorf("%d dev %s: -n finds %d mismatches, %v; want one per device's copy and nothing else", ndev, v.Name, got, rep.Problems)
			}
			for _, mode := range []check.Mode{check.ModePreen, check.ModeRepair} {
				work := corpus.Snapshots(devs)
				if rep := repairInPlace(t, work, mode); !rep.Clean() {
					t.Errorf("%d dev %s: mode %d leaves %v", ndev, v.Name, mode, rep.Problems)
				}
				if rep, err := corpus.Run(work, check.ModeCheck); err != nil || !rep.Clean() {
					t.Errorf("%d dev %s: -n after mode %d: %v %v", ndev, v.Name, mode, err, rep)
				}
				if got := corpus.Readable(work); len(got) != len(corpus.Expected()) {
					t.Errorf("%d dev %s: after mode %d %d of %d files read back", ndev, v.Name, mode, len(got), len(corpus.Expected()))
				}
				st, err := openStore(work, true)
				if err != nil {
					t.Errorf("%d dev %s: a writer after mode %d: %v", ndev, v.Name, mode, err)
					continue
				}
				st.Close()
			}
		}
	}
	if n != 8 {
		t.Fatalf("%d offset variants of the system chunk array, want 8 (2 stripes x 2 edits x 2 bases)", n)
	}
}

// TestFsckSysArrayTreeLies: when the chunk tree's system chunk item is
// the one that lies (a stripe moved back by a node, the node's checksum
// recomputed) and the array is right, the chunk tree's side does not
// read its own nodes: fsck reports SYS_ARRAY_MISMATCH and neither -p nor
// -y writes a byte (a node copy rewritten through the lying item would
// land on other data).
func TestFsckSysArrayTreeLies(t *testing.T) {
	base, err := corpus.Base(1)
	if err != nil {
		t.Fatal(err)
	}
	vol, err := volume.FromDevices([]device.Device{base[0].Snapshot()}, false)
	if err != nil {
		t.Fatal(err)
	}
	sys, ns := vol.Super.SysChunks[0].Logical, uint64(vol.Super.NodeSize)
	vol.Close()
	devs, err := corpus.Damage(base, func(s *corpus.Surgeon) {
		k := format.Key{ObjectID: format.ChunkObjectID, Type: format.ChunkItemKey, Offset: sys}
		c, _, err := format.UnmarshalChunkItem(s.Get(format.ChunkTree, k))
		if err != nil {
			t.Fatal(err)
		}
		c.Stripes[0].Offset -= ns // back: forward would overlap the next chunk (CHUNK_OVERLAP)
		s.Put(format.ChunkTree, k, format.MarshalChunkItem(c))
	})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := corpus.Run(devs, check.ModeCheck)
	if err != nil {
		t.Fatal(err)
	}
	if mismatches(rep) != 1 {
		t.Fatalf("-n: %v, want SYS_ARRAY_MISMATCH", rep.Problems)
	}
	for _, mode := range []check.Mode{check.ModePreen, check.ModeRepair} {
		work := corpus.Snapshots(devs)
		if rep := repairInPlace(t, work, mode); mismatches(rep) != 1 {
			t.Errorf("mode %d: %v, want SYS_ARRAY_MISMATCH left", mode, rep.Problems)
		}
		if !sameBytes(devs[0], work[0]) {
			t.Errorf("mode %d wrote to the image", mode)
		}
	}
}

func sameBytes(a, b *device.MemDevice) bool {
	x, y := make([]byte, a.Size()), make([]byte, b.Size())
	a.ReadAt(x, 0)
	b.ReadAt(y, 0)
	return bytes.Equal(x, y)
}
