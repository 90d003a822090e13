package check

import (
	"testing"

	"github.com/ddfs/ddfs/format"
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
