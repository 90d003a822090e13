package send

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// snapStream sends snapshot name of f, incrementally from parent when
// parent is not "".
func snapStream(t *testing.T, f *fsys.FS, name, parent string) []byte {
	return snapStreamWith(t, f, name, parent, SendOptions{})
}

func snapStreamWith(t *testing.T, f *fsys.FS, name, parent string, o SendOptions) []byte {
	t.Helper()
	v, err := f.OpenSnapshot(name)
	must(t, err)
	defer v.Close()
	sn, err := f.Store().FindSnapshot(name)
	must(t, err)
	s := Snapshot{Name: name, UUID: sn.UUID, Ctime: sn.Ctime}
	var buf bytes.Buffer
	if parent == "" {
		_, err = Send(v, &buf, s, o)
	} else {
		var b *fsys.FS
		b, err = f.OpenSnapshot(parent)
		must(t, err)
		defer b.Close()
		pn, _ := f.Store().FindSnapshot(parent)
		_, err = SendIncremental(b, v, &buf, s, pn.UUID, o)
	}
	must(t, err)
	return buf.Bytes()
}

// sameSnapshots checks that each snapshot of names is the same tree in
// a as in b.
func sameSnapshots(t *testing.T, a, b *fsys.FS, names ...string) {
	t.Helper()
	for _, name := range names {
		va, err := a.OpenSnapshot(name)
		must(t, err)
		vb, err := b.OpenSnapshot(name)
		must(t, err)
		sameTree(t, va, vb)
		va.Close()
		vb.Close()
	}
}

// changeTree makes every kind of change an incremental stream carries.
func changeTree(t *testing.T, f *fsys.FS, round int) {
	res := func(p string) *fsys.Inode {
		in, err := f.Resolve(p, false)
		must(t, err)
		return in
	}
	big := res("/d/big")
	must(t, f.WriteAt(big, rnd(uint64(90+round), 4096), 1<<20)) // 4 KiB in the middle
	must(t, f.PunchHole(big, 64<<10, 128<<10))                  // a new hole
	must(t, f.PunchHole(big, 300<<10, 100<<10))                 // a hole, then new data right after it
	must(t, f.WriteAt(big, rnd(uint64(95+round), 4096), 400<<10))
	must(t, f.Truncate(res("/d/e/sparse"), 6000)) // shorter
	must(t, f.Remove(fmt.Sprintf("/d/e/f%02d", 3+10*round)))
	must(t, f.Rename(fmt.Sprintf("/d/e/f%02d", 5+10*round), fmt.Sprintf("/d/moved%d", round)))
	in, err := f.Create(fmt.Sprintf("/new%d", round), fsys.Attr{Mode: 0o640, UID: 9})
	must(t, err)
	must(t, f.WriteAt(in, rnd(uint64(70+round), 200000), 0))
	mode, uid := uint32(0o600), uint32(4242)
	must(t, f.SetattrInode(res("/small"), fsys.SetAttr{Mode: &mode, UID: &uid}))
	must(t, f.SetXattr(res("/small"), "user.new", []byte{byte(round)}))
	must(t, f.SetXattr(res("/d"), "user.dir", []byte{'c', byte(round)}))
	must(t, f.Link(fmt.Sprintf("/new%d", round), fmt.Sprintf("/d/new-link%d", round)))
	if round == 0 {
		must(t, f.RemoveXattr(res("/small"), "trusted.bin"))
		must(t, f.Remove("/d/e/hard")) // /d/big keeps one name
		must(t, f.Remove("/blk"))
		_, err = f.Mkdir("/blk", fsys.Attr{Mode: 0o755}) // a directory where a device was
		must(t, err)
	}
	at := format.Timespec{Sec: 1650000000 + int64(round)}
	must(t, f.SetattrInode(res("/d/e/f07"), fsys.SetAttr{Atime: &at, Mtime: &at}))
	must(t, f.Sync())
}

