package check

import (
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/ddfs/ddfs/format"
)

// TestProblemString pins the one-line form fsck prints: each location
// field appears only when it is set, in a fixed order.
func TestProblemString(t *testing.T) {
	one := 1
	for _, tc := range []struct {
		p    Problem
		want string
	}{
		{Problem{Code: NodeCopyBad, Message: "m"}, "NODE_COPY_BAD: m"},
		{Problem{Code: NodeCopyBad, Warning: true, Tree: "fs", Ino: 7, Path: "/a", Logical: 4096, Device: "d0", DevID: 2, Offset: 99, Copy: &one, Message: "m", Fixed: true},
			"warning: NODE_COPY_BAD fs tree inode 7 /a logical 4096 on d0 (devid 2) offset 99 copy 1: m (fixed)"},
		{Problem{Code: DevMissing, DevID: 3, Offset: 5, Message: "m"}, "DEV_MISSING devid 3 offset 5: m"},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

// TestCrashTrace: a torn superblock copy and a copy one generation behind
// are crash traces; a copy two behind or an error of another code is not.
func TestCrashTrace(t *testing.T) {
	for _, tc := range []struct {
		p    Problem
		want bool
	}{
		{Problem{Code: SuperBad}, true},
		{Problem{Code: SuperGeneration, Warning: true, Generation: 9}, true},
		{Problem{Code: SuperGeneration, Warning: true, Generation: 8}, false},
		{Problem{Code: SuperGeneration, Generation: 9}, false},
		{Problem{Code: NodeCopyBad}, false},
	} {
		if got := CrashTrace(tc.p, 10); got != tc.want {
			t.Errorf("CrashTrace(%v, 10) = %v, want %v", tc.p, got, tc.want)
		}
	}
}

// TestReportErrors: warnings and fixed problems do not count.
func TestReportErrors(t *testing.T) {
	r := &Report{Problems: []Problem{{Code: Nlink}, {Code: DirSize}, {Code: SuperGeneration, Warning: true}, {Code: NBytes, Fixed: true}}}
	if n := r.Errors(); n != 2 || r.Clean() {
		t.Fatalf("Errors() = %d, Clean() = %v; want 2, false", n, r.Clean())
	}
	r.Problems = r.Problems[2:]
	if n := r.Errors(); n != 0 || !r.Clean() {
		t.Fatalf("Errors() = %d, Clean() = %v; want 0, true", n, r.Clean())
	}
}

// TestIncompleteTreeWithholds: with the only copy of an fs tree leaf
// unreadable, the cross-checks over the fs tree (orphans, counts) are
// withheld and counted, and the node is the problem reported.
func TestIncompleteTreeWithholds(t *testing.T) {
	devs := build(t, layout{1, format.ProfileSingle, format.ProfileSingle}, 150)
	var leaf *nodeCopy
	for _, nc := range allNodeCopies(t, devs) {
		if nc.tree == format.FSTree {
			nc := nc
			leaf = &nc // the last one listed is a leaf (depth first)
		}
	}
	flip(devs[leaf.target.DevID-1], int64(leaf.target.Physical)+200)
	rep := checkDevs(t, devs)
	if strings.Join(rep.Incomplete, ",") != "fs" {
		t.Fatalf("incomplete %v, want [fs]", rep.Incomplete)
	}
	// The names in the lost leaf leave their inodes without names (or
	// the reverse): those conclusions must be withheld, not reported.
	if rep.Withheld <= 0 {
		t.Errorf("withheld %d, want > 0", rep.Withheld)
	}
	for _, p := range rep.Problems {
		if crossChecks[p.Code] {
			t.Errorf("cross-check reported over an incomplete tree: %v", p)
		}
	}
}

// TestProblemID: a problem without a copy is not the same problem as
// one about copy 0 or copy 1 at the same place, across rounds.
func TestProblemID(t *testing.T) {
	zero, one := 0, 1
	none := Problem{Code: NodeCopyBad, Logical: 4096}
	c0, c1 := none, none
	c0.Copy, c1.Copy = &zero, &one
	if none.id() == c0.id() || none.id() == c1.id() || c0.id() == c1.id() {
		t.Fatalf("ids collide: %+v %+v %+v", none.id(), c0.id(), c1.id())
	}
}

// TestFixableIncomplete: over an incomplete tree -y fixes only copies
// and superblocks; a count may reflect the unread part and waits.
func TestFixableIncomplete(t *testing.T) {
	ps := []Problem{
		{Code: SuperGeneration, Pass: PassSuper},
		{Code: NodeCopyBad, Pass: PassNode},
		{Code: DataCopyBad, Pass: PassData},
		{Code: Nlink, Pass: PassFS},
	}
	codes := func(ps []Problem) string {
		var s []string
		for _, p := range ps {
			s = append(s, string(p.Code))
		}
		return strings.Join(s, " ")
	}
	o := Options{Mode: ModeRepair}
	if got, want := codes(o.fixable(ps, true)), "SUPER_GENERATION NODE_COPY_BAD DATA_COPY_BAD"; got != want {
		t.Errorf("incomplete: %q, want %q", got, want)
	}
	if got, want := codes(o.fixable(ps, false)), "SUPER_GENERATION NODE_COPY_BAD DATA_COPY_BAD NLINK"; got != want {
		t.Errorf("complete: %q, want %q", got, want)
	}
}

// TestUnion: overlapping and touching spans merge, a gap keeps them
// apart (a gap merged away would hide checksums outside every extent).
func TestUnion(t *testing.T) {
	var out bigList[span]
	got := union(slices.Values([]span{{0, 10}, {5, 12}, {12, 20}, {30, 40}, {41, 50}}), &out)
	want := []span{{0, 20}, {30, 40}, {41, 50}}
	if len(got) != len(want) {
		t.Fatalf("union %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("union %v, want %v", got, want)
		}
	}
}

// TestExtentListSizes pins what fsck holds per data extent (the bound
// fsck --help states): 32 bytes of extent item and 8 of its use.
func TestExtentListSizes(t *testing.T) {
	if e, u := unsafe.Sizeof(dataExtent{}), unsafe.Sizeof(extentUse{}); e != 32 || u != 8 {
		t.Fatalf("dataExtent %d bytes, extentUse %d: want 32 and 8", e, u)
	}
}
