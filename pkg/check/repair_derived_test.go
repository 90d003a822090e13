package check

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"maps"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// TestRepairDropsDerivedTree (issue 36): no copy of the dedupe tree's
// root reads. -y drops the tree instead of restoring older roots (which
// would lose the last generation's files): every file reads as before,
// the index comes back from the extents byte for byte, and a second -n
// is clean.
//
// The same with a snapshot of the files (the dedupe tree is never
// shared: it is dropped and rebuilt there too), whose files read as
// before after the repair.
func TestRepairDropsDerivedTree(t *testing.T) {
	t.Run("plain", func(t *testing.T) { repairDropsDerivedTree(t, false) })
	t.Run("snapshot", func(t *testing.T) { repairDropsDerivedTree(t, true) })
}

func repairDropsDerivedTree(t *testing.T, snapshot bool) {
	f, devs := dedupeFS(t) // a generation per file: a backup restore loses one
	var snapBefore map[string][32]byte
	if snapshot {
		_, err := f.CreateSnapshot("s")
		must(t, err)
		must(t, f.Sync())
		snapBefore = snapshotFiles(t, f, "s")
	}
	before := contents(t, devs)
	s := newSurgeon(t, devs)
	entry := firstDedupeEntry(t, s)
	s.tx.Abort()
	sb := f.Store().Super()
	targets, err := f.Store().Vol.Locate(sb.Roots.Root(format.DedupeTree).Logical)
	must(t, err)
	for _, tg := range targets {
		flip(devs[tg.DevID-1], int64(tg.Physical)+200)
	}
	rep := repairDevs(t, devs, ModeRepair)
	if rep.RestoredFrom != 0 || !hasCode(rep.Problems, TreeRootBad) || rep.RepairLimited != "" {
		t.Errorf("-y restored generation %d: %v (limited %q)", rep.RestoredFrom, rep.Problems, rep.RepairLimited)
	}
	if snapshot {
		g := openedFS(t, devs)
		if got := snapshotFiles(t, g, "s"); !maps.Equal(got, snapBefore) {
			t.Errorf("snapshot: %d of %d files read back as before", len(got), len(snapBefore))
		}
	}
	if got := contents(t, devs); !maps.Equal(got, before) {
		t.Errorf("%d of %d files read back as before", len(got), len(before))
	}
	if got := committedDedupeItem(t, devs, entry.Key); !bytes.Equal(got, entry.Data) {
		t.Errorf("rebuilt entry %x, was %x", got, entry.Data)
	}
	if rep := fsckDevs(t, devs, Options{CheckData: true}); !rep.Clean() {
		t.Errorf("-n after -y: %v", rep.Problems)
	}
}

// dedupeFS is a deduplicating, compressing filesystem with three files
// (two alike), each written and committed in its own generation.
func dedupeFS(t *testing.T) (*fsys.FS, []*device.MemDevice) {
	f, d := newOneDeviceFS(t, 13, format.Settings{Dedupe: true, DedupeBlockLog2: 13, DedupeHash: format.CsumBLAKE3, Compression: format.CompressZstd, CompressionLevel: 3})
	for i := 0; i < 3; i++ {
		in, err := f.Create(fmt.Sprintf("/f%d", i), fsys.Attr{Mode: 0o644})
		must(t, err)
		must(t, f.WriteAt(in, pattern(30000, byte(i%2)), 0))
		must(t, f.Sync())
	}
	return f, []*device.MemDevice{d}
}

// snapshotFiles is the sha256 of each of snapshot name's top files.
func snapshotFiles(t *testing.T, f *fsys.FS, name string) map[string][32]byte {
	t.Helper()
	v, err := f.OpenSnapshot(name)
	must(t, err)
	out := map[string][32]byte{}
	for i := 0; i < 3; i++ {
		p := fmt.Sprintf("/f%d", i)
		in, err := v.Resolve(p, false)
		must(t, err)
		buf := make([]byte, in.Size)
		if n, err := v.ReadAt(in, buf, 0); err == nil && uint64(n) == in.Size {
			out[p] = sha256.Sum256(buf)
		}
	}
	return out
}
