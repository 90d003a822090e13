package check

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/ddfs/ddfs/format"
)

// repairLeaves are problems of a surgery case that a fixable code cannot
// fix in that case.
var repairLeaves = map[string][]string{
	"csum items overlap":                   {"DATA_COPY_BAD"},
	"extent beyond its decompressed bytes": {"EXTENT_UNREFERENCED", "FS_ITEM_BAD"},
	// The file extent points into the extent by another length: the
	// extent is in use (not freed) and no item is made over it.
	"extent of partial sectors": {"EXTENT_UNREFERENCED", "FILE_EXTENT_NO_ITEM"},
}

// repairMoves is the path a surgery case's repair moves to lost+found
// though the damaged image still resolves it.
var repairMoves = map[string]string{}

// repairKeeps is a name a surgery case's damage made that walkers of the
// damaged image refuse to follow, and -y keeps.
var repairKeeps = map[string]string{
	// A directory with two names keeps the first by its INODE_REF keys:
	// the link the damage made in / comes before /dir's.
	"directory with two names": "/sub2",
}

// repairSideFixes are problems no fix is made for that go away with the
// fix of another problem of the same case.
var repairSideFixes = map[string][]string{
	// Dropping the unreferenced extent ends the overlap / the part
	// outside the chunk.
	"data extent inside another":            {"EXTENT_OVERLAP"},
	"data extent past the end of its chunk": {"EXTENT_OUTSIDE"},
	"data extent over a node":               {"EXTENT_OVERLAP", "DATA_EXTENT_CHUNK"},
}

// repairUncovers are problems a surgery case's first check cannot see:
// a fix of one problem uncovers them, and a later round fixes them.
var repairUncovers = map[string][]string{}

// markFixed sorts codes and marks "+" those not in left (each code of
// left consumes one occurrence), as codesOf marks a report.
func markFixed(codes, left []string) []string {
	rest := map[string]int{}
	for _, c := range left {
		rest[c]++
	}
	var out []string
	for _, c := range codes {
		if rest[c] > 0 {
			rest[c]--
			out = append(out, c)
			continue
		}
		out = append(out, c+"+")
	}
	sort.Strings(out)
	return out
}

// TestRepairSurgery: every surgery case, repaired with -y: what the codes
// table says -y fixes is fixed, a second check finds exactly what -y
// cannot fix, and no readable file changes a byte.
func TestRepairSurgery(t *testing.T) {
	f, base := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	populate(t, f)
	original := contents(t, base)
	originalPaths := pathsOf(t, base)
	for _, tc := range surgeryCases() {
		t.Run(tc.name, func(t *testing.T) {
			s := newSurgeon(t, base)
			tc.damage(s)
			must(t, s.tx.Commit())
			before := fsckDevs(t, s.devs, Options{CheckData: true})
			damaged := contents(t, s.devs)
			damagedPaths := pathsOf(t, s.devs)
			rep := repairDevs(t, s.devs, ModeRepair)
			after := fsckDevs(t, s.devs, Options{CheckData: true})
			checkRepairReport(t, tc.name, before, rep, after)
			checkRepairPaths(t, tc.name, originalPaths, damagedPaths, pathsOf(t, s.devs))
			checkRepairContents(t, original, damaged, contents(t, s.devs))
		})
	}
}

// repairUnfixable is what -y must leave of the problems a surgery case's
// first check found: exactly the problems no mode fixes, sorted.
func repairUnfixable(name string, before *Report) []string {
	var unfixable []string
	for _, p := range before.Problems {
		if ci, _ := p.Code.Info(); !ModeRepair.allows(ci.fix) {
			unfixable = append(unfixable, string(p.Code))
		}
	}
	// A sum over a sector of the single copy: no good copy to
	// rewrite it from.
	unfixable = append(unfixable, repairLeaves[name]...)
	unfixable = slices.DeleteFunc(unfixable, func(c string) bool { return slices.Contains(repairSideFixes[name], c) })
	sort.Strings(unfixable)
	return unfixable
}

// checkRepairReport compares the second check (after) and the repair
// report (rep) with the first check (before) of surgery case name.
func checkRepairReport(t *testing.T, name string, before, rep, after *Report) {
	t.Helper()
	unfixable := repairUnfixable(name, before)
	if got := codesOf(after.Problems, false); strings.Join(got, " ") != strings.Join(unfixable, " ") {
		t.Errorf("after -y: %v, want the unfixable %v\nbefore: %v\nrepair: %v", got, unfixable, before.Problems, rep.Problems)
	}
	if got := codesOf(rep.Problems, true); strings.Join(got, " ") != strings.Join(codesOf(after.Problems, false), " ") {
		t.Errorf("repair report leaves %v, the second check finds %v", got, codesOf(after.Problems, false))
	}
	// The whole report: what the first check found (fixed unless
	// unfixable) plus what a fix uncovers, written out per case. A
	// fix that leaves a count or a size for a later round to find
	// shows up here as an extra code.
	var whole []string
	for _, p := range before.Problems {
		if !p.Warning {
			whole = append(whole, string(p.Code))
		}
	}
	whole = append(whole, repairUncovers[name]...)
	if got, want := strings.Join(codesOf(rep.Problems, false), " "), strings.Join(markFixed(whole, unfixable), " "); got != want {
		t.Errorf("repair report %v, want %v\n%v", got, want, rep.Problems)
	}
}

// checkRepairPaths: a name resolves as before the damage or as after it
// (a repair moves to lost+found only what the damage cut off), and -y
// makes up no name.
func checkRepairPaths(t *testing.T, name string, originalPaths, damagedPaths, repaired map[string]uint64) {
	t.Helper()
	for p, ino := range originalPaths {
		if repaired[p] != ino && damagedPaths[p] == ino && p != repairMoves[name] {
			t.Errorf("%s: inode %d before and after the damage, %d after -y", p, ino, repaired[p])
		}
	}
	// Every path after -y was there before or after the damage, or is
	// in /lost+found.
	for p, ino := range repaired {
		_, before := originalPaths[p]
		_, damagedToo := damagedPaths[p]
		if !before && !damagedToo && !strings.HasPrefix(p, "/lost+found") && p != repairKeeps[name] {
			t.Errorf("%s (inode %d): a name -y made up", p, ino)
		}
	}
}

// checkRepairContents: a file reads as before the damage or as after it
// (a repair may undo damage, never make a third version). A file the
// damage made unreadable (readers refuse an inode whose extents do not
// add up) has no "after" version: its repair is judged by the report,
// not here.
func checkRepairContents(t *testing.T, original, damaged, repaired map[uint64][32]byte) {
	t.Helper()
	for ino, sum := range repaired {
		after, readable := damaged[ino]
		if old, ok := original[ino]; ok && old != sum && readable && after != sum {
			t.Errorf("inode %d changed its contents", ino)
		}
	}
}
