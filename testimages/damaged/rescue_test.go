package damaged

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/inspect"
	"github.com/ddfs/ddfs/pkg/rescue"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
	"github.com/ddfs/ddfs/testimages/damaged/corpus"
)

// writeGuard counts every call that could change a device.
type writeGuard struct {
	device.Device
	writes *int
}

func (g writeGuard) WriteAt(p []byte, off int64) (int, error) {
	*g.writes++
	return 0, errors.New("rescue wrote to the image")
}
func (g writeGuard) Discard(off, n int64) error { *g.writes++; return errors.New("rescue discarded") }

// rescueInto runs a rescue of devs into dir through devices that refuse
// and count writes; whole compares every byte of the devices too.
func rescueInto(t *testing.T, devs []*device.MemDevice, dir string, whole bool) (*rescue.Report, error) {
	t.Helper()
	var before [][]byte
	writes := 0
	ds := make([]device.Device, len(devs))
	for i, d := range devs {
		ds[i] = writeGuard{d, &writes}
		if whole {
			before = append(before, memBytes(d))
		}
	}
	vol, err := volume.FromDevices(ds, false)
	if err != nil {
		return nil, err
	}
	rep, err := rescue.Run(vol, dir, rescue.Options{})
	if writes > 0 {
		t.Fatalf("rescue tried %d writes", writes)
	}
	for i := range before {
		if !bytes.Equal(before[i], memBytes(devs[i])) {
			t.Fatalf("rescue changed device %d", i+1)
		}
	}
	return rep, err
}

func memBytes(d *device.MemDevice) []byte {
	b := make([]byte, d.Size())
	d.ReadAt(b, 0)
	return b
}

// rescued lists the files of corpus.Expected dir holds with their bytes.
func rescued(dir string) map[string]bool {
	out := map[string]bool{}
	for p, want := range corpus.Expected() {
		if got, err := os.ReadFile(filepath.Join(dir, p)); err == nil && bytes.Equal(got, want) {
			out[p] = true
		}
	}
	return out
}

// TestRescueCampaign: over every variant of the damage campaign, rescue
// copies out every file that read back before (corpus.Readable) with its
// bytes, writes nothing to the image, and fails outright only where the
// set has no readable file at all. Variants whose fs-tree root is lost
// (its node's copies all flipped) get every file back from the scan.
func TestRescueCampaign(t *testing.T) {
	start := time.Now()
	fields := 0 // DDFS_CAMPAIGN_FIELDS=N also changes N fields of each item (make stress)
	if s := os.Getenv("DDFS_CAMPAIGN_FIELDS"); s != "" {
		fmt.Sscan(s, &fields)
	}
	for _, ndev := range []int{1, 2} {
		t.Run(fmt.Sprintf("%ddev", ndev), func(t *testing.T) {
			base, err := corpus.Base(ndev)
			if err != nil {
				t.Fatal(err)
			}
			fsRoot := fmt.Sprintf("node %v/%d all copies", format.FSTree, superOfBase(t, base).Roots.Root(format.FSTree).Logical)
			vs, err := corpus.Variants(base, fields, 1)
			if err != nil {
				t.Fatal(err)
			}
			rootLost, work := 0, scratchDir(t)
			for _, v := range vs {
				damaged, err := corpus.Damage(base, v.Damage)
				if err != nil {
					continue
				}
				before := corpus.Readable(damaged)
				dir := filepath.Join(work, "out")
				_, err = rescueInto(t, damaged, dir, false)
				if err != nil {
					os.RemoveAll(dir)
					if len(before) > 0 {
						t.Errorf("%s: rescue failed with %d files readable: %v", v.Name, len(before), err)
					}
					continue
				}
				got := rescued(dir)
				if v.Name == fsRoot {
					rootLost++
					before = everyExpected() // the scan finds every leaf
				}
				if lost := missing(before, got); len(lost) > 0 {
					t.Errorf("%s: rescue did not copy %d readable files: %s", v.Name, len(lost), strings.Join(lost[:min(3, len(lost))], " "))
				}
				os.RemoveAll(dir)
			}
			if rootLost != 1 {
				t.Errorf("%d variants lose the fs root node, want 1", rootLost)
			}
			t.Logf("%d variants", len(vs))
		})
	}
	t.Logf("%v", time.Since(start))
}