// TestIncrementalChain: a full stream of s1 and incremental streams
// s1→s2 and s2→s3 received in turn make snapshots equal, entry by entry,
// to the sent ones; the received s1 stays as it was; each incremental
// stream is a fraction of a full one; a stream on a base the target does
// not have is refused, naming it, with the target unchanged.
func TestIncrementalChain(t *testing.T) {
	src, _ := newFS(t, 1, format.Settings{})
	populate(t, src)
	_, err := src.CreateSnapshot("s1")
	must(t, err)
	changeTree(t, src, 0)
	_, err = src.CreateSnapshot("s2")
	must(t, err)
	changeTree(t, src, 1)
	_, err = src.CreateSnapshot("s3")
	must(t, err)
	dst, d := newFS(t, 2, format.Settings{})
	if _, _, _, err := Receive(dst, bytes.NewReader(snapStream(t, src, "s2", "s1"))); !errors.Is(err, ErrNoBase) {
		t.Fatalf("an incremental stream without its base: %v", err)
	}
	if snaps, _ := dst.Snapshots(); len(snaps) != 0 {
		t.Fatalf("snapshots after a refused stream: %v", snaps)
	}
	full := snapStream(t, src, "s1", "")
	for _, step := range []struct{ name, parent string }{{"s1", ""}, {"s2", "s1"}, {"s3", "s2"}} {
		stream := full
		if step.parent != "" {
			stream = snapStream(t, src, step.name, step.parent)
			if len(stream) > len(full)/4 {
				t.Fatalf("%s: incremental stream of %d bytes, the full one %d", step.name, len(stream), len(full))
			}
		}
		if name, _, _, err := Receive(dst, bytes.NewReader(stream)); err != nil || name != step.name {
			t.Fatalf("%s: %q %v", step.name, name, err)
		}
	}
	sameSnapshots(t, src, dst, "s1", "s2", "s3")
	must(t, dst.Sync())
	fsckClean(t, d)
}

// TestIncrementalDeepChange: a change deep in directories that did not
// change themselves (same entries, same times under a fixed clock) still
// travels: the walk enters every directory above a changed inode, in
// either snapshot.
func TestIncrementalDeepChange(t *testing.T) {
	src, _ := newFS(t, 1, format.Settings{})
	populate(t, src)
	_, err := src.CreateSnapshot("s1")
	must(t, err)
	in, err := src.Resolve("/d/e/f39", false)
	must(t, err)
	must(t, src.WriteAt(in, bytes.Repeat([]byte{'z'}, 100), 0)) // the clock is fixed: only the data differs
	_, err = src.CreateSnapshot("s2")
	must(t, err)
	receiveS2(t, src, 16<<10)
}

// receiveS2 receives snapshot s1 of src whole and s2 from it into a new
// image, requires the received s2 to equal src's and the incremental
// stream to stay within max bytes, and the image to check clean.
func receiveS2(t *testing.T, src *fsys.FS, max int) {
	t.Helper()
	dst, d := newFS(t, 2, format.Settings{})
	for _, step := range [][2]string{{"s1", ""}, {"s2", "s1"}} {
		if _, _, _, err := Receive(dst, bytes.NewReader(snapStream(t, src, step[0], step[1]))); err != nil {
			t.Fatalf("%s: %v", step[0], err)
		}
	}
	a, _ := src.OpenSnapshot("s2")
	b, _ := dst.OpenSnapshot("s2")
	sameTree(t, a, b)
	if inc := snapStream(t, src, "s2", "s1"); len(inc) > max {
		t.Fatalf("the incremental stream took %d bytes, want at most %d", len(inc), max)
	}
	must(t, dst.Sync())
	fsckClean(t, d)
}

// TestIncrementalRename: a 1 MiB file renamed in its directory, another
// moved into a new directory and changed there, and a third moved out of
// a directory that is removed travel as RENAMEs (the stream holds none
// of their unchanged bytes); the received snapshot equals the sent one.
func TestIncrementalRename(t *testing.T) {
	src, _ := newFS(t, 1, format.Settings{})
	populate(t, src)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	for _, p := range []string{"/big1", "/d/big2", "/gone/big3"} {
		if p == "/gone/big3" {
			_, err := src.Mkdir("/gone", fsys.Attr{Mode: 0o755})
			must(t, err)
		}
		in, err := src.Create(p, fsys.Attr{Mode: 0o644})
		must(t, err)
		must(t, src.WriteAt(in, big, 0))
	}
	_, err := src.CreateSnapshot("s1")
	must(t, err)
	must(t, src.Rename("/big1", "/big1.old"))
	_, err = src.Mkdir("/new", fsys.Attr{Mode: 0o755})
	must(t, err)
	must(t, src.Rename("/d/big2", "/new/big2"))
	in, err := src.Resolve("/new/big2", false)
	must(t, err)
	must(t, src.WriteAt(in, []byte("changed"), 4096))
	must(t, src.Rename("/gone/big3", "/d/big3"))
	must(t, src.Remove("/gone"))
	_, err = src.CreateSnapshot("s2")
	must(t, err)
	receiveS2(t, src, 64<<10) // three 1 MiB files, renamed
}

