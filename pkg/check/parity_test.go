package check

import (
	"bytes"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/scrub"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// A wrong P under a node of a raid5 metadata chunk is PARITY_BAD on copy
// 1 (for each node of the row at those offsets), with no fix (fsck never rewrites parity: a row's other strips are
// not verified there) and not NODE_COPY_BAD; fsck -y leaves it, scrub
// --repair rewrites it, and fsck is clean after.
func TestParityBadNode(t *testing.T) {
	devs := build(t, layout{3, format.ProfileRaid5, format.ProfileRaid5}, 150)
	fs, err := store.OpenVolume(volumeOf(t, devs))
	if err != nil {
		t.Fatal(err)
	}
	sb := fs.Super()
	logical := sb.Roots.Root(format.FSTree).Logical
	c, _ := fs.Vol.Chunks.Lookup(logical)
	off := logical - c.Logical
	tg := c.ParityTarget(off/c.RowLen(), 0)
	rowStart := c.Logical + off/c.RowLen()*c.RowLen()
	fs.Close()
	at := int64(tg.Physical + off%uint64(c.StripeLen) + 100)
	if _, err := devs[tg.DevID-1].WriteAt([]byte{0xde, 0xad, 0xbe, 0xef}, at); err != nil {
		t.Fatal(err)
	}
	found := func(rep *Report) (parity, other int) {
		for _, p := range rep.Problems {
			switch {
			case p.Code == ParityBad && p.Logical-rowStart < c.RowLen() && p.Copy != nil && *p.Copy == 1 && p.fix == nil:
				parity++ // the P bytes cover the same offset of every strip in the row
			default:
				other++
			}
		}
		return parity, other
	}
	before, o := found(checkDevs(t, devs))
	if before < 1 || o != 0 {
		t.Fatalf("fsck: %d PARITY_BAD in the row, %d other problems; want some and 0", before, o)
	}
	open := func() (*volume.Volume, error) { return volume.FromDevices(asDevices(devs), true) }
	if _, err := Repair(open, Options{Mode: ModeRepair}); err != nil {
		t.Fatal(err)
	}
	if p, _ := found(checkDevs(t, devs)); p != before {
		t.Fatalf("fsck -y touched parity: %d PARITY_BAD after, %d before", p, before)
	}
	vol, _ := open()
	sfs, err := store.OpenVolume(vol)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := scrub.Run(sfs, scrub.Options{Repair: true})
	sfs.Close()
	if err != nil || len(rep.Errors) == 0 || rep.Errors[0].Kind != scrub.KindParity || !rep.Errors[0].Corrected {
		t.Fatalf("scrub --repair: %v, %+v", err, rep.Errors)
	}
	if rep := checkDevs(t, devs); !rep.Clean() {
		t.Fatalf("after scrub --repair: %v", rep.Problems)
	}
}

// With --check-data a wrong Q of a raid6 data row is PARITY_BAD on copy 2
// at the row's start; without it the check reads no data rows.
func TestParityBadData(t *testing.T) {
	devs := build(t, layout{4, format.ProfileRaid6, format.ProfileRaid1}, 30)
	wvol, err := volume.FromDevices(asDevices(devs), true)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := store.OpenVolume(wvol)
	if err != nil {
		t.Fatal(err)
	}
	f, err := fsys.New(fs, fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	in, err := f.Create("/data", fsys.Attr{Mode: 0o644})
	if err == nil {
		err = f.WriteAt(in, bytes.Repeat([]byte("parity!"), 40000), 0)
	}
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	fs, err = store.OpenVolume(volumeOf(t, devs))
	if err != nil {
		t.Fatal(err)
	}
	var bg *store.BlockGroup
	for _, b := range fs.BlockGroups() {
		if b.Chunk.Type == format.ChunkData && b.Used > 0 {
			bg = b
		}
	}
	c := bg.Chunk
	free, err := fs.FreeRanges(bg)
	fs.Close()
	if err != nil || len(free) == 0 {
		t.Fatalf("free ranges: %v, %v", free, err)
	}
	if free[0].Start == c.Logical {
		t.Fatal("the file is not at the chunk's start")
	}
	row := (free[0].Start - 1 - c.Logical) / c.RowLen() // the last row the file uses
	tg := c.ParityTarget(row, 1)
	if _, err := devs[tg.DevID-1].WriteAt([]byte{1, 2, 3}, int64(tg.Physical+7)); err != nil {
		t.Fatal(err)
	}
	if rep := checkDevs(t, devs); !rep.Clean() {
		t.Fatalf("without --check-data: %v", rep.Problems)
	}
	rep, err := CheckVolume(volumeOf(t, devs), Options{CheckData: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].Code != ParityBad || *rep.Problems[0].Copy != 2 ||
		rep.Problems[0].Logical != c.Logical+row*c.RowLen() || rep.Problems[0].Offset != tg.Physical {
		t.Fatalf("--check-data: %v", rep.Problems)
	}
}
