package check

import (
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
)

// lostSums makes files /a and /b, then deletes every checksum of /a's
// data; it returns the damaged devices, /a's inode and extent.
func lostSums(t *testing.T, l layout) (devs []*device.MemDevice, ino, logical uint64) {
	f, base := newFS(t, l)
	for i, p := range []string{"/a", "/b"} {
		in, err := f.Create(p, fsys.Attr{Mode: 0o644})
		must(t, err)
		must(t, f.WriteAt(in, pattern(3*4096, byte(5+i)), 0))
	}
	must(t, f.Sync())
	s := newSurgeon(t, base)
	ino = s.ino("/a")
	l0, n := s.diskExtent(ino)
	s.ownSums(l0, n)
	s.del(format.CsumTree, csumKey(l0))
	expect(t, s.check(Options{}), want{code: CsumMissing, logical: l0})
	return s.devs, ino, l0
}

// TestRebuildCsums: data whose checksums are lost is CSUM_MISSING, and
// -y does not invent sums for it (the file stays unreadable); only
// RebuildCsums sums it, naming /a, after which /a reads and a check
// reading every sector is clean.
func TestRebuildCsums(t *testing.T) {
	devs, ino, _ := lostSums(t, layout{1, format.ProfileSingle, format.ProfileDup})
	rep := repairDevs(t, devs, ModeRepair)
	if got := codesOf(rep.Problems, true); len(got) != 1 || got[0] != "CSUM_MISSING" {
		t.Fatalf("-y: %v, want CSUM_MISSING left", rep.Problems)
	}
	if _, ok := contents(t, devs)[ino]; ok {
		t.Fatalf("/a reads after -y: checksums were invented")
	}
	rebuilt, refused, err := RebuildCsums(opener(devs), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rebuilt) != 1 || rebuilt[0].Path != "/a" || rebuilt[0].Ino != ino || len(refused) != 0 {
		t.Fatalf("rebuilt %v, refused %v; want /a alone", rebuilt, refused)
	}
	if _, ok := contents(t, devs)[ino]; !ok {
		t.Errorf("/a does not read after the rebuild")
	}
	if rep := fsckDevs(t, devs, Options{CheckData: true}); !rep.Clean() {
		t.Errorf("after the rebuild: %v", rep.Problems)
	}
}

// TestRebuildCsumsCopiesDiffer: with raid1 data whose two copies of the
// unsummed extent differ, nothing says which is right: the extent is
// refused, no sums are made and the file stays CSUM_MISSING.
func TestRebuildCsumsCopiesDiffer(t *testing.T) {
	devs, _, l := lostSums(t, layout{2, format.ProfileRaid1, format.ProfileRaid1})
	st, err := store.OpenVolume(volumeOf(t, devs))
	must(t, err)
	places, err := st.Vol.Locate(l + 4096)
	must(t, err)
	st.Close()
	d := devs[places[1].DevID-1]
	b := make([]byte, 1)
	d.ReadAt(b, int64(places[1].Physical))
	b[0] ^= 0xff
	d.WriteAt(b, int64(places[1].Physical))
	must(t, d.Flush())
	rebuilt, refused, err := RebuildCsums(opener(devs), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rebuilt) != 0 || len(refused) != 1 || refused[0].Logical != l {
		t.Fatalf("rebuilt %v, refused %v; want extent %d refused", rebuilt, refused, l)
	}
	expect(t, fsckDevs(t, devs, Options{}), want{code: CsumMissing, logical: l})
}