// TestIncrementalDirRename: directories moved (one renamed in place, one
// into a new directory, one out of a directory that is itself moved, one
// holding a file given a new hard link after the move) travel as RENAMEs
// with their entries (the stream holds none of their unchanged bytes);
// the received snapshot equals the sent one.
func TestIncrementalDirRename(t *testing.T) {
	src, _ := newFS(t, 1, format.Settings{})
	populate(t, src)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	mk := func(dir string, files ...string) {
		_, err := src.Mkdir(dir, fsys.Attr{Mode: 0o750})
		must(t, err)
		for _, f := range files {
			in, err := src.Create(dir+"/"+f, fsys.Attr{Mode: 0o644})
			must(t, err)
			must(t, src.WriteAt(in, big, 0))
		}
	}
	mk("/p", "x")
	mk("/p/q", "y")
	mk("/r", "z")
	mk("/h", "w")
	must(t, src.Link("/h/w", "/h/w2")) // a file with two names in a moved directory
	_, err := src.CreateSnapshot("s1")
	must(t, err)
	must(t, src.Rename("/p", "/p2"))    // renamed in place
	must(t, src.Rename("/p2/q", "/q2")) // out of a moved directory
	_, err = src.Mkdir("/new", fsys.Attr{Mode: 0o755})
	must(t, err)
	must(t, src.Rename("/r", "/new/r")) // into a new directory
	in, err := src.Resolve("/new/r/z", false)
	must(t, err)
	must(t, src.WriteAt(in, []byte("changed"), 8192))
	must(t, src.Rename("/h", "/d/h"))
	must(t, src.Link("/d/h/w", "/d/w3")) // a new name for a file under a moved directory
	_, err = src.CreateSnapshot("s2")
	must(t, err)
	receiveS2(t, src, 64<<10) // six 1 MiB files in four moved directories
}

// TestIncrementalLinksMoved: files with several names whose names all
// changed (moved, one name renamed and another made, both moved into a
// new directory and a third added) travel as RENAMEs and LINKs, never
// their data; the received snapshot equals the sent one.
func TestIncrementalLinksMoved(t *testing.T) {
	src, _ := newFS(t, 1, format.Settings{})
	populate(t, src)
	big := bytes.Repeat([]byte("fedcba9876543210"), 1<<16)
	for _, f := range []string{"/m1", "/m2", "/m3"} {
		in, err := src.Create(f, fsys.Attr{Mode: 0o644})
		must(t, err)
		must(t, src.WriteAt(in, big, 0))
		must(t, src.Link(f, f+"-b"))
	}
	_, err := src.CreateSnapshot("s1")
	must(t, err)
	must(t, src.Rename("/m1", "/m1-moved")) // both names of m1 renamed
	must(t, src.Rename("/m1-b", "/d/m1-b-moved"))
	must(t, src.Rename("/m2", "/m2-new")) // one renamed, the other removed, a third made
	must(t, src.Remove("/m2-b"))
	must(t, src.Link("/m2-new", "/m2-third"))
	_, err = src.Mkdir("/n", fsys.Attr{Mode: 0o755}) // both into a new directory, and a third name
	must(t, err)
	must(t, src.Rename("/m3", "/n/m3"))
	must(t, src.Rename("/m3-b", "/n/m3-b"))
	must(t, src.Link("/n/m3", "/n/m3-c"))
	_, err = src.CreateSnapshot("s2")
	must(t, err)
	receiveS2(t, src, 64<<10) // three 1 MiB files, all names changed
}

