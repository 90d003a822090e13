package check

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// opener reopens a set of memory devices writable, as fsck reopens the
// images for every repair round.
func opener(devs []*device.MemDevice) func() (*volume.Volume, error) {
	return func() (*volume.Volume, error) {
		var ds []device.Device
		for _, d := range devs {
			ds = append(ds, d)
		}
		return volume.FromDevices(ds, true)
	}
}

func repairDevs(t *testing.T, devs []*device.MemDevice, mode Mode) *Report {
	t.Helper()
	rep, err := Repair(opener(devs), Options{Mode: mode, CheckData: true})
	if err != nil {
		t.Fatalf("repair: %v", err)
	}
	return rep
}

// contents maps every regular file reachable from the root, by inode, to
// the hash of its bytes; files that cannot be read are left out.
func contents(t *testing.T, devs []*device.MemDevice) map[uint64][32]byte {
	t.Helper()
	out := map[uint64][32]byte{}
	f := openedFS(t, devs)
	if f == nil {
		return out
	}
	seen := map[uint64]bool{}
	var walk func(in *fsys.Inode, depth int)
	walk = func(in *fsys.Inode, depth int) {
		if depth > 64 || seen[in.Ino] {
			return
		}
		seen[in.Ino] = true
		_ = f.ReadDir(in, func(e fsys.DirEntry) bool {
			c, err := f.Inode(e.Ino)
			if err != nil {
				return true
			}
			switch {
			case c.IsDir():
				walk(c, depth+1)
			case e.Type == format.FileTypeRegular && c.Size < 64<<20:
				buf := make([]byte, c.Size)
				if n, err := f.ReadAt(c, buf, 0); err == nil && uint64(n) == c.Size {
					out[c.Ino] = sha256.Sum256(buf)
				}
			}
			return true
		})
	}
	if root, err := f.Inode(format.RootDirIno); err == nil {
		walk(root, 0)
	}
	return out
}

// openedFS opens devs for reading, nil when they cannot be opened (the
// walkers then see an empty tree).
func openedFS(t *testing.T, devs []*device.MemDevice) *fsys.FS {
	t.Helper()
	st, err := store.OpenVolume(volumeOf(t, devs))
	if err != nil {
		return nil
	}
	f, err := fsys.New(st, fsys.Options{})
	if err != nil {
		return nil
	}
	return f
}

// pathsOf maps every path reachable from the root (through directory
// entries, at most 64 deep) to its inode.
func pathsOf(t *testing.T, devs []*device.MemDevice) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	f := openedFS(t, devs)
	if f == nil {
		return out
	}
	seen := map[uint64]bool{}
	var walk func(in *fsys.Inode, dir string, depth int)
	walk = func(in *fsys.Inode, dir string, depth int) {
		if depth > 64 || seen[in.Ino] {
			return
		}
		seen[in.Ino] = true
		_ = f.ReadDir(in, func(e fsys.DirEntry) bool {
			p := dir + "/" + e.Name
			out[p] = e.Ino
			if c, err := f.Inode(e.Ino); err == nil && c.IsDir() {
				walk(c, p, depth+1)
			}
			return true
		})
	}
	if root, err := f.Inode(format.RootDirIno); err == nil {
		walk(root, "", 0)
	}
	return out
}