// scratchDir is a folder in memory where there is one (/dev/shm): the
// campaign's ~16,000 file creations took 4 s of CPU and up to a minute
// of a loaded disk in /tmp.
func scratchDir(t *testing.T) string {
	dir, err := os.MkdirTemp("/dev/shm", "ddfs-rescue")
	if err != nil {
		return t.TempDir()
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func everyExpected() map[string]bool {
	out := map[string]bool{}
	for p := range corpus.Expected() {
		out[p] = true
	}
	return out
}

func superOfBase(t *testing.T, devs []*device.MemDevice) *format.Superblock {
	t.Helper()
	b := make([]byte, format.SuperblockSize)
	devs[0].ReadAt(b, int64(format.SuperblockOffsets[0]))
	sb, err := format.UnmarshalSuperblock(b)
	if err != nil {
		t.Fatal(err)
	}
	return sb
}

// breakRoots points the fs-tree root of every superblock copy, and with
// backups that of every backup root set too, at a node that does not
// exist (checksums recomputed): the roots are lost, the nodes are not.
func breakRoots(t *testing.T, devs []*device.MemDevice, backups bool) {
	t.Helper()
	for _, d := range devs {
		for _, off := range format.SuperblockOffsets {
			b := make([]byte, format.SuperblockSize)
			if n, _ := d.ReadAt(b, int64(off)); n != len(b) {
				continue
			}
			sb, err := format.UnmarshalSuperblock(b)
			if err != nil {
				continue
			}
			bogus := func(rs *format.RootSet) {
				r := rs.Root(format.FSTree)
				r.Logical += 1 << 30
				rs.SetRoot(format.FSTree, r)
			}
			bogus(&sb.Roots)
			for i := range sb.Backups {
				if backups && sb.Backups[i].Generation != 0 {
					bogus(&sb.Backups[i])
				}
			}
			nb, err := format.MarshalSuperblock(sb)
			if err != nil {
				t.Fatal(err)
			}
			d.WriteAt(nb, int64(off))
		}
		d.Flush()
	}
}

// TestRescueLostRoots: with the superblock's fs-tree root pointer lost,
// rescue takes the newest backup root and the newer leaves the scan
// finds (/last came after the backup); with every backup's lost too, the
// scan alone. Both bring back every file with its bytes, name the
// source, and leave the devices byte for byte as they were.
func TestRescueLostRoots(t *testing.T) {
	for _, c := range []struct {
		backups bool
		from    string
	}{{false, "backup"}, {true, "scan"}} {
		for _, ndev := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/%ddev", c.from, ndev), func(t *testing.T) {
				base, err := corpus.Base(ndev)
				if err != nil {
					t.Fatal(err)
				}
				devs := corpus.Snapshots(base)
				breakRoots(t, devs, c.backups)
				if n := len(corpus.Readable(devs)); n != 0 {
					t.Fatalf("%d files read with the root lost: the damage missed", n)
				}
				dir := t.TempDir()
				rep, err := rescueInto(t, devs, dir, true)
				if err != nil {
					t.Fatal(err)
				}
				if rep.RootsFrom != c.from {
					t.Errorf("roots from %q, want %q", rep.RootsFrom, c.from)
				}
				if lost := missing(everyExpected(), rescued(dir)); len(lost) > 0 {
					t.Errorf("%d files not rescued: %v; problems %v", len(lost), lost, rep.Problems)
				}
				if rep.LostFound != 0 {
					t.Errorf("%d inodes in lost+found, want 0", rep.LostFound)
				}
				checkAttrs(t, dir)
			})
		}
	}
}

// TestRescueBadData: a file whose data fails its checksum on every copy
// is not written (not even in part) and is listed with
// rescue.ErrDataChecksum; every other file is copied.
func TestRescueBadData(t *testing.T) {
	for _, ndev := range []int{1, 2} {
		t.Run(fmt.Sprintf("%ddev", ndev), func(t *testing.T) {
			base, err := corpus.Base(ndev)
			if err != nil {
				t.Fatal(err)
			}
			devs := corpus.Snapshots(base)
			flipData(t, devs, "/mid")
			dir := t.TempDir()
			rep, err := rescueInto(t, devs, dir, true)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(filepath.Join(dir, "mid")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("/mid with bad data was written (%v)", err)
			}
			listed := false
			for _, p := range rep.Problems {
				listed = listed || (p.Path == "/mid" && errors.Is(p.Err, rescue.ErrDataChecksum))
			}
			if !listed || len(rep.Problems) != 1 {
				t.Errorf("problems %v, want /mid's checksum only", rep.Problems)
			}
			want := everyExpected()
			delete(want, "/mid")
			if lost := missing(want, rescued(dir)); len(lost) > 0 {
				t.Errorf("%d good files not rescued: %v", len(lost), lost)
			}
		})
	}
}

// flipData changes a byte of the first data extent of p on every copy.
func flipData(t *testing.T, devs []*device.MemDevice, p string) {
	t.Helper()
	var d *inspect.InodeDump
	withStore(t, devs, func(st *store.FS) {
		ino, err := inspect.Lookup(st.Tree(format.FSTree), p)
		if err == nil {
			d, err = inspect.Inode(st, ino)
		}
		if err != nil || len(d.Extents) == 0 || len(d.Extents[0].Copies) == 0 {
			t.Fatalf("%s: no data extent (%v)", p, err)
		}
	})
	for _, c := range d.Extents[0].Copies {
		b := []byte{0}
		off := int64(c.Offset) + 100
		devs[c.DevID-1].ReadAt(b, off)
		b[0] ^= 0xff
		devs[c.DevID-1].WriteAt(b, off)
		devs[c.DevID-1].Flush()
	}
}

