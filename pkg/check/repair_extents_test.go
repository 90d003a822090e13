package check

import (
	"bytes"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/ddfs/ddfs/format"
)

// TestRepairOverlapRestoresExtents: an extent that overlaps the one
// before it is cut back to where that one ends, or dropped when it lies
// wholly inside it; either way /big's extent items come out exactly as
// they were before the damage (keys and bytes), and a second check is
// clean.
func TestRepairOverlapRestoresExtents(t *testing.T) {
	f, base := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	populate(t, f)
	orig := newSurgeon(t, base)
	big := orig.ino("/big")
	want := orig.extents(big)
	orig.tx.Abort()
	last := want[len(want)-1]
	lx, err := format.UnmarshalFileExtentItem(last.Data)
	must(t, err)
	lastEnd := last.Key.Offset + lx.Len()
	for _, tc := range []struct {
		name   string
		damage func(s *surgeon)
		codes  string
		extra  []format.Item // extents after -y beyond /big's own
	}{
		{"head 4 KiB early", func(s *surgeon) {
			x := *lx
			x.Offset -= 4096
			x.NumBytes += 4096
			s.del(format.FSTree, last.Key)
			k := last.Key
			k.Offset -= 4096
			s.put(format.FSTree, k, format.MarshalFileExtentItem(&x))
		}, "FILE_EXTENT_OVERLAP+ NBYTES+", nil},
		{"a hole ending where the last extent ends", func(s *surgeon) {
			hole := &format.FileExtentItem{Type: format.FileExtentRegular, NumBytes: 4096, RAMBytes: 4096}
			s.put(format.FSTree, format.Key{ObjectID: big, Type: format.FileExtentKey, Offset: lastEnd - 4096}, format.MarshalFileExtentItem(hole))
		}, "FILE_EXTENT_OVERLAP+", nil},
		{"a hole whose head overlaps the last extent", func(s *surgeon) {
			// [lastEnd-4K, lastEnd+4K), the file grown to cover it: the
			// head is cut, [lastEnd, lastEnd+4K) of the hole stays.
			hole := &format.FileExtentItem{Type: format.FileExtentRegular, NumBytes: 8192, RAMBytes: 8192}
			s.put(format.FSTree, format.Key{ObjectID: big, Type: format.FileExtentKey, Offset: lastEnd - 4096}, format.MarshalFileExtentItem(hole))
			s.inode(big, func(in *format.InodeItem) { in.Size = lastEnd + 4096 })
		}, "FILE_EXTENT_OVERLAP+", []format.Item{{
			Key:  format.Key{ObjectID: big, Type: format.FileExtentKey, Offset: lastEnd},
			Data: format.MarshalFileExtentItem(&format.FileExtentItem{Type: format.FileExtentRegular, Offset: 4096, NumBytes: 4096, RAMBytes: 8192}),
		}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSurgeon(t, base)
			tc.damage(s)
			must(t, s.tx.Commit())
			rep := repairDevs(t, s.devs, ModeRepair)
			if got := strings.Join(codesOf(rep.Problems, false), " "); got != tc.codes {
				t.Errorf("repair %s, want %s\n%v", got, tc.codes, rep.Problems)
			}
			after := newSurgeon(t, s.devs)
			got := after.extents(big)
			after.tx.Abort()
			want := append(slices.Clone(want), tc.extra...)
			if len(got) != len(want) {
				t.Fatalf("%d extents after -y, want %d: %v", len(got), len(want), got)
			}
			for i := range want {
				if got[i].Key != want[i].Key || !bytes.Equal(got[i].Data, want[i].Data) {
					t.Errorf("extent %d: %v %x, want %v %x", i, got[i].Key, got[i].Data, want[i].Key, want[i].Data)
				}
			}
			if rep := fsckDevs(t, s.devs, Options{CheckData: true}); !rep.Clean() {
				t.Errorf("after -y: %v", rep.Problems)
			}
		})
	}
}

// TestRepairManyNodeCopies: more bad node copies than repair rounds are
// all rewritten (a round fixes every copy, not one).
func TestRepairManyNodeCopies(t *testing.T) {
	devs := build(t, layout{1, format.ProfileSingle, format.ProfileDup}, 150)
	var bad []nodeCopy
	seen := map[uint64]bool{}
	for _, nc := range allNodeCopies(t, devs) {
		if nc.copy == 1 && !seen[nc.logical] && len(bad) < maxRounds+3 {
			seen[nc.logical] = true
			bad = append(bad, nc)
		}
	}
	if len(bad) < maxRounds+3 {
		t.Fatalf("only %d nodes", len(bad))
	}
	for _, nc := range bad {
		flip(devs[nc.target.DevID-1], int64(nc.target.Physical)+300)
	}
	rep := repairDevs(t, devs, ModePreen)
	fixed := 0
	for _, p := range rep.Problems {
		if p.Code != NodeCopyBad || !p.Fixed || !p.CopyIs(1) {
			t.Errorf("unexpected %v", p)
			continue
		}
		fixed++
	}
	if fixed != len(bad) {
		t.Errorf("%d copies fixed, want %d", fixed, len(bad))
	}
	if rep := checkDevs(t, devs); len(rep.Problems) != 0 {
		t.Errorf("after -p: %v", rep.Problems)
	}
}