// codesOf lists the codes of the problems, sorted, with fixed ones
// marked "+".
func codesOf(ps []Problem, onlyLeft bool) []string {
	var out []string
	for _, p := range ps {
		if p.Warning || (onlyLeft && p.Fixed) {
			continue
		}
		c := string(p.Code)
		if p.Fixed {
			c += "+"
		}
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// TestRepairPreen: -p fixes only what cannot lose data: a dangling entry
// (removing it is a -y fix) stays, and -p reports it as left.
func TestRepairPreen(t *testing.T) {
	f, base := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	populate(t, f)
	s := newSurgeon(t, base)
	s.link(format.RootDirIno, "ghost", 90000, format.FileTypeRegular)
	s.del(format.FSTree, format.Key{ObjectID: 90000, Type: format.InodeRefKey, Offset: format.RootDirIno})
	mid := s.ino("/mid")
	s.inode(mid, func(in *format.InodeItem) { in.NBytes = 1 })
	must(t, s.tx.Commit())
	rep := repairDevs(t, s.devs, ModePreen)
	got := codesOf(rep.Problems, false)
	if strings.Join(got, " ") != "ENTRY_DANGLING NBYTES+" {
		t.Fatalf("preen: %v", rep.Problems)
	}
	rep = repairDevs(t, s.devs, ModeRepair)
	// The root's size drops with the entry in the same transaction.
	if got := codesOf(rep.Problems, false); strings.Join(got, " ") != "ENTRY_DANGLING+" {
		t.Fatalf("repair: %v", rep.Problems)
	}
	if after := fsckDevs(t, s.devs, Options{}); len(after.Problems) != 0 {
		t.Fatalf("after -y: %v", after.Problems)
	}
}

// TestRepairCopies: a bad copy of a dup node and of a raid1 data sector
// are rewritten from the good copy; the files read the same.
func TestRepairCopies(t *testing.T) {
	f, devs := newFS(t, layout{2, format.ProfileRaid1, format.ProfileRaid1})
	populate(t, f)
	want := contents(t, devs)
	copies := allNodeCopies(t, devs)
	s := newSurgeon(t, devs)
	l, _ := s.diskExtent(s.ino("/mid"))
	s.tx.Abort()
	dt, err := s.st.Vol.Locate(l + 4096)
	must(t, err)
	// Damage the devices the surgeon copied.
	devs = s.devs
	flip(devs[dt[1].DevID-1], int64(dt[1].Physical)+100)
	nc := copies[len(copies)/2]
	flip(devs[nc.target.DevID-1], int64(nc.target.Physical)+300)
	rep := repairDevs(t, devs, ModePreen)
	var fixed []string
	for _, p := range rep.Problems {
		if !p.Fixed {
			t.Errorf("left: %v", p)
		}
		fixed = append(fixed, fmt.Sprintf("%s@%d/%d", p.Code, p.Logical, *p.Copy))
	}
	sort.Strings(fixed)
	wantFixed := []string{fmt.Sprintf("%s@%d/1", DataCopyBad, l+4096), fmt.Sprintf("%s@%d/%d", NodeCopyBad, nc.logical, nc.copy)}
	sort.Strings(wantFixed)
	if strings.Join(fixed, " ") != strings.Join(wantFixed, " ") {
		t.Fatalf("fixed %v, want %v", fixed, wantFixed)
	}
	if rep := fsckDevs(t, devs, Options{CheckData: true}); len(rep.Problems) != 0 {
		t.Fatalf("after -p: %v", rep.Problems)
	}
	got := contents(t, devs)
	if len(got) != len(want) || len(want) < 10 {
		t.Fatalf("%d files, had %d", len(got), len(want))
	}
	for ino, sum := range want {
		if got[ino] != sum {
			t.Errorf("inode %d changed", ino)
		}
	}
}

// TestRepairCancelled: a cancelled context stops a repair before it
// changes anything.
func TestRepairCancelled(t *testing.T) {
	f, devs := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	populate(t, f)
	s := newSurgeon(t, devs)
	s.inode(s.ino("/mid"), func(in *format.InodeItem) { in.NBytes = 1 })
	must(t, s.tx.Commit())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Repair(opener(s.devs), Options{Mode: ModeRepair, Context: ctx}); !errors.Is(err, ErrCancelled) {
		t.Fatalf("err %v, want ErrCancelled", err)
	}
	if rep := fsckDevs(t, s.devs, Options{}); len(rep.Problems) != 1 || rep.Problems[0].Code != NBytes {
		t.Fatalf("after a cancelled repair: %v", rep.Problems)
	}
}

// TestRepairBackupRoots: with no copy of the fs tree's root readable, -y
// puts back the newest backup root set that checks clean, reports its
// generation, and the files are those of that generation. So on an image
// with a snapshot (the set checks clean, snapshot trees and counts
// included): the snapshot reads as it did.
func TestRepairBackupRoots(t *testing.T) {
	for _, snap := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "snapshot"}[snap], func(t *testing.T) { testRepairBackupRoots(t, snap) })
	}
}