// TestRescueKeepsHostEntries: rescue into a folder that already holds
// entries of the image's names never writes over them nor through them:
// a file keeps its bytes; symlinks out of DIR in place of /dir (to a
// folder), /mid (dangling: a plain O_CREAT would make its target) and
// /dup1 (to a file: a truncating open would write it) are not followed;
// each is listed; the rest is copied.
func TestRescueKeepsHostEntries(t *testing.T) {
	base, err := corpus.Base(1)
	if err != nil {
		t.Fatal(err)
	}
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "small"), []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("outside"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"dir": outside, "mid": filepath.Join(outside, "mid"), "dup1": victim} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := rescueInto(t, corpus.Snapshots(base), dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "small")); string(b) != "keep" {
		t.Errorf("the host's small now holds %q", b)
	}
	if es, _ := os.ReadDir(outside); len(es) != 1 {
		t.Errorf("rescue wrote %d entries through a symlink out of DIR", len(es)-1)
	}
	if b, _ := os.ReadFile(victim); string(b) != "outside" {
		t.Errorf("a file outside DIR, a symlink's target, now holds %d bytes", len(b))
	}
	listed := map[string]bool{}
	for _, p := range rep.Problems {
		listed[p.Path] = errors.Is(p.Err, rescue.ErrExists)
	}
	if !listed["/small"] || !listed["/dir"] || !listed["/mid"] || !listed["/dup1"] || len(rep.Problems) != 4 {
		t.Errorf("problems %v, want /small, /dir, /mid and /dup1 as existing", rep.Problems)
	}
	if got := rescued(dir); !got["/big"] || !got["/last"] || got["/dir/hard"] {
		t.Errorf("rescued %v", got)
	}
}

// checkAttrs checks what cp -a keeps on populate's files: /big's xattr,
// /small's mode, owner (as root) and mtime, /link's target.
func checkAttrs(t *testing.T, dir string) {
	t.Helper()
	v := make([]byte, 64)
	n, err := unix.Getxattr(filepath.Join(dir, "big"), "user.comment", v)
	if err != nil || string(v[:max(n, 0)]) != "a big file" {
		t.Errorf("/big xattr user.comment: %q %v", v[:max(n, 0)], err)
	}
	fi, err := os.Lstat(filepath.Join(dir, "small"))
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode() != 0o644 || fi.ModTime().Unix() != 1750000000 || (os.Geteuid() == 0 && (st.Uid != 1000 || st.Gid != 1000)) {
		t.Errorf("/small: mode %v mtime %v owner %d:%d", fi.Mode(), fi.ModTime(), st.Uid, st.Gid)
	}
	if target, err := os.Readlink(filepath.Join(dir, "link")); err != nil || target != "dir/sub" {
		t.Errorf("/link: %q %v", target, err)
	}
}

// TestRescueNameFromRef: a file whose DIR_ITEM and DIR_INDEX are both
// deleted (nothing reads it by path) is put back at the name its
// INODE_REF gives, in its folder, not in lost+found.
func TestRescueNameFromRef(t *testing.T) {
	base, err := corpus.Base(1)
	if err != nil {
		t.Fatal(err)
	}
	var ref inspect.Name
	withStore(t, base, func(st *store.FS) {
		ino, err := inspect.Lookup(st.Tree(format.FSTree), "/small")
		if err != nil {
			t.Fatal(err)
		}
		d, err := inspect.Inode(st, ino)
		if err != nil || len(d.Names) != 1 {
			t.Fatalf("/small: %v %+v", err, d)
		}
		ref = d.Names[0]
	})
	devs, err := corpus.Damage(base, func(s *corpus.Surgeon) {
		s.Del(format.FSTree, format.Key{ObjectID: ref.Parent, Type: format.DirItemKey, Offset: format.NameHash([]byte(ref.Name))})
		s.Del(format.FSTree, format.Key{ObjectID: ref.Parent, Type: format.DirIndexKey, Offset: ref.Index})
	})
	if err != nil {
		t.Fatal(err)
	}
	if corpus.Readable(devs)["/small"] {
		t.Fatal("/small still reads by path: the damage missed")
	}
	dir := t.TempDir()
	rep, err := rescueInto(t, devs, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := rescued(dir); len(got) != len(corpus.Expected()) || rep.LostFound != 0 {
		t.Errorf("%d of %d files rescued, %d in lost+found; problems %v", len(got), len(corpus.Expected()), rep.LostFound, rep.Problems)
	}
}

// withStore opens a read-only store on a copy of devs.
func withStore(t *testing.T, devs []*device.MemDevice, fn func(*store.FS)) {
	t.Helper()
	st, err := openStore(corpus.Snapshots(devs), false) // campaign_test.go's
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fn(st)
}