// A RENAME of a directory into itself, of a missing name, or onto a
// name that exists is refused and the receive leaves no snapshot.
func TestReceiveRefusesBadRename(t *testing.T) {
	src, _ := newFS(t, 1, format.Settings{})
	populate(t, src)
	_, err := src.CreateSnapshot("s1")
	must(t, err)
	must(t, src.Remove("/d/e/f39"))
	_, err = src.CreateSnapshot("s2")
	must(t, err)
	good := snapStream(t, src, "s2", "s1")
	for _, bad := range []format.Record{
		{Type: format.RecRename, Path: "d", Target: "d/e/zz"},   // a directory into itself
		{Type: format.RecRename, Path: "nothere", Target: "zz"}, // missing
		{Type: format.RecRename, Path: "d/e/f38", Target: "d/e/f37"},
	} {
		dst, _ := newFS(t, 2, format.Settings{})
		_, _, _, err := Receive(dst, bytes.NewReader(snapStream(t, src, "s1", "")))
		must(t, err)
		if _, _, _, err := Receive(dst, bytes.NewReader(restream(t, good, nil, bad))); err == nil {
			t.Fatalf("%+v: received", bad)
		}
		if snaps, _ := dst.Snapshots(); len(snaps) != 1 {
			t.Fatalf("%+v: snapshots %v after a refused stream", bad, snaps)
		}
	}
}

// scanDiff is DiffTrees' model: every item of both trees read in full
// and compared key by key.
func scanDiff(t *testing.T, a, b *fsys.FS) []string {
	items := func(f *fsys.FS) map[format.Key][]byte {
		m := map[format.Key][]byte{}
		must(t, f.Store().TreeAt(f.TreeRoot()).Scan(format.Key{}, format.MaxKey, func(it format.Item) (bool, error) {
			m[it.Key] = bytes.Clone(it.Data)
			return true, nil
		}))
		return m
	}
	ia, ib := items(a), items(b)
	var out []string
	for k, v := range ia {
		if w, ok := ib[k]; !ok || !bytes.Equal(v, w) {
			out = append(out, fmt.Sprint(k))
		}
	}
	for k := range ib {
		if _, ok := ia[k]; !ok {
			out = append(out, fmt.Sprint(k))
		}
	}
	sort.Strings(out)
	return out
}

// TestDiffTreesMatchesScan: the keys DiffTrees reports between two
// snapshots (and a snapshot and the live tree) are exactly those a full
// scan of both trees finds different, over random change sets on a tree
// of three levels.
func TestDiffTreesMatchesScan(t *testing.T) {
	f, _ := newFS(t, 1, format.Settings{})
	const files, dirs = 24000, 30
	for i := range files {
		if i%(files/dirs) == 0 {
			_, err := f.Mkdir(fmt.Sprintf("/d%02d", i/(files/dirs)), fsys.Attr{Mode: 0o755})
			must(t, err)
		}
		in, err := f.Create(fmt.Sprintf("/d%02d/f%05d", i/(files/dirs), i), fsys.Attr{Mode: 0o644})
		must(t, err)
		must(t, f.WriteAt(in, rnd(uint64(i), 10+i%50), 0))
	}
	must(t, f.Sync())
	if lv := f.TreeRoot().Level; lv < 2 {
		t.Fatalf("fs tree has level %d, want >= 2", lv)
	}
	r := rand.New(rand.NewPCG(7, 7))
	for round := range 6 {
		base := fmt.Sprintf("s%d", round)
		_, err := f.CreateSnapshot(base)
		must(t, err)
		for range 1 + r.IntN(40)<<(round%3*2) {
			p := fmt.Sprintf("/d%02d/f%05d", r.IntN(dirs), r.IntN(files))
			switch in, err := f.Resolve(p, false); {
			case err != nil: // gone or not in that directory: make it
				in, err = f.Create(p, fsys.Attr{Mode: 0o600})
				must(t, err)
				must(t, f.WriteAt(in, rnd(uint64(round), 9000), 0))
			case r.IntN(3) == 0:
				must(t, f.Remove(p))
			default:
				must(t, f.WriteAt(in, rnd(uint64(round), 10), uint64(r.IntN(4000))))
			}
		}
		must(t, f.Sync())
		_, err = f.CreateSnapshot(base + "b")
		must(t, err)
		a, err := f.OpenSnapshot(base)
		must(t, err)
		b, err := f.OpenSnapshot(base + "b")
		must(t, err)
		for _, pair := range [][2]*fsys.FS{{a, b}, {b, a}, {a, f}} {
			var got []string
			must(t, f.Store().DiffTrees(pair[0].TreeRoot(), pair[1].TreeRoot(), func(k format.Key, old, new []byte) error {
				got = append(got, fmt.Sprint(k))
				return nil
			}))
			sort.Strings(got)
			want := scanDiff(t, pair[0], pair[1])
			if len(want) == 0 || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("round %d: DiffTrees found %d keys, a full scan %d:\n%v\n%v", round, len(got), len(want), got, want)
			}
		}
		a.Close()
		b.Close()
	}
}