// TestRepairNoCleanBackup: with the fs tree's root unreadable in the
// current roots and in every backup, -y restores nothing, stops, and
// reports the root as left.
func TestRepairNoCleanBackup(t *testing.T) {
	f, devs := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	populate(t, f)
	sb := f.Store().Super()
	roots := []format.RootPtr{sb.Roots.Root(format.FSTree)}
	for _, b := range sb.Backups {
		if b.Generation != 0 {
			roots = append(roots, b.Root(format.FSTree))
		}
	}
	done := map[uint64]bool{}
	for _, r := range roots {
		if r.Logical == 0 || done[r.Logical] {
			continue
		}
		done[r.Logical] = true
		targets, err := f.Store().Vol.Locate(r.Logical)
		must(t, err)
		for _, tg := range targets {
			flip(devs[tg.DevID-1], int64(tg.Physical)+200)
		}
	}
	rep := repairDevs(t, devs, ModeRepair)
	if rep.RestoredFrom != 0 {
		t.Fatalf("restored generation %d from a damaged backup", rep.RestoredFrom)
	}
	left := false
	for _, p := range rep.Problems {
		left = left || (p.Code == TreeRootBad && !p.Fixed)
	}
	if !left {
		t.Fatalf("TREE_ROOT_BAD not left: %v", rep.Problems)
	}
}

// TestRepairNameKeepsIndex: a name whose DIR_INDEX is gone is made whole
// again at the index its INODE_REF records (2, the first), not at a new
// one: /la's DIR_INDEX 2 names lb again and /la's seq stays 3.
func TestRepairNameKeepsIndex(t *testing.T) {
	f, base := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	populate(t, f)
	s := newSurgeon(t, base)
	la, lb := s.ino("/la"), s.ino("/la/lb")
	s.del(format.FSTree, dirIndexKey(la, 2))
	after := repairWants(t, s, "DIR_NLINK+ DIR_SIZE+ REF_NO_INDEX+")
	defer after.tx.Abort()
	e, err := format.UnmarshalDirEntry(after.get(format.FSTree, dirIndexKey(la, 2)))
	must(t, err)
	if e.Ino != lb || e.Name != "lb" || e.Type != format.FileTypeDir {
		t.Errorf("DIR_INDEX 2 of /la: %+v, want lb → %d", e, lb)
	}
	in, err := format.UnmarshalInodeItem(after.get(format.FSTree, inodeKey(la)))
	must(t, err)
	if in.Seq != 3 || in.Size != 1 || in.Nlink != 3 {
		t.Errorf("/la seq %d size %d nlink %d, want 3 1 3", in.Seq, in.Size, in.Nlink)
	}
}

// TestRepairRecreatedInodes: inode items rebuilt from what is left are
// the root 0755, another directory 0700, a file 0600 with the size and
// bytes of its extents (recreateInode's rule, as btrfs check does).
func TestRepairRecreatedInodes(t *testing.T) {
	f, base := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	populate(t, f)
	s := newSurgeon(t, base)
	dir, mid := s.ino("/dir"), s.ino("/mid")
	for _, ino := range []uint64{format.RootDirIno, dir, mid} {
		s.del(format.FSTree, inodeKey(ino))
	}
	must(t, s.tx.Commit())
	repairDevs(t, s.devs, ModeRepair)
	if rep := fsckDevs(t, s.devs, Options{}); !rep.Clean() {
		t.Fatalf("after -y: %v", rep.Problems)
	}
	after := newSurgeon(t, s.devs)
	defer after.tx.Abort()
	for _, tc := range []struct {
		ino         uint64
		mode        uint32
		size, bytes uint64
	}{
		{format.RootDirIno, syscall.S_IFDIR | 0o755, 0, 0},
		{dir, syscall.S_IFDIR | 0o700, 0, 0},
		{mid, syscall.S_IFREG | 0o600, 8192, 8192},
	} {
		in, err := format.UnmarshalInodeItem(after.get(format.FSTree, inodeKey(tc.ino)))
		must(t, err)
		if in.Mode != tc.mode || (tc.size != 0 && (in.Size != tc.size || in.NBytes != tc.bytes)) {
			t.Errorf("inode %d: mode %o size %d nbytes %d, want %o %d %d", tc.ino, in.Mode, in.Size, in.NBytes, tc.mode, tc.size, tc.bytes)
		}
	}
}

// repairWants commits s's damage, runs -y, fails unless the repair report
// is exactly want (codesOf form), and opens the repaired image again.
func repairWants(t *testing.T, s *surgeon, want string) *surgeon {
	t.Helper()
	must(t, s.tx.Commit())
	rep := repairDevs(t, s.devs, ModeRepair)
	if got := strings.Join(codesOf(rep.Problems, false), " "); got != want {
		t.Fatalf("repair %s, want %s\n%v", got, want, rep.Problems)
	}
	return newSurgeon(t, s.devs)
}