func testRepairBackupRoots(t *testing.T, snap bool) {
	f, devs := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	populate(t, f)
	var snapBefore map[string]string
	if snap {
		must(t, f.Sync())
		_, err := f.CreateSnapshot("s")
		must(t, err)
		snapBefore = snapshotTree(t, devs, "s")
	}
	want := contents(t, devs)
	gen := f.Store().Super().Generation
	in, err := f.Create("/late", fsys.Attr{Mode: 0o644})
	must(t, err)
	must(t, f.WriteAt(in, pattern(9000, 3), 0))
	must(t, f.Sync())
	sb := f.Store().Super()
	root := sb.Roots.Root(format.FSTree)
	targets, err := f.Store().Vol.Locate(root.Logical)
	must(t, err)
	for _, tg := range targets {
		flip(devs[tg.DevID-1], int64(tg.Physical)+200)
	}
	if rep := fsckDevs(t, devs, Options{}); !hasCode(rep.Problems, TreeRootBad) {
		t.Fatalf("not reported: %v", rep.Problems)
	}
	if rep := repairDevs(t, devs, ModePreen); rep.RestoredFrom != 0 || !hasCode(rep.Problems, TreeRootBad) {
		t.Fatalf("-p restored roots: %d %v", rep.RestoredFrom, rep.Problems)
	}
	rep := repairDevs(t, devs, ModeRepair)
	if rep.RestoredFrom != gen {
		t.Fatalf("restored generation %d, want %d: %v", rep.RestoredFrom, gen, rep.Problems)
	}
	for _, p := range rep.Problems {
		if !p.Fixed {
			t.Errorf("left: %v", p)
		}
	}
	if after := fsckDevs(t, devs, Options{CheckData: true}); len(after.Problems) != 0 {
		t.Fatalf("after -y: %v", after.Problems)
	}
	got := contents(t, devs)
	if len(got) != len(want) {
		t.Fatalf("%d files, want the %d of generation %d", len(got), len(want), gen)
	}
	if snap {
		checkSnapshotKept(t, "after the backup roots", snapBefore, snapshotTree(t, devs, "s"))
	}
	for ino, sum := range want {
		if got[ino] != sum {
			t.Errorf("inode %d differs from generation %d", ino, gen)
		}
	}
}

// TestRepairDedupeRebuilt: a dropped dedupe index entry is rebuilt from
// its extent's data, byte for byte, by -p.
func TestRepairDedupeRebuilt(t *testing.T) {
	_, devs := dedupeFS(t)
	s := newSurgeon(t, devs)
	victim := firstDedupeEntry(t, s)
	s.del(format.DedupeTree, victim.Key)
	must(t, s.tx.Commit())
	rep := repairDevs(t, s.devs, ModePreen)
	if len(rep.Problems) != 1 || rep.Problems[0].Code != DedupeEntries || !rep.Problems[0].Fixed {
		t.Fatalf("-p: %v", rep.Problems)
	}
	if got := committedDedupeItem(t, s.devs, victim.Key); !bytes.Equal(got, victim.Data) {
		t.Fatalf("rebuilt entry %x, was %x", got, victim.Data)
	}
}

// firstDedupeEntry is the first item of the dedupe tree s sees.
func firstDedupeEntry(t *testing.T, s *surgeon) format.Item {
	t.Helper()
	var first format.Item
	must(t, s.tree(format.DedupeTree).Scan(format.Key{}, format.MaxKey, func(it format.Item) (bool, error) {
		first = format.Item{Key: it.Key, Data: bytes.Clone(it.Data)}
		return false, nil
	}))
	if first.Key.Type != format.DedupeItemKey {
		t.Fatal("no dedupe entries: test too weak")
	}
	return first
}

// committedDedupeItem reads the dedupe item at k from the committed devs.
func committedDedupeItem(t *testing.T, devs []*device.MemDevice, k format.Key) []byte {
	t.Helper()
	st, err := store.OpenVolume(volumeOf(t, devs))
	must(t, err)
	got, err := st.Tree(format.DedupeTree).Get(k)
	must(t, err)
	return got
}

