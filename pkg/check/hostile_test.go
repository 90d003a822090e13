package check

import (
	"bytes"
	"testing"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
)

// newDedupeBase is a one-device image with dedupe and zstd holding one
// compressed, indexed file /c.
func newDedupeBase(t *testing.T) []*device.MemDevice {
	t.Helper()
	f, d := newOneDeviceFS(t, 12, format.Settings{Dedupe: true, DedupeBlockLog2: 16, Compression: format.CompressZstd, CompressionLevel: 1})
	in, err := f.Create("/c", fsys.Attr{Mode: 0o644})
	must(t, err)
	must(t, f.WriteAt(in, bytes.Repeat([]byte("compressible "), 10000), 0))
	must(t, f.Sync())
	return []*device.MemDevice{d}
}

// newOneDeviceFS makes a 256 MiB single/dup FS (4 KiB nodes and sectors,
// crc32c) with settings s, its root made and committed.
func newOneDeviceFS(t *testing.T, fsid byte, s format.Settings) (*fsys.FS, *device.MemDevice) {
	t.Helper()
	d := device.NewMemDevice("m", 256<<20)
	st, tx, err := store.CreateTx(store.CreateParams{FSID: [16]byte{fsid}, Csum: format.CsumCRC32C, NodeSize: 4096, SectorSize: 4096,
		Data: format.ProfileSingle, Metadata: format.ProfileDup, Devices: []store.NewDevice{{Dev: d, Path: "m"}}, Settings: s})
	must(t, err)
	f, err := fsys.New(st, fsys.Options{Now: func() time.Time { return fsEpoch }})
	must(t, err)
	f.Adopt(tx)
	must(t, f.InitRoot(fsys.Attr{Mode: 0o755}))
	return f, d
}

// TestCraftedExtentLength: an EXTENT_ITEM whose key claims a disk length
// of 2^40 (checksums valid) is reported as a bad item; fsck --check-data
// used to panic allocating it (makeslice: len out of range).
func TestCraftedExtentLength(t *testing.T) {
	base := newDedupeBase(t)
	if rep := fsckDevs(t, base, Options{CheckData: true}); !rep.Clean() {
		t.Fatalf("base image: %v", rep.Problems)
	}
	for _, length := range []uint64{1 << 40, format.MaxExtentBytes + 4096} {
		s := newSurgeon(t, base)
		logical, diskLen := s.diskExtent(s.ino("/c"))
		from := format.Key{ObjectID: logical, Type: format.ExtentItemKey, Offset: diskLen}
		s.move(format.ExtentTree, from, format.Key{ObjectID: logical, Type: format.ExtentItemKey, Offset: length})
		rep := s.check(Options{CheckData: true})
		found := false
		for _, p := range rep.Problems {
			found = found || (p.Code == ItemBad && p.Tree == format.ExtentTree.String() && p.Logical != 0)
		}
		if !found {
			t.Errorf("length %d: no bad extent item reported: %v", length, rep.Problems)
		}
	}
}
