package check

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

var fsEpoch = time.Unix(1700000000, 0)

// newFS creates a filesystem with a root directory, as mkfs does. Nodes
// are 4 KiB (trees of several levels) unless nodeSize says otherwise.
func newFS(t testing.TB, l layout, nodeSize ...uint32) (*fsys.FS, []*device.MemDevice) {
	t.Helper()
	p := store.CreateParams{FSID: [16]byte{9}, Csum: format.CsumCRC32C, NodeSize: 4096, SectorSize: 4096, Data: l.data, Metadata: l.meta}
	if len(nodeSize) > 0 {
		p.NodeSize = nodeSize[0]
	}
	var devs []*device.MemDevice
	for i := 0; i < l.devs; i++ {
		d := device.NewMemDevice(fmt.Sprintf("f%d", i), 256<<20)
		devs = append(devs, d)
		p.Devices = append(p.Devices, store.NewDevice{Dev: d, Path: d.Name()})
	}
	st, tx, err := store.CreateTx(p)
	if err != nil {
		t.Fatal(err)
	}
	f, err := fsys.New(st, fsys.Options{Now: func() time.Time { return fsEpoch }})
	if err != nil {
		t.Fatal(err)
	}
	f.Adopt(tx)
	if err := f.InitRoot(fsys.Attr{Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	return f, devs
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7+i/4096)
	}
	return b
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func resolve(t testing.TB, f *fsys.FS, p string) *fsys.Inode {
	t.Helper()
	in, err := f.Resolve(p, false)
	must(t, err)
	return in
}

// populate fills a filesystem with every kind of inode and extent layout:
// directories three deep, inline, split, sparse and zero-holed files, a
// truncated file, symlinks (inline and extent), hard links, special files,
// xattrs, renames and removals, and enough names for a multi-level tree.
func populate(t testing.TB, f *fsys.FS) {
	t.Helper()
	mkdir := func(p string) {
		_, err := f.Mkdir(p, fsys.Attr{Mode: 0o755})
		must(t, err)
	}
	file := func(p string, writes ...any) *fsys.Inode {
		in, err := f.Create(p, fsys.Attr{Mode: 0o644})
		must(t, err)
		for i := 0; i < len(writes); i += 2 {
			must(t, f.WriteAt(in, writes[i+1].([]byte), uint64(writes[i].(int))))
		}
		return in
	}
	mkdir("/dir")
	mkdir("/dir/sub")
	mkdir("/dir/sub/deep")
	mkdir("/la")
	mkdir("/la/lb")
	file("/small", 0, []byte("hello"))
	file("/mid", 0, pattern(8192, 1))
	big := file("/big", 0, pattern(100<<10, 2))
	must(t, f.WriteAt(big, pattern(10<<10, 3), 40<<10)) // overwrite: split
	file("/sparse", 0, pattern(5000, 4), 1<<20, []byte("end"))
	zeros := append(append(pattern(4096, 5), make([]byte, 3*4096)...), pattern(4096, 6)...)
	file("/zeros", 0, zeros)
	tr := file("/trunc", 0, pattern(20000, 7))
	must(t, f.Truncate(tr, 5000))
	must(t, f.Truncate(tr, 9000))
	in := file("/inl", 0, []byte("abc"))
	must(t, f.Truncate(in, 2))
	_, err := f.Symlink("dir/sub", "/link", fsys.Attr{})
	must(t, err)
	_, err = f.Symlink(strings.Repeat("x/", 1500), "/longlink", fsys.Attr{})
	must(t, err)
	must(t, f.Link("/big", "/dir/hard"))
	must(t, f.Link("/mid", "/dir/sub/hard"))
	must(t, f.Remove("/dir/sub/hard"))
	_, err = f.Create("/fifo", fsys.Attr{Mode: syscall.S_IFIFO | 0o600})
	must(t, err)
	_, err = f.Create("/cdev", fsys.Attr{Mode: syscall.S_IFCHR | 0o600, Rdev: 0x0103})
	must(t, err)
	must(t, f.SetXattr(resolve(t, f, "/dir"), "user.comment", []byte("a directory")))
	must(t, f.SetXattr(resolve(t, f, "/small"), "user.a", nil))
	must(t, f.Rename("/dir/sub/deep", "/deep2"))
	file("/victim", 0, pattern(6000, 8))
	file("/dir/over", 0, pattern(3000, 9))
	must(t, f.Rename("/dir/over", "/victim")) // replaces /victim and frees its extent
	for i := 0; i < 60; i++ {
		file(fmt.Sprintf("/dir/f%02d", i), 0, pattern(100+i*90, byte(i)))
	}
	for i := 0; i < 60; i += 3 {
		must(t, f.Remove(fmt.Sprintf("/dir/f%02d", i)))
	}
	must(t, f.Sync())
}

func fsckDevs(t testing.TB, devs []*device.MemDevice, opt Options) *Report {
	t.Helper()
	var ds []device.Device
	for _, d := range devs {
		ds = append(ds, d)
	}
	vol, err := volume.FromDevices(ds, false)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := CheckVolume(vol, opt)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestFSClean: a populated filesystem checks clean on several layouts,
// also when every data copy is read.
func TestFSClean(t *testing.T) {
	for _, l := range []layout{
		{1, format.ProfileSingle, format.ProfileDup},
		{2, format.ProfileRaid1, format.ProfileRaid1},
		{4, format.ProfileRaid10, format.ProfileRaid1C3},
	} {
		t.Run(fmt.Sprintf("%d-%v-%v", l.devs, l.data, l.meta), func(t *testing.T) {
			f, devs := newFS(t, l)
			populate(t, f)
			rep := fsckDevs(t, devs, Options{CheckData: true})
			if !rep.Clean() {
				t.Fatalf("problems: %v", rep.Problems)
			}
			if rep.TreeNodes["fs"] < 3 {
				t.Fatalf("fs tree of %d nodes: want several levels", rep.TreeNodes["fs"])
			}
		})
	}
}

// TestFSLargeFile: a file of several maximal data extents, each with
// several checksum items, overwritten across an extent boundary.
func TestFSLargeFile(t *testing.T) {
	f, devs := newFS(t, layout{2, format.ProfileRaid0, format.ProfileRaid1}, 16384)
	in, err := f.Create("/huge", fsys.Attr{Mode: 0o644})
	must(t, err)
	must(t, f.WriteAt(in, pattern(17<<20, 10), 0))
	must(t, f.WriteAt(in, pattern(64<<10, 11), 8<<20-4096))
	must(t, f.Sync())
	rep := fsckDevs(t, devs, Options{CheckData: true})
	if !rep.Clean() {
		t.Fatalf("problems: %v", rep.Problems)
	}
}

// surgeon damages a copy of a base image through a store transaction.
// TestFSCheckData: a flipped data byte in one copy is found only when
// data is read, and named by device, offset and copy.
func TestFSCheckData(t *testing.T) {
	f, devs := newFS(t, layout{2, format.ProfileRaid1, format.ProfileRaid1})
	populate(t, f)
	s := newSurgeon(t, devs)
	l, _ := s.diskExtent(s.ino("/mid"))
	s.tx.Abort()
	vol := s.st.Vol
	targets, err := vol.Locate(l + 4096)
	must(t, err)
	if len(targets) != 2 {
		t.Fatalf("%d copies", len(targets))
	}
	tg := targets[1]
	d := s.devs[tg.DevID-1]
	flip(d, int64(tg.Physical)+100)
	if rep := fsckDevs(t, s.devs, Options{}); !rep.Clean() {
		t.Fatalf("without data checks: %v", rep.Problems)
	}
	rep := fsckDevs(t, s.devs, Options{CheckData: true})
	if len(rep.Problems) != 1 {
		t.Fatalf("problems: %v", rep.Problems)
	}
	p := rep.Problems[0]
	if p.Code != DataCopyBad || p.Pass != PassData || p.Logical != l+4096 || p.DevID != tg.DevID || p.Offset != tg.Physical || !p.CopyIs(1) || p.Device != d.Name() ||
		p.Path != "/mid" || p.Ino != s.ino("/mid") {
		t.Fatalf("got %v (%+v), want copy 1 at devid %d offset %d", p, p, tg.DevID, tg.Physical)
	}
}

// TestFSLinkOntoExistingName: a refused link leaves the link count alone.
func TestFSLinkOntoExistingName(t *testing.T) {
	f, devs := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	_, err := f.Create("/a", fsys.Attr{Mode: 0o644})
	must(t, err)
	_, err = f.Create("/b", fsys.Attr{Mode: 0o644})
	must(t, err)
	if err := f.Link("/a", "/b"); !errors.Is(err, syscall.EEXIST) {
		t.Fatalf("link onto an existing name: %v", err)
	}
	must(t, f.Sync())
	if rep := fsckDevs(t, devs, Options{}); !rep.Clean() {
		t.Fatalf("problems: %v", rep.Problems)
	}
}

// TestNodesProgressTotal: the node pass's progress counts up to a total
// known from the start (the superblock's metadata bytes in nodes), which
// is exactly the number of nodes it visits.
func TestNodesProgressTotal(t *testing.T) {
	for _, l := range []layout{{1, format.ProfileSingle, format.ProfileDup}, {4, format.ProfileRaid10, format.ProfileRaid1C3}} {
		f, devs := newFS(t, l)
		populate(t, f)
		var calls, last, total uint64
		opt := Options{Progress: func(pass string, done, tot uint64, _ bool) {
			if pass != "nodes" {
				return
			}
			if calls > 0 && tot != total {
				t.Fatalf("%v: total %d, then %d", l, total, tot)
			}
			calls, last, total = calls+1, done, tot
		}}
		rep := fsckDevs(t, devs, opt)
		nodes := uint64(0)
		for _, n := range rep.TreeNodes {
			nodes += uint64(n)
		}
		if !rep.Clean() || calls == 0 || total != last || total != nodes {
			t.Fatalf("%v: %d calls, last %d of %d; %d nodes in the trees; %v", l, calls, last, total, nodes, rep.Problems)
		}
	}
}

// itemSurgery damages fs tree items of no check of their own (fs.go).
func itemSurgery() []surgeryCase {
	fsT := format.FSTree
	return []surgeryCase{
		{"prop item", func(s *surgeon) []want {
			mid := s.ino("/mid")
			s.put(fsT, format.Key{ObjectID: mid, Type: format.PropItemKey, Offset: 1}, []byte("x"))
			return []want{{code: PropItem, ino: mid}}
		}},
		{"an item of an unknown type", func(s *surgeon) []want {
			mid := s.ino("/mid")
			s.put(fsT, format.Key{ObjectID: mid, Type: 200, Offset: 1}, []byte("x"))
			return []want{{code: FSItemType, ino: mid}}
		}},
	}
}