// TestLayoutFixOneRound: a layout fix leaves nothing for a later round:
// what depended on the dropped or cut item (the data extent's references,
// nbytes, the names) is made whole by the same transaction, so no commit
// of it has a problem the fix made.
func TestLayoutFixOneRound(t *testing.T) {
	f, base := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	populate(t, f)
	n := 0
	for _, tc := range surgeryCases() {
		s := newSurgeon(t, base)
		tc.damage(s)
		must(t, s.tx.Commit())
		before := fsckDevs(t, s.devs, Options{})
		layout := false
		for _, p := range before.Problems {
			layout = layout || isLayoutFix(p.Code)
		}
		if !layout {
			continue
		}
		n++
		vol, err := opener(s.devs)()
		must(t, err)
		must(t, repairRound(vol, Options{Mode: ModeRepair}.fixable(before.Problems, false), Options{Mode: ModeRepair}))
		must(t, vol.Close())
		if after := fsckDevs(t, s.devs, Options{}); len(after.Problems) != 0 {
			t.Errorf("%s: after one round: %v", tc.name, after.Problems)
		}
	}
	if n < 10 {
		t.Fatalf("%d surgery cases with layout problems", n)
	}
}

// TestStrongTailChecked: an xxh3 entry's strong tail must be the BLAKE3 of
// its block (a writer shares on it unread): a true tail is clean, a tail
// that lies is DEDUPE_HASH with --check-data, and -p rebuilds the entry
// from the data (without a tail).
func TestStrongTailChecked(t *testing.T) {
	f, d := newOneDeviceFS(t, 14, format.Settings{Dedupe: true, DedupeBlockLog2: 13, DedupeHash: format.CsumXXH3})
	in, err := f.Create("/f", fsys.Attr{Mode: 0o644})
	must(t, err)
	data := pattern(3*8192, 5)
	must(t, f.WriteAt(in, data, 0))
	must(t, f.Sync())
	base := []*device.MemDevice{d}
	for _, lie := range []bool{false, true} {
		s := newSurgeon(t, base)
		victim := firstDedupeEntry(t, s)
		e, err := format.UnmarshalDedupeItem(victim.Key.ObjectID, victim.Data)
		must(t, err)
		var block []byte
		for i := 0; i+int(e.Length) <= len(data); i += int(e.Length) {
			if b := data[i : i+int(e.Length)]; format.DedupeHash(format.Checksum(format.CsumXXH3, b)) == e.Hash {
				block = b
			}
		}
		if block == nil {
			t.Fatal("no block of the file has the entry's hash")
		}
		tail := format.StrongDedupeHash(block)
		if lie {
			tail[0] ^= 1
		}
		e.Strong = &tail
		s.put(format.DedupeTree, victim.Key, format.MarshalDedupeItem(e))
		must(t, s.tx.Commit())
		rep := fsckDevs(t, s.devs, Options{CheckData: true})
		if !lie {
			if len(rep.Problems) != 0 {
				t.Fatalf("a true tail: %v", rep.Problems)
			}
			continue
		}
		if len(rep.Problems) != 1 || rep.Problems[0].Code != DedupeHash {
			t.Fatalf("a lying tail: %v", rep.Problems)
		}
		rep = repairDevs(t, s.devs, ModePreen)
		if len(rep.Problems) != 1 || !rep.Problems[0].Fixed {
			t.Fatalf("-p: %v", rep.Problems)
		}
		if got := committedDedupeItem(t, s.devs, victim.Key); !bytes.Equal(got, victim.Data) {
			t.Fatalf("rebuilt entry %x, want the tail-less %x", got, victim.Data)
		}
	}
}

// cleanAfter wants a second check, data read too, to find nothing: a
// repair leaves nothing for the next run to fix.
func cleanAfter(t *testing.T, devs []*device.MemDevice, what string) {
	t.Helper()
	if rep := fsckDevs(t, devs, Options{CheckData: true}); !rep.Clean() {
		t.Errorf("%s: %v", what, rep.Problems)
	}
}

// readsAsBefore wants every file that read before (contents) to read the
// same bytes from devs, and no other.
func readsAsBefore(t *testing.T, devs []*device.MemDevice, before map[uint64][32]byte) {
	t.Helper()
	if got := contents(t, devs); !maps.Equal(got, before) {
		t.Errorf("%d of %d files read back as before", len(got), len(before))
	}
}
