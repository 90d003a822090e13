package check

import (
	"bytes"
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
func TestRepairDropsDerivedTree(t *testing.T) {
	f, devs := dedupeFS(t) // a generation per file: a backup restore loses one
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
	if rep.RestoredFrom != 0 || !hasCode(rep.Problems, TreeRootBad) {
		t.Errorf("-y restored generation %d: %v", rep.RestoredFrom, rep.Problems)
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
