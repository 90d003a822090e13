package check

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// TestRepairSurgerySnapshot runs every surgery case on an image whose
// snapshot "s" shares every node and extent of the populated tree, and
// repairs it with -y. The damage goes to the live tree (through
// copy-on-write: the snapshot keeps its nodes) or to what every tree
// shares (extent, csum trees). Whatever -y does or withholds: the
// snapshot reads exactly as after the damage (names, bytes), the live
// tree's files read as before or after the damage, -y makes up no name,
// finds nothing the damage did not cause, and leaves fixable problems
// only when it says why (repair_limited). Where it leaves no reference
// count wrong, 40 files written and removed after it keep the snapshot
// intact (a count set too low would free its nodes or data).
func TestRepairSurgerySnapshot(t *testing.T) {
	f, base := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	populate(t, f)
	must(t, f.Sync())
	_, err := f.CreateSnapshot("s")
	must(t, err)
	must(t, f.Close())
	original := contents(t, base)
	originalPaths := pathsOf(t, base)
	if snap := snapshotTree(t, base, "s"); len(snap) < 10 {
		t.Fatalf("snapshot lists %d entries", len(snap))
	}
	for _, tc := range surgeryCases() {
		t.Run(tc.name, func(t *testing.T) {
			s := newSurgeon(t, base)
			tc.damage(s)
			must(t, s.tx.Commit())
			before := fsckDevs(t, s.devs, Options{CheckData: true})
			damaged, damagedPaths := contents(t, s.devs), pathsOf(t, s.devs)
			snapDamaged := snapshotTree(t, s.devs, "s")
			rep := repairDevs(t, s.devs, ModeRepair)
			after := fsckDevs(t, s.devs, Options{CheckData: true})
			checkRepairPaths(t, tc.name, originalPaths, damagedPaths, pathsOf(t, s.devs))
			checkRepairContents(t, original, damaged, contents(t, s.devs))
			checkSnapshotKept(t, "after -y", snapDamaged, snapshotTree(t, s.devs, "s"))
			checkSnapshotRepair(t, tc.name, before, rep, after)
			if rep.RepairLimited != "" { // the damage is the live tree's or every tree's
				t.Errorf("-y withheld fixes: %s (left %v)", rep.RepairLimited, codesOf(after.Problems, false))
			}
			if !hasAnyCode(after.Problems, MetaRefs, ExtentRefs, MetaMissing, FileExtentNoItem, MetaLeaked, ExtentUnreferenced) {
				churn(t, s.devs)
				checkSnapshotKept(t, "after -y and 40 files", snapDamaged, snapshotTree(t, s.devs, "s"))
			}
		})
	}
}

// checkSnapshotRepair: after -y, a problem left is one no mode fixes,
// one a fixable code cannot mend in this case (no fix found for it, or
// repairLeaves), or one the repair withheld and said so; none is new.
func checkSnapshotRepair(t *testing.T, name string, before, rep, after *Report) {
	t.Helper()
	had := map[Code]bool{}
	for _, p := range before.Problems {
		had[p.Code] = true
	}
	for _, c := range repairUncovers[name] {
		had[Code(c)] = true
	}
	for _, p := range after.Problems {
		if p.Warning {
			continue
		}
		ci, _ := p.Code.Info()
		switch {
		case !had[p.Code]:
			t.Errorf("after -y: %v, which the damage did not cause (before: %v)", p, codesOf(before.Problems, false))
		case ModeRepair.allows(ci.fix) && p.fix != nil && rep.RepairLimited == "" && !slices.Contains(repairLeaves[name], string(p.Code)) && !strings.HasPrefix(p.Tree, "fs@"):
			t.Errorf("after -y: fixable %v left, and the repair does not say why", p)
		}
	}
}

// hasAnyCode reports whether ps holds a problem with one of codes.
func hasAnyCode(ps []Problem, codes ...Code) bool {
	for _, c := range codes {
		if hasCode(ps, c) {
			return true
		}
	}
	return false
}

// churn writes 40 files into the live tree and removes every other one,
// in several commits: space the counts call free is reused.
func churn(t *testing.T, devs []*device.MemDevice) {
	t.Helper()
	f := openedWritable(t, devs)
	if f == nil {
		return // a set -y left unopenable is judged by the report
	}
	for i := range 40 {
		in, err := f.Create(fmt.Sprintf("/churn%02d", i), fsys.Attr{Mode: 0o644})
		if err != nil {
			t.Fatalf("create after -y: %v", err)
		}
		must(t, f.WriteAt(in, pattern(9000, byte(i)), 0))
		if i%10 == 9 {
			must(t, f.Sync())
		}
	}
	for i := 0; i < 40; i += 2 {
		must(t, f.Remove(fmt.Sprintf("/churn%02d", i)))
	}
	must(t, f.Close())
}

// checkSnapshotKept: every path of the snapshot that was there before is
// there after, with the same inode, and reads the same bytes when it read
// before.
func checkSnapshotKept(t *testing.T, when string, before, after map[string]string) {
	t.Helper()
	var diffs []string
	for p, v := range before {
		if after[p] != v {
			diffs = append(diffs, fmt.Sprintf("%s: %q, was %q", p, after[p], v))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Errorf("snapshot s %s: %s", when, strings.Join(diffs, "; "))
	}
}

// snapshotTree maps each path of snapshot name (at most 64 deep) to its
// inode and, for a regular file that reads whole, the sha256 of its
// bytes.
func snapshotTree(t *testing.T, devs []*device.MemDevice, name string) map[string]string {
	t.Helper()
	out := map[string]string{}
	f := openedFS(t, devs)
	if f == nil {
		return out
	}
	v, err := f.OpenSnapshot(name)
	if err != nil {
		return out
	}
	var walk func(in *fsys.Inode, dir string, depth int)
	walk = func(in *fsys.Inode, dir string, depth int) {
		if depth > 64 {
			return
		}
		_ = v.ReadDir(in, func(e fsys.DirEntry) bool {
			p := dir + "/" + e.Name
			c, err := v.Inode(e.Ino)
			if err != nil {
				out[p] = fmt.Sprint(e.Ino, " unreadable")
				return true
			}
			val := fmt.Sprint(e.Ino)
			switch {
			case c.IsDir():
				walk(c, p, depth+1)
			case e.Type == format.FileTypeRegular && c.Size < 64<<20:
				buf := make([]byte, c.Size)
				if n, err := v.ReadAt(c, buf, 0); err == nil && uint64(n) == c.Size {
					val += fmt.Sprintf(" %x", sha256.Sum256(buf))
				}
			}
			out[p] = val
			return true
		})
	}
	if root, err := v.Inode(format.RootDirIno); err == nil {
		walk(root, "", 0)
	}
	return out
}

// openedWritable opens devs for writing, nil when they cannot be opened.
func openedWritable(t *testing.T, devs []*device.MemDevice) *fsys.FS {
	t.Helper()
	vol, err := volume.FromDevices(asDevices(devs), true)
	if err != nil {
		return nil
	}
	st, err := store.OpenVolume(vol)
	if err != nil {
		vol.Close()
		return nil
	}
	f, err := fsys.New(st, fsys.Options{})
	if err != nil {
		st.Close()
		return nil
	}
	return f
}
