package check

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

type layout struct {
	devs       int
	data, meta format.Profile
}

// layouts is every profile pair mkfs accepts on 1-4 devices.
func layouts() []layout {
	all := []format.Profile{format.ProfileSingle, format.ProfileDup, format.ProfileRaid0, format.ProfileRaid1, format.ProfileRaid1C3, format.ProfileRaid10, format.ProfileRaid5, format.ProfileRaid6}
	var out []layout
	for n := 1; n <= 4; n++ {
		for _, d := range all {
			for _, m := range all {
				di, _ := d.Info()
				mi, _ := m.Info()
				if n >= di.MinDevices && n >= mi.MinDevices {
					out = append(out, layout{n, d, m})
				}
			}
		}
	}
	return out
}

// build creates a filesystem and fills the fs tree with files over a few
// commits so that trees have several levels.
func build(t *testing.T, l layout, items int) []*device.MemDevice {
	t.Helper()
	var devs []*device.MemDevice
	p := store.CreateParams{FSID: [16]byte{7}, Csum: format.CsumCRC32C, NodeSize: 4096, SectorSize: 4096, Data: l.data, Metadata: l.meta}
	for i := 0; i < l.devs; i++ {
		d := device.NewMemDevice(fmt.Sprintf("dev%d", i), 256<<20)
		devs = append(devs, d)
		p.Devices = append(p.Devices, store.NewDevice{Dev: d, Path: d.Name()})
	}
	st, tx, err := store.CreateTx(p)
	if err != nil {
		t.Fatalf("%+v: %v", l, err)
	}
	f, err := fsys.New(st, fsys.Options{Now: func() time.Time { return time.Unix(1700000000, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	f.Adopt(tx)
	if err := f.InitRoot(fsys.Attr{Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	for c := 0; c < 3; c++ {
		for i := 0; i < items/3; i++ {
			if _, err := f.Create(fmt.Sprintf("/f%d", c*items+i), fsys.Attr{Mode: 0o644}); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	return devs
}

// asDevices is devs as the device list volume.FromDevices takes.
func asDevices(devs []*device.MemDevice) []device.Device {
	var ds []device.Device
	for _, d := range devs {
		ds = append(ds, d)
	}
	return ds
}

func volumeOf(t *testing.T, devs []*device.MemDevice) *volume.Volume {
	t.Helper()
	vol, err := volume.FromDevices(asDevices(devs), false)
	if err != nil {
		t.Fatal(err)
	}
	return vol
}

func checkDevs(t *testing.T, devs []*device.MemDevice) *Report {
	t.Helper()
	rep, err := CheckVolume(volumeOf(t, devs))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestEveryLayoutClean: mkfs on every profile pair with 1-4 devices,
// reopen, fsck clean, with the expected number of node copies.
func TestEveryLayoutClean(t *testing.T) {
	for _, l := range layouts() {
		t.Run(fmt.Sprintf("%d-%v-%v", l.devs, l.data, l.meta), func(t *testing.T) {
			devs := build(t, l, 150)
			rep := checkDevs(t, devs)
			if !rep.Clean() {
				t.Fatalf("problems: %v", rep.Problems)
			}
			mi, _ := l.meta.Info()
			if copies := mi.Copies + mi.Parity; rep.Nodes < 4 || rep.NodeCopies != rep.Nodes*copies { // parity: copy 0 and a rebuild from each parity strip
				t.Fatalf("%d nodes, %d copies, want %d copies each", rep.Nodes, rep.NodeCopies, copies)
			}
			if rep.Devices != l.devs {
				t.Fatalf("devices %d", rep.Devices)
			}
			fs, err := store.OpenVolume(volumeOf(t, devs))
			if err != nil {
				t.Fatal(err)
			}
			if got := len(fs.DevItems()); got != l.devs {
				t.Fatalf("reopened with %d device items", got)
			}
		})
	}
}

type nodeCopy struct {
	tree    format.TreeID
	logical uint64
	copy    int
	target  volume.Target
}

// allNodeCopies lists where every copy of every node lives.
func allNodeCopies(t *testing.T, devs []*device.MemDevice) []nodeCopy {
	vol := volumeOf(t, devs)
	fs, err := store.OpenVolume(vol)
	if err != nil {
		t.Fatal(err)
	}
	var out []nodeCopy
	sb := fs.Super()
	for id := format.TreeID(1); id <= format.NumTrees; id++ {
		root := sb.Roots.Root(id)
		if root.Logical == 0 {
			continue
		}
		var walk func(l, g uint64, level int)
		walk = func(l, g uint64, level int) {
			n, err := fs.ReadNodeCopy(format.NodeExpect{FSID: sb.FSID, Logical: l, Generation: g, Owner: id, Level: level}, -1)
			if err != nil {
				t.Fatal(err)
			}
			targets, _ := vol.Locate(l)
			for m := 0; m < vol.Copies(l); m++ {
				out = append(out, nodeCopy{id, l, m, targets[m]})
			}
			for _, p := range n.Ptrs {
				walk(p.Logical, p.Generation, level-1)
			}
		}
		walk(root.Logical, root.Generation, int(root.Level))
	}
	return out
}

func flip(d *device.MemDevice, off int64) {
	b := make([]byte, 1)
	d.ReadAt(b, off)
	b[0] ^= 0x5a
	d.WriteAt(b, off)
	d.Flush()
}

// TestFlippedNodeByte: one flipped byte in any copy of any node is
// reported naming that node, its device and offset.
func TestFlippedNodeByte(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, l := range []layout{
		{1, format.ProfileSingle, format.ProfileDup},
		{1, format.ProfileSingle, format.ProfileSingle},
		{2, format.ProfileRaid0, format.ProfileRaid1},
		{3, format.ProfileSingle, format.ProfileRaid1C3},
		{4, format.ProfileRaid10, format.ProfileRaid10},
	} {
		t.Run(fmt.Sprintf("%d-%v-%v", l.devs, l.data, l.meta), func(t *testing.T) {
			devs := build(t, l, 150)
			byID := map[uint64]*device.MemDevice{}
			for i, d := range devs {
				byID[uint64(i+1)] = d
			}
			copies := allNodeCopies(t, devs)
			if len(copies) < 8 {
				t.Fatalf("only %d node copies", len(copies))
			}
			for _, nc := range copies {
				// Anywhere in the node: checksum field, header, items, free space.
				off := int64(nc.target.Physical) + int64(r.IntN(4096))
				d := byID[nc.target.DevID]
				flip(d, off)
				rep := checkDevs(t, devs)
				found := false
				for _, p := range rep.Problems {
					if p.Code == NodeCopyBad && p.Logical == nc.logical && p.CopyIs(nc.copy) && p.DevID == nc.target.DevID && p.Offset == nc.target.Physical && p.Tree == nc.tree.String() {
						found = true
					}
				}
				if !found {
					t.Fatalf("flip at %d in %v node %d copy %d not reported: %v", off, nc.tree, nc.logical, nc.copy, rep.Problems)
				}
				flip(d, off) // restore
			}
			if rep := checkDevs(t, devs); !rep.Clean() {
				t.Fatalf("after restoring: %v", rep.Problems)
			}
		})
	}
}

// TestFlippedPrimarySuper: the damaged primary is reported and the
// filesystem still opens from a copy.
func TestFlippedPrimarySuper(t *testing.T) {
	devs := build(t, layout{2, format.ProfileSingle, format.ProfileRaid1}, 30)
	flip(devs[1], 64<<10+200)
	rep := checkDevs(t, devs)
	// A bad primary is a problem, not a warning (issue 12).
	if len(rep.Problems) != 1 || rep.Problems[0].Code != SuperBad || rep.Problems[0].Offset != 64<<10 || rep.Problems[0].DevID != 2 || rep.Clean() {
		t.Fatalf("got %v", rep.Problems)
	}
	if _, err := store.OpenVolume(volumeOf(t, devs)); err != nil {
		t.Fatalf("open from the copy: %v", err)
	}
}

// TestSameGenerationSuperDiffers: a copy of the set's generation whose
// set-wide fields differ is one problem at its location (FORMAT.md §3.7).
func TestSameGenerationSuperDiffers(t *testing.T) {
	devs := build(t, layout{2, format.ProfileSingle, format.ProfileRaid1}, 30)
	b := make([]byte, format.SuperblockSize)
	devs[1].ReadAt(b, 64<<20)
	sb, err := format.UnmarshalSuperblock(b)
	if err != nil {
		t.Fatal(err)
	}
	sb.Roots.Roots[format.FSTree-1].Logical += 4096
	nb, _ := format.MarshalSuperblock(sb)
	devs[1].WriteAt(nb, 64<<20)
	rep := checkDevs(t, devs)
	if len(rep.Problems) != 1 || rep.Problems[0].Code != SuperDiffers || rep.Problems[0].Offset != 64<<20 || rep.Problems[0].DevID != 2 || rep.Clean() {
		t.Fatalf("got %v", rep.Problems)
	}
}

// TestLeakedAndMiscounted: surgery on the extent accounting is reported.
func TestStaleSuperCopy(t *testing.T) {
	devs := build(t, layout{1, format.ProfileSingle, format.ProfileDup}, 30)
	// Put an older generation at the 64 MiB copy.
	b := make([]byte, format.SuperblockSize)
	devs[0].ReadAt(b, 64<<20)
	sb, err := format.UnmarshalSuperblock(b)
	if err != nil {
		t.Fatal(err)
	}
	lagBy(sb, 1) // a root set newer than its superblock does not decode
	nb, _ := format.MarshalSuperblock(sb)
	devs[0].WriteAt(nb, 64<<20)
	rep := checkDevs(t, devs)
	if len(rep.Problems) != 1 || rep.Problems[0].Code != SuperGeneration || rep.Problems[0].Offset != 64<<20 {
		t.Fatalf("got %v", rep.Problems)
	}
}

// TestDeviceLagging: a crash between the superblock writes of a commit
// leaves every copy of a device one generation behind; that is a warning
// (LagsOneGeneration), while two generations behind is a stale device.
func TestDeviceLagging(t *testing.T) {
	for _, lag := range []uint64{1, 2} {
		devs := build(t, layout{2, format.ProfileSingle, format.ProfileRaid1}, 30)
		for _, off := range volume.SuperOffsets(devs[1].Size()) {
			b := make([]byte, format.SuperblockSize)
			devs[1].ReadAt(b, int64(off))
			sb, err := format.UnmarshalSuperblock(b)
			if err != nil {
				t.Fatal(err)
			}
			lagBy(sb, lag)
			nb, _ := format.MarshalSuperblock(sb)
			devs[1].WriteAt(nb, int64(off))
		}
		rep := checkDevs(t, devs)
		if len(rep.Problems) != len(volume.SuperOffsets(devs[1].Size())) {
			t.Fatalf("lag %d: got %v", lag, rep.Problems)
		}
		for _, p := range rep.Problems {
			if p.Pass != PassSuper || p.DevID != 2 || p.Generation != rep.Generation-lag {
				t.Fatalf("lag %d: got %+v", lag, p)
			}
			if got := LagsOneGeneration(p, rep.Generation); got != (lag == 1) || p.Warning != (lag == 1) {
				t.Fatalf("lag %d: warning %v, LagsOneGeneration %v", lag, p.Warning, got)
			}
		}
	}
}

// TestSuperCopyWarnings: beside a current primary, a copy left at an
// older generation or torn is a warning carrying what it holds.
func TestSuperCopyWarnings(t *testing.T) {
	const second = 64 << 20
	for _, tc := range []struct {
		name    string
		damage  func(d *device.MemDevice)
		gen     func(set uint64) uint64
		warning bool
	}{
		{"two behind", func(d *device.MemDevice) { setGen(t, d, second, 2) }, func(s uint64) uint64 { return s - 2 }, true},
		{"torn", func(d *device.MemDevice) { flip(d, second+300) }, func(uint64) uint64 { return 0 }, true},
		// Two behind with no current copy and roots the set does not
		// remember is a diverged member: opening refuses it (volume
		// TestMemberBehind), so fsck never gets to report it here.
	} {
		t.Run(tc.name, func(t *testing.T) {
			devs := build(t, layout{2, format.ProfileSingle, format.ProfileRaid1}, 30)
			tc.damage(devs[1])
			rep := checkDevs(t, devs)
			if len(rep.Problems) == 0 {
				t.Fatal("no problem reported")
			}
			for _, p := range rep.Problems {
				if p.Pass != PassSuper || p.DevID != 2 || p.Warning != tc.warning || p.Generation != tc.gen(rep.Generation) {
					t.Fatalf("got %+v", p)
				}
			}
		})
	}
}

// setGen rewrites the superblock copy at off with its generation lowered by lag.
func setGen(t *testing.T, d *device.MemDevice, off int64, lag uint64) {
	t.Helper()
	b := make([]byte, format.SuperblockSize)
	d.ReadAt(b, off)
	sb, err := format.UnmarshalSuperblock(b)
	if err != nil {
		t.Fatal(err)
	}
	lagBy(sb, lag)
	nb, _ := format.MarshalSuperblock(sb)
	d.WriteAt(nb, off)
}

// lagBy turns sb into the copy a device that missed lag commits holds: the
// older generation with the root set the set remembers for it (a member
// with other roots is a diverged copy, refused at open, FORMAT.md §3.7).
func lagBy(sb *format.Superblock, lag uint64) {
	sb.Generation -= lag
	for _, b := range sb.Backups {
		if b.Generation == sb.Generation {
			sb.Roots = b
		}
	}
}

// TestStripeOverSuperblock: a stripe that ends where the 64 MiB superblock
// copy starts, or starts where it ends, is fine; one byte over is a chunk
// problem at that stripe.
func TestStripeOverSuperblock(t *testing.T) {
	const sb, size = 64 << 20, 1 << 20
	for _, tc := range []struct {
		offset uint64
		bad    bool
	}{
		{sb - size, false},
		{sb + format.SuperblockSize, false},
		{sb - size + 1, true},
		{sb + format.SuperblockSize - 1, true},
	} {
		c := &checker{vol: volume.New(nil, nil, false), sb: &format.Superblock{}, rep: &Report{},
			devItems: map[uint64]*format.DevItem{1: {DevID: 1, TotalBytes: 1 << 30, BytesUsed: size}}}
		item := &format.ChunkItem{Length: size, Type: format.ChunkData, Profile: format.ProfileSingle, StripeLen: format.DefaultStripeLen, SubStripes: 1,
			Stripes: []format.Stripe{{DevID: 1, Offset: tc.offset}}}
		if err := c.vol.AddChunk(1<<30, item); err != nil {
			t.Fatal(err)
		}
		c.checkChunks()
		got := len(c.rep.Problems) == 1 && c.rep.Problems[0].Pass == PassChunk && c.rep.Problems[0].Offset == tc.offset
		if got != tc.bad || (!tc.bad && len(c.rep.Problems) != 0) {
			t.Fatalf("stripe at %d: %v", tc.offset, c.rep.Problems)
		}
	}
}
