package check

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/inspect"
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
type surgeon struct {
	t    *testing.T
	devs []*device.MemDevice
	st   *store.FS
	f    *fsys.FS // for resolving paths (reads the committed state)
	tx   *store.Txn
}

func newSurgeon(t *testing.T, base []*device.MemDevice) *surgeon {
	t.Helper()
	s := &surgeon{t: t}
	var ds []device.Device
	for _, d := range base {
		c := d.Snapshot()
		s.devs = append(s.devs, c)
		ds = append(ds, c)
	}
	vol, err := volume.FromDevices(ds, true)
	must(t, err)
	s.st, err = store.OpenVolume(vol)
	must(t, err)
	s.f, err = fsys.New(s.st, fsys.Options{Now: func() time.Time { return fsEpoch }})
	must(t, err)
	s.tx, err = s.st.Begin()
	must(t, err)
	return s
}

// ino finds the inode of path p as the damaged-image generator does
// (pkg/inspect), in the committed state.
func (s *surgeon) ino(p string) uint64 {
	s.t.Helper()
	ino, err := inspect.Lookup(s.st.Tree(format.FSTree), p)
	must(s.t, err)
	return ino
}

func (s *surgeon) tree(id format.TreeID) *btree.Tree { return s.tx.Tree(id) }

func (s *surgeon) get(id format.TreeID, k format.Key) []byte {
	s.t.Helper()
	b, err := s.tree(id).Get(k)
	must(s.t, err)
	return bytes.Clone(b) // the tree's own bytes must not change under it
}

func (s *surgeon) put(id format.TreeID, k format.Key, b []byte) {
	s.t.Helper()
	must(s.t, s.tree(id).Put(k, b))
}

func (s *surgeon) del(id format.TreeID, k format.Key) {
	s.t.Helper()
	must(s.t, s.tree(id).Delete(k))
}

// move re-keys an item.
func (s *surgeon) move(id format.TreeID, from, to format.Key) {
	s.t.Helper()
	b := bytes.Clone(s.get(id, from))
	s.del(id, from)
	s.put(id, to, b)
}

// items lists the items in [from, to).
func (s *surgeon) items(id format.TreeID, from, to format.Key) []format.Item {
	s.t.Helper()
	var out []format.Item
	must(s.t, s.tree(id).Scan(from, to, func(it format.Item) (bool, error) {
		out = append(out, format.Item{Key: it.Key, Data: bytes.Clone(it.Data)})
		return true, nil
	}))
	return out
}

func inodeKey(ino uint64) format.Key { return format.Key{ObjectID: ino, Type: format.InodeItemKey} }

func (s *surgeon) inode(ino uint64, change func(*format.InodeItem)) {
	s.t.Helper()
	in, err := format.UnmarshalInodeItem(s.get(format.FSTree, inodeKey(ino)))
	must(s.t, err)
	change(in)
	s.put(format.FSTree, inodeKey(ino), format.MarshalInodeItem(in))
}

// firstExtent changes the file extent item of ino at offset 0.
func (s *surgeon) firstExtent(ino uint64, change func(*format.FileExtentItem)) {
	s.t.Helper()
	k := format.Key{ObjectID: ino, Type: format.FileExtentKey}
	x, err := format.UnmarshalFileExtentItem(s.get(format.FSTree, k))
	must(s.t, err)
	change(x)
	s.put(format.FSTree, k, format.MarshalFileExtentItem(x))
}

// extents returns the file extent items of ino.
func (s *surgeon) extents(ino uint64) []format.Item {
	return s.items(format.FSTree, format.Key{ObjectID: ino, Type: format.FileExtentKey}, format.Key{ObjectID: ino, Type: format.FileExtentKey + 1})
}

// diskExtent is the data extent of ino's first regular extent (found
// with pkg/inspect, in the committed state).
func (s *surgeon) diskExtent(ino uint64) (logical, length uint64) {
	s.t.Helper()
	d, err := inspect.Inode(s.st, ino)
	must(s.t, err)
	for _, e := range d.Extents {
		if x := e.Item; x.Type != format.FileExtentInline && x.DiskLogical != 0 {
			return x.DiskLogical, x.DiskLen
		}
	}
	s.t.Fatalf("inode %d has no data extent", ino)
	return 0, 0
}

// entry returns the DIR_INDEX of name in dir.
func (s *surgeon) entry(dir uint64, name string) (uint64, format.DirEntry) {
	s.t.Helper()
	for _, it := range s.items(format.FSTree, format.Key{ObjectID: dir, Type: format.DirIndexKey}, format.Key{ObjectID: dir, Type: format.DirIndexKey + 1}) {
		e, err := format.UnmarshalDirEntry(it.Data)
		must(s.t, err)
		if e.Name == name {
			return it.Key.Offset, e
		}
	}
	s.t.Fatalf("no entry %q in directory %d", name, dir)
	return 0, format.DirEntry{}
}

func dirItemKey(dir uint64, name string) format.Key {
	return format.Key{ObjectID: dir, Type: format.DirItemKey, Offset: format.NameHash([]byte(name))}
}

// link adds a consistent name (DIR_ITEM, DIR_INDEX, INODE_REF, directory
// size and seq) without touching link counts.
func (s *surgeon) link(dir uint64, name string, child uint64, t format.FileType) {
	s.t.Helper()
	var seq uint64
	s.inode(dir, func(in *format.InodeItem) { seq = in.Seq; in.Seq++; in.Size++ })
	e := format.DirEntry{Ino: child, Type: t, Name: name}
	s.put(format.FSTree, dirItemKey(dir, name), format.MarshalDirEntries([]format.DirEntry{e}))
	s.put(format.FSTree, format.Key{ObjectID: dir, Type: format.DirIndexKey, Offset: seq}, format.MarshalDirEntry(e))
	rk := format.Key{ObjectID: child, Type: format.InodeRefKey, Offset: dir}
	var refs []format.InodeRef
	if b, err := s.tree(format.FSTree).Get(rk); err == nil {
		refs, err = format.UnmarshalInodeRefs(b)
		must(s.t, err)
	}
	s.put(format.FSTree, rk, format.MarshalInodeRefs(append(refs, format.InodeRef{Index: seq, Name: name})))
}

// unlink removes a name the way link adds it.
func (s *surgeon) unlink(dir uint64, name string) {
	s.t.Helper()
	idx, e := s.entry(dir, name)
	s.inode(dir, func(in *format.InodeItem) { in.Size-- })
	s.del(format.FSTree, dirItemKey(dir, name))
	s.del(format.FSTree, format.Key{ObjectID: dir, Type: format.DirIndexKey, Offset: idx})
	s.del(format.FSTree, format.Key{ObjectID: e.Ino, Type: format.InodeRefKey, Offset: dir})
}

func (s *surgeon) check(opt Options) *Report {
	s.t.Helper()
	must(s.t, s.tx.Commit())
	return fsckDevs(s.t, s.devs, opt)
}

// want is an expected problem: its code, the inode it is about (0: none
// required), its logical address (0: any) and its file's path ("": any).
type want struct {
	code    Code
	ino     uint64
	logical uint64
	path    string // "": any
}

func (w want) match(p Problem) bool {
	return p.Code == w.code && (w.ino == 0 || p.Ino == w.ino) && (w.logical == 0 || p.Logical == w.logical) && (w.path == "" || p.Path == w.path)
}

// expect requires that every want is reported and nothing else is.
func expect(t *testing.T, rep *Report, wants ...want) {
	t.Helper()
	var all []string
	for _, p := range rep.Problems {
		all = append(all, p.String())
	}
	for _, w := range wants {
		found := false
		for _, p := range rep.Problems {
			found = found || w.match(p)
		}
		if !found {
			t.Errorf("missing %+v", w)
		}
	}
	for _, p := range rep.Problems {
		ok := false
		for _, w := range wants {
			ok = ok || w.match(p)
		}
		if !ok {
			t.Errorf("unexpected %v", p)
		}
	}
	if t.Failed() {
		t.Logf("report:\n  %s", strings.Join(all, "\n  "))
	}
}

// TestFSSurgery damages one thing at a time and requires exactly the
// problems it causes.
func TestFSSurgery(t *testing.T) {
	f, base := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	populate(t, f)
	if rep := fsckDevs(t, base, Options{}); !rep.Clean() {
		t.Fatalf("base image: %v", rep.Problems)
	}
	for _, tc := range surgeryCases() {
		t.Run(tc.name, func(t *testing.T) {
			s := newSurgeon(t, base)
			wants := tc.damage(s)
			expect(t, s.check(Options{}), wants...)
		})
	}
}

// surgeryCase damages one thing in a populated image and returns the
// problems that causes.
type surgeryCase struct {
	name   string
	damage func(s *surgeon) []want
}

func surgeryCases() []surgeryCase {
	const root = format.RootDirIno
	fsT, extT, csT := format.FSTree, format.ExtentTree, format.CsumTree
	ss := uint64(4096)
	return []surgeryCase{
		{"symlink target empty", func(s *surgeon) []want {
			link := s.ino("/link")
			s.del(fsT, format.Key{ObjectID: link, Type: format.FileExtentKey})
			s.inode(link, func(in *format.InodeItem) { in.Size, in.NBytes = 0, 0 })
			return []want{{code: SymlinkTarget, ino: link}}
		}},
		{"symlink target holds a NUL", func(s *surgeon) []want {
			link := s.ino("/link")
			s.firstExtent(link, func(x *format.FileExtentItem) { x.Inline[3] = 0 })
			return []want{{code: SymlinkTarget, ino: link}}
		}},
		{"symlink size past its inline target", func(s *surgeon) []want {
			link := s.ino("/link")
			s.inode(link, func(in *format.InodeItem) { in.Size += 5 })
			return []want{{code: SymlinkTarget, ino: link}}
		}},
		{"symlink target with a hole", func(s *surgeon) []want {
			long := s.ino("/longlink")
			s.inode(long, func(in *format.InodeItem) { in.Size = format.MaxSymlinkTarget })
			return []want{{code: SymlinkTarget, ino: long}}
		}},
		{"symlink target preallocated", func(s *surgeon) []want {
			long := s.ino("/longlink")
			s.firstExtent(long, func(x *format.FileExtentItem) { x.Type = format.FileExtentPrealloc })
			return []want{{code: SymlinkTarget, ino: long}}
		}},
		{"symlink target a hole", func(s *surgeon) []want {
			link := s.ino("/link")
			hole := &format.FileExtentItem{Type: format.FileExtentRegular, NumBytes: 7, RAMBytes: 7}
			s.put(fsT, format.Key{ObjectID: link, Type: format.FileExtentKey}, format.MarshalFileExtentItem(hole))
			s.inode(link, func(in *format.InodeItem) { in.NBytes = 0 })
			return []want{{code: SymlinkTarget, ino: link}}
		}},
		{"symlink target after a hole", func(s *surgeon) []want {
			long := s.ino("/longlink")
			s.move(fsT, format.Key{ObjectID: long, Type: format.FileExtentKey}, format.Key{ObjectID: long, Type: format.FileExtentKey, Offset: 1000})
			s.inode(long, func(in *format.InodeItem) { in.Size = 4000 })
			return []want{{code: SymlinkTarget, ino: long}}
		}},
		{"inode ref deleted", func(s *surgeon) []want {
			small := s.ino("/small")
			s.del(fsT, format.Key{ObjectID: small, Type: format.InodeRefKey, Offset: root})
			return []want{
				{code: Orphan, ino: small},
				{code: EntryNoRef, ino: root},
			}
		}},
		{"nlink bumped", func(s *surgeon) []want {
			big := s.ino("/big")
			s.inode(big, func(in *format.InodeItem) { in.Nlink++ })
			return []want{{code: Nlink, ino: big, path: "/big"}}
		}},
		{"nlink of a directory", func(s *surgeon) []want {
			dir := s.ino("/dir")
			s.inode(dir, func(in *format.InodeItem) { in.Nlink = 2 })
			return []want{{code: DirNlink, ino: dir}}
		}},
		{"directory size", func(s *surgeon) []want {
			dir := s.ino("/dir/sub")
			s.inode(dir, func(in *format.InodeItem) { in.Size = 7 })
			return []want{{code: DirSize, ino: dir, path: "/dir/sub"}}
		}},
		{"seq behind the indexes", func(s *surgeon) []want {
			s.inode(root, func(in *format.InodeItem) { in.Seq = 3 })
			return []want{{code: DirIndexRange, ino: root}}
		}},
		{"seq at the last index", func(s *surgeon) []want {
			// Seq is the next free index: the last DIR_INDEX equal to it
			// is out of range (one past is the boundary).
			idx := s.items(fsT, format.Key{ObjectID: root, Type: format.DirIndexKey}, format.Key{ObjectID: root, Type: format.DirIndexKey + 1})
			last := idx[len(idx)-1].Key.Offset
			s.inode(root, func(in *format.InodeItem) { in.Seq = last })
			return []want{{code: DirIndexRange, ino: root}}
		}},
		{"seq at the first index", func(s *surgeon) []want {
			// /la holds one name, at index 2: the fix raises the seq
			// past it and keeps the name.
			la := s.ino("/la")
			s.inode(la, func(in *format.InodeItem) { in.Seq = 2 })
			return []want{{code: DirIndexRange, ino: la}}
		}},
		{"symlink target starts with a NUL", func(s *surgeon) []want {
			link := s.ino("/link")
			s.firstExtent(link, func(x *format.FileExtentItem) { x.Inline[0] = 0 })
			return []want{{code: SymlinkTarget, ino: link}}
		}},
		{"device number on a regular file", func(s *surgeon) []want {
			small := s.ino("/small")
			s.inode(small, func(in *format.InodeItem) { in.Rdev = 0x0103 })
			return []want{{code: Rdev, ino: small}}
		}},
		{"orphan inode", func(s *surgeon) []want {
			in := &format.InodeItem{Mode: syscall.S_IFREG | 0o644, Nlink: 1, Generation: 1}
			s.put(fsT, inodeKey(50000), format.MarshalInodeItem(in))
			return []want{{code: Orphan, ino: 50000}}
		}},
		{"undecodable inode item", func(s *surgeon) []want {
			mid := s.ino("/mid")
			s.put(fsT, inodeKey(mid), make([]byte, 100))
			return []want{{code: FSItemBad, ino: mid}}
		}},
		{"missing inode item", func(s *surgeon) []want {
			mid := s.ino("/mid")
			s.del(fsT, inodeKey(mid))
			return []want{
				{code: InodeMissing, ino: mid},
				{code: EntryDangling, ino: root},
			}
		}},
		{"missing inode item of an inline file", func(s *surgeon) []want {
			small := s.ino("/small")
			s.del(fsT, inodeKey(small))
			return []want{
				{code: InodeMissing, ino: small},
				{code: EntryDangling, ino: root},
			}
		}},
		{"missing inode item of a sparse file", func(s *surgeon) []want {
			sparse := s.ino("/sparse")
			s.del(fsT, inodeKey(sparse))
			return []want{
				{code: InodeMissing, ino: sparse},
				{code: EntryDangling, ino: root},
			}
		}},
		{"missing root", func(s *surgeon) []want {
			s.del(fsT, inodeKey(root))
			return []want{
				{code: RootMissing, ino: root},
				{code: InodeMissing, ino: root},
			}
		}},
		{"dir index deleted", func(s *surgeon) []want {
			small := s.ino("/small")
			idx, _ := s.entry(root, "small")
			s.del(fsT, format.Key{ObjectID: root, Type: format.DirIndexKey, Offset: idx})
			return []want{
				{code: DirSize, ino: root},
				{code: RefNoIndex, ino: small},
			}
		}},
		{"dir item deleted", func(s *surgeon) []want {
			s.entry(root, "mid")
			s.del(fsT, dirItemKey(root, "mid"))
			return []want{{code: IndexNoItem, ino: root}}
		}},
		{"inode ref renamed", func(s *surgeon) []want {
			// The INODE_REF's name alone changes: its fingerprint must
			// hold the name, or it balances the DIR_INDEX.
			small := s.ino("/small")
			k := format.Key{ObjectID: small, Type: format.InodeRefKey, Offset: root}
			refs, err := format.UnmarshalInodeRefs(s.get(fsT, k))
			must(s.t, err)
			refs[0].Name = "smalm"
			s.put(fsT, k, format.MarshalInodeRefs(refs))
			return []want{
				{code: RefIndexOther, ino: small},
				{code: EntryNoRef, ino: root},
			}
		}},
		{"inode ref index changed", func(s *surgeon) []want {
			// The INODE_REF's index alone changes: its fingerprint must
			// hold the index, or it balances the DIR_INDEX.
			small := s.ino("/small")
			k := format.Key{ObjectID: small, Type: format.InodeRefKey, Offset: root}
			refs, err := format.UnmarshalInodeRefs(s.get(fsT, k))
			must(s.t, err)
			refs[0].Index += 1000
			s.put(fsT, k, format.MarshalInodeRefs(refs))
			return []want{{code: RefNoIndex, ino: small}}
		}},
		{"inode ref under another parent", func(s *surgeon) []want {
			// The INODE_REF's parent alone changes (to no directory): its
			// fingerprint must hold the parent, or it balances the DIR_INDEX.
			small := s.ino("/small")
			s.move(fsT, format.Key{ObjectID: small, Type: format.InodeRefKey, Offset: root}, format.Key{ObjectID: small, Type: format.InodeRefKey, Offset: 77777})
			return []want{
				{code: RefNoDir, ino: small},
				{code: EntryNoRef, ino: root},
			}
		}},
		{"only name under no directory", func(s *surgeon) []want {
			// /small's one INODE_REF names a parent that does not exist:
			// the ref goes and /small gets a name in lost+found.
			small := s.ino("/small")
			s.unlink(root, "small")
			s.put(fsT, format.Key{ObjectID: small, Type: format.InodeRefKey, Offset: 77777}, format.MarshalInodeRefs([]format.InodeRef{{Index: 2, Name: "small"}}))
			return []want{{code: RefNoDir, ino: small}}
		}},
		{"name at DIR_INDEX 1", func(s *surgeon) []want {
			// Indexes start at 2: the name goes, and /small, left without
			// one, gets a name in lost+found.
			small := s.ino("/small")
			idx, _ := s.entry(root, "small")
			s.move(fsT, format.Key{ObjectID: root, Type: format.DirIndexKey, Offset: idx}, format.Key{ObjectID: root, Type: format.DirIndexKey, Offset: 1})
			rk := format.Key{ObjectID: small, Type: format.InodeRefKey, Offset: root}
			s.put(fsT, rk, format.MarshalInodeRefs([]format.InodeRef{{Index: 1, Name: "small"}}))
			return []want{{code: DirIndexRange, ino: root}}
		}},
		{"dir item names another inode", func(s *surgeon) []want {
			// The DIR_ITEM's inode alone changes (to another regular file):
			// its fingerprint must hold the inode, or it balances the
			// DIR_INDEX.
			mid := s.ino("/mid")
			es, err := format.UnmarshalDirEntries(s.get(fsT, dirItemKey(root, "small")))
			must(s.t, err)
			es[0].Ino = mid
			s.put(fsT, dirItemKey(root, "small"), format.MarshalDirEntries(es))
			return []want{
				{code: EntryMismatch, ino: root},
				{code: EntryNoRef, ino: root},
			}
		}},
		{"dir item renamed under its own hash", func(s *surgeon) []want {
			// The DIR_ITEM's name alone changes, under the new name's hash:
			// its fingerprint must hold the name, or it balances the
			// DIR_INDEX.
			es, err := format.UnmarshalDirEntries(s.get(fsT, dirItemKey(root, "mid")))
			must(s.t, err)
			s.del(fsT, dirItemKey(root, "mid"))
			es[0].Name = "mie"
			s.put(fsT, dirItemKey(root, "mie"), format.MarshalDirEntries(es))
			return []want{
				{code: IndexNoItem, ino: root},
				{code: EntryNoRef, ino: root},
			}
		}},
		{"dir item under a wrong hash", func(s *surgeon) []want {
			k := dirItemKey(root, "mid")
			to := k
			to.Offset++
			s.move(fsT, k, to)
			return []want{{code: DirItemHash, ino: root}}
		}},
		{"entry type differs from the inode", func(s *surgeon) []want {
			idx, e := s.entry(root, "small")
			e.Type = format.FileTypeSymlink
			s.put(fsT, format.Key{ObjectID: root, Type: format.DirIndexKey, Offset: idx}, format.MarshalDirEntry(e))
			s.put(fsT, dirItemKey(root, "small"), format.MarshalDirEntries([]format.DirEntry{e}))
			return []want{{code: EntryType, ino: root}}
		}},
		{"dir index and dir item disagree", func(s *surgeon) []want {
			idx, e := s.entry(root, "small")
			e.Type = format.FileTypeFIFO
			s.put(fsT, format.Key{ObjectID: root, Type: format.DirIndexKey, Offset: idx}, format.MarshalDirEntry(e))
			return []want{
				{code: EntryMismatch, ino: root},
				{code: EntryType, ino: root},
			}
		}},
		{"dangling entry", func(s *surgeon) []want {
			s.link(root, "ghost", 90000, format.FileTypeRegular)
			s.del(fsT, format.Key{ObjectID: 90000, Type: format.InodeRefKey, Offset: root})
			return []want{{code: EntryDangling, ino: root}}
		}},
		{"directory with two names", func(s *surgeon) []want {
			sub := s.ino("/dir/sub")
			s.link(root, "sub2", sub, format.FileTypeDir)
			s.inode(root, func(in *format.InodeItem) { in.Nlink++ })
			return []want{{code: DirNames, ino: sub}}
		}},
		{"directory loop", func(s *surgeon) []want {
			la, lb := s.ino("/la"), s.ino("/la/lb")
			s.unlink(root, "la")
			s.inode(root, func(in *format.InodeItem) { in.Nlink-- })
			s.link(lb, "la", la, format.FileTypeDir)
			s.inode(lb, func(in *format.InodeItem) { in.Nlink++ })
			return []want{{code: DirLoop, ino: min(la, lb)}}
		}},
		{"xattr under a wrong hash", func(s *surgeon) []want {
			dir := s.ino("/dir")
			k := format.Key{ObjectID: dir, Type: format.XattrItemKey, Offset: format.NameHash([]byte("user.comment"))}
			to := k
			to.Offset--
			s.move(fsT, k, to)
			return []want{{code: XattrHash, ino: dir}}
		}},
		{"xattr also under a wrong hash", func(s *surgeon) []want {
			// A second copy of user.comment (another value) under a wrong
			// key: -y keeps the one its hash keys and drops the other.
			dir := s.ino("/dir")
			k := format.Key{ObjectID: dir, Type: format.XattrItemKey, Offset: format.NameHash([]byte("user.comment"))}
			to := k
			to.Offset--
			s.put(fsT, to, format.MarshalXattrs([]format.Xattr{{Name: "user.comment", Value: []byte("another")}}))
			return []want{{code: XattrHash, ino: dir}}
		}},
		{"prop item", func(s *surgeon) []want {
			mid := s.ino("/mid")
			s.put(fsT, format.Key{ObjectID: mid, Type: format.PropItemKey, Offset: 1}, []byte("x"))
			return []want{{code: PropItem, ino: mid}}
		}},
		{"size below the extents", func(s *surgeon) []want {
			big := s.ino("/big")
			s.inode(big, func(in *format.InodeItem) { in.Size = 4000 })
			return []want{{code: ExtentBeyondSize, ino: big}}
		}},
		{"nbytes", func(s *surgeon) []want {
			mid := s.ino("/mid")
			s.inode(mid, func(in *format.InodeItem) { in.NBytes = 1 })
			return []want{{code: NBytes, ino: mid}}
		}},
		{"overlapping extents", func(s *surgeon) []want {
			big := s.ino("/big")
			hole := &format.FileExtentItem{Type: format.FileExtentRegular, NumBytes: 4096, RAMBytes: 4096}
			s.put(fsT, format.Key{ObjectID: big, Type: format.FileExtentKey, Offset: 1}, format.MarshalFileExtentItem(hole))
			return []want{{code: FileExtentOvlp, ino: big}}
		}},
		{"inline followed by an extent", func(s *surgeon) []want {
			small := s.ino("/small")
			hole := &format.FileExtentItem{Type: format.FileExtentRegular, NumBytes: 100, RAMBytes: 100}
			s.put(fsT, format.Key{ObjectID: small, Type: format.FileExtentKey, Offset: 100}, format.MarshalFileExtentItem(hole))
			return []want{{code: InlineNotOnly, ino: small}}
		}},
		{"inline not at offset 0", func(s *surgeon) []want {
			small := s.ino("/small")
			s.move(fsT, format.Key{ObjectID: small, Type: format.FileExtentKey}, format.Key{ObjectID: small, Type: format.FileExtentKey, Offset: 8})
			return []want{{code: InlineOffset, ino: small}}
		}},
		{"extents on a fifo", func(s *surgeon) []want {
			fifo := s.ino("/fifo")
			hole := &format.FileExtentItem{Type: format.FileExtentRegular, NumBytes: 10, RAMBytes: 10}
			s.put(fsT, format.Key{ObjectID: fifo, Type: format.FileExtentKey}, format.MarshalFileExtentItem(hole))
			return []want{
				{code: NotFileExtents, ino: fifo},
				{code: ExtentBeyondSize, ino: fifo},
			}
		}},
		{"a data extent overlapping the previous", func(s *surgeon) []want {
			// /big's last extent starts 4 KiB early: -y cuts the head
			// again, every byte stays.
			big := s.ino("/big")
			ext := s.extents(big)
			last := ext[len(ext)-1]
			x, err := format.UnmarshalFileExtentItem(last.Data)
			must(s.t, err)
			x.Offset -= 4096
			x.NumBytes += 4096
			s.del(fsT, last.Key)
			k := last.Key
			k.Offset -= 4096
			s.put(fsT, k, format.MarshalFileExtentItem(x))
			return []want{{code: FileExtentOvlp, ino: big}, {code: NBytes, ino: big}}
		}},
		{"a data extent after an inline one", func(s *surgeon) []want {
			// /mid's extent also in /small: dropped again, and its
			// reference with it.
			small, mid := s.ino("/small"), s.ino("/mid")
			l, _ := s.diskExtent(mid)
			s.put(fsT, format.Key{ObjectID: small, Type: format.FileExtentKey, Offset: 4096}, s.extents(mid)[0].Data)
			return []want{{code: InlineNotOnly, ino: small}, {code: NBytes, ino: small}, {code: ExtentRefs, logical: l}, {code: ExtentBeyondSize, ino: small}}
		}},
		{"an extent past the offset space", func(s *surgeon) []want {
			mid := s.ino("/mid")
			hole := &format.FileExtentItem{Type: format.FileExtentRegular, NumBytes: 8192, RAMBytes: 8192}
			s.put(fsT, format.Key{ObjectID: mid, Type: format.FileExtentKey, Offset: 1<<64 - 4096}, format.MarshalFileExtentItem(hole))
			return []want{{code: FileExtentWraps, ino: mid}, {code: ExtentBeyondSize, ino: mid}}
		}},
		{"an extent past the largest file", func(s *surgeon) []want {
			mid := s.ino("/mid")
			hole := &format.FileExtentItem{Type: format.FileExtentRegular, NumBytes: 8192, RAMBytes: 8192}
			s.put(fsT, format.Key{ObjectID: mid, Type: format.FileExtentKey, Offset: format.MaxFileSize - 4096}, format.MarshalFileExtentItem(hole))
			return []want{{code: FileExtentTooBig, ino: mid}, {code: ExtentBeyondSize, ino: mid}}
		}},
		{"entries in a file", func(s *surgeon) []want {
			// /small's second name is in /mid, a file: the name goes.
			mid, small := s.ino("/mid"), s.ino("/small")
			s.link(mid, "x", small, format.FileTypeRegular)
			s.inode(small, func(in *format.InodeItem) { in.Nlink++ })
			return []want{{code: NotDirEntries, ino: mid}}
		}},
		{"a directory entry naming its directory", func(s *surgeon) []want {
			la := s.ino("/la")
			s.link(la, "me", la, format.FileTypeDir)
			return []want{{code: DirEntrySelf, ino: la}, {code: RefSelfParent, ino: la}, {code: DirNames, ino: la}, {code: DirNlink, ino: la}}
		}},
		{"an inode ref naming its own inode as parent", func(s *surgeon) []want {
			// Only the INODE_REF: no entry to drop, the ref itself goes
			// and /la keeps its name in the root.
			la := s.ino("/la")
			s.put(fsT, format.Key{ObjectID: la, Type: format.InodeRefKey, Offset: la}, format.MarshalInodeRefs([]format.InodeRef{{Index: 5, Name: "me"}}))
			return []want{{code: RefSelfParent, ino: la}, {code: DirNames, ino: la}, {code: RefNoIndex, ino: la}}
		}},
		{"a directory whose only name is in itself", func(s *surgeon) []want {
			// /la loses its name in the root; its one INODE_REF names
			// /la itself: the ref goes and /la moves to lost+found.
			la := s.ino("/la")
			s.unlink(root, "la")
			s.inode(root, func(in *format.InodeItem) { in.Nlink-- })
			s.put(fsT, format.Key{ObjectID: la, Type: format.InodeRefKey, Offset: la}, format.MarshalInodeRefs([]format.InodeRef{{Index: 5, Name: "me"}}))
			return []want{{code: RefSelfParent, ino: la}, {code: RefNoIndex, ino: la}, {code: DirLoop, ino: la}}
		}},
		{"directory seq below 2", func(s *surgeon) []want {
			la := s.ino("/la")
			s.inode(la, func(in *format.InodeItem) { in.Seq = 0 })
			return []want{{code: DirSeq, ino: la}, {code: DirIndexRange, ino: la}}
		}},
		{"inode item key offset", func(s *surgeon) []want {
			mid := s.ino("/mid")
			s.move(fsT, inodeKey(mid), format.Key{ObjectID: mid, Type: format.InodeItemKey, Offset: 5})
			return []want{{code: InodeKeyOffset, ino: mid}}
		}},
		{"an item of an unknown type", func(s *surgeon) []want {
			mid := s.ino("/mid")
			s.put(fsT, format.Key{ObjectID: mid, Type: 200, Offset: 1}, []byte("x"))
			return []want{{code: FSItemType, ino: mid}}
		}},
		{"extent beyond its decompressed bytes", func(s *surgeon) []want {
			mid := s.ino("/mid")
			l, _ := s.diskExtent(mid)
			k := format.Key{ObjectID: mid, Type: format.FileExtentKey}
			b := s.get(fsT, k)
			binary.LittleEndian.PutUint64(b[32:], 4096) // offset: 4096 + 8192 > ram_bytes
			s.put(fsT, k, b)
			return []want{
				{code: FSItemBad, ino: mid},
				{code: ExtentUnreferenced, logical: l},
			}
		}},
		{"extent of partial sectors", func(s *surgeon) []want {
			mid := s.ino("/mid")
			l, _ := s.diskExtent(mid)
			k := format.Key{ObjectID: mid, Type: format.FileExtentKey}
			x, err := format.UnmarshalFileExtentItem(s.get(fsT, k))
			must(s.t, err)
			x.DiskLen, x.RAMBytes = 8000, 8000
			x.NumBytes = 8000
			s.put(fsT, k, format.MarshalFileExtentItem(x))
			s.inode(mid, func(in *format.InodeItem) { in.NBytes = 8000 })
			return []want{
				{code: FileExtentAlign, ino: mid},
				{code: FileExtentNoItem, ino: mid, logical: l},
				{code: ExtentUnreferenced, logical: l},
			}
		}},
		{"extent refs", func(s *surgeon) []want {
			l, n := s.diskExtent(s.ino("/mid"))
			k := format.Key{ObjectID: l, Type: format.ExtentItemKey, Offset: n}
			e, err := format.UnmarshalExtentItem(s.get(extT, k))
			must(s.t, err)
			e.Refs = 2
			s.put(extT, k, format.MarshalExtentItem(e))
			return []want{{code: ExtentRefs, logical: l}}
		}},
		{"data extent inside another", func(s *surgeon) []want {
			// A second extent item over the second sector of /mid's:
			// the two overlap, and nothing references the second.
			l, n := s.diskExtent(s.ino("/mid"))
			b := s.get(extT, format.Key{ObjectID: l, Type: format.ExtentItemKey, Offset: n})
			s.put(extT, format.Key{ObjectID: l + ss, Type: format.ExtentItemKey, Offset: ss}, b)
			return []want{
				{code: ExtentOverlap, logical: l + ss},
				{code: ExtentUnreferenced, logical: l + ss},
				{code: BGUsed},
			}
		}},
		{"data extent right after another", func(s *surgeon) []want {
			// Touching is not overlapping: only the reference is missing.
			var l, n uint64
			for _, it := range s.items(extT, format.Key{}, format.Key{ObjectID: ^uint64(0)}) {
				if it.Key.Type == format.ExtentItemKey {
					l, n = it.Key.ObjectID, it.Key.Offset // the last data extent
				}
			}
			b := s.get(extT, format.Key{ObjectID: l, Type: format.ExtentItemKey, Offset: n})
			s.put(extT, format.Key{ObjectID: l + n, Type: format.ExtentItemKey, Offset: ss}, b)
			return []want{
				{code: ExtentUnreferenced, logical: l + n},
				{code: BGUsed},
			}
		}},
		{"data extent over a node", func(s *surgeon) []want {
			// An extent item at the chunk tree's root node (which the
			// surgeon's commit does not move) overlaps that node.
			l, n := s.diskExtent(s.ino("/mid"))
			b := s.get(extT, format.Key{ObjectID: l, Type: format.ExtentItemKey, Offset: n})
			sb := s.st.Super()
			at := sb.Roots.Root(format.ChunkTree).Logical
			s.put(extT, format.Key{ObjectID: at, Type: format.ExtentItemKey, Offset: ss}, b)
			return []want{
				{code: ExtentOverlap, logical: at},
				{code: DataExtentChunk, logical: at},
				{code: ExtentUnreferenced, logical: at},
				{code: BGUsed},
			}
		}},
		{"data extent at the end of its chunk", func(s *surgeon) []want {
			// Ending exactly where the chunk ends is inside it.
			l, n := s.diskExtent(s.ino("/mid"))
			b := s.get(extT, format.Key{ObjectID: l, Type: format.ExtentItemKey, Offset: n})
			ch, _ := s.st.Vol.Chunks.Lookup(l)
			s.put(extT, format.Key{ObjectID: ch.End() - ss, Type: format.ExtentItemKey, Offset: ss}, b)
			return []want{
				{code: ExtentUnreferenced, logical: ch.End() - ss},
				{code: BGUsed, logical: ch.Logical},
			}
		}},
		{"data extent past the end of its chunk", func(s *surgeon) []want {
			l, n := s.diskExtent(s.ino("/mid"))
			b := s.get(extT, format.Key{ObjectID: l, Type: format.ExtentItemKey, Offset: n})
			ch, _ := s.st.Vol.Chunks.Lookup(l)
			s.put(extT, format.Key{ObjectID: ch.End() - ss, Type: format.ExtentItemKey, Offset: 2 * ss}, b)
			return []want{
				{code: ExtentOutside, logical: ch.End() - ss},
				{code: ExtentUnreferenced, logical: ch.End() - ss},
			}
		}},
		{"extent item missing", func(s *surgeon) []want {
			mid := s.ino("/mid")
			l, n := s.diskExtent(mid)
			s.del(extT, format.Key{ObjectID: l, Type: format.ExtentItemKey, Offset: n})
			return []want{
				{code: FileExtentNoItem, ino: mid, logical: l},
				{code: CsumOrphan, logical: l},
				{code: BGUsed},
			}
		}},
		{"file extent missing", func(s *surgeon) []want {
			mid := s.ino("/mid")
			l, _ := s.diskExtent(mid)
			s.del(fsT, format.Key{ObjectID: mid, Type: format.FileExtentKey})
			return []want{
				{code: ExtentUnreferenced, logical: l},
				{code: NBytes, ino: mid},
			}
		}},
		{"csum item deleted", func(s *surgeon) []want {
			l, _ := s.diskExtent(s.ino("/mid"))
			s.del(csT, format.Key{ObjectID: format.CsumObjectID, Type: format.CsumItemKey, Offset: l})
			return []want{{code: CsumMissing, logical: l}}
		}},
		{"csum items overlap", func(s *surgeon) []want {
			l, _ := s.diskExtent(s.ino("/mid"))
			s.put(csT, format.Key{ObjectID: format.CsumObjectID, Type: format.CsumItemKey, Offset: l + ss}, make([]byte, 4))
			return []want{{code: CsumOverlap, logical: l + ss}}
		}},
		{"csum item of a partial sum", func(s *surgeon) []want {
			l, _ := s.diskExtent(s.ino("/mid"))
			k := format.Key{ObjectID: format.CsumObjectID, Type: format.CsumItemKey, Offset: l}
			s.put(csT, k, s.get(csT, k)[:7])
			return []want{
				{code: CsumItemBad, logical: l},
				{code: CsumMissing, logical: l},
			}
		}},
		{"csum outside the data extents", func(s *surgeon) []want {
			var at uint64
			for _, ch := range s.st.Vol.Chunks.All() {
				if ch.Type == format.ChunkData {
					at = ch.End() - ss
				}
			}
			s.put(csT, format.Key{ObjectID: format.CsumObjectID, Type: format.CsumItemKey, Offset: at}, make([]byte, 4))
			return []want{{code: CsumOrphan, logical: at}}
		}},
	}
}

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

// TestFSRandomOps: random sequences of namespace and data operations keep
// the filesystem clean at every commit.
func TestFSRandomOps(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			runRandomOps(t, seed, 400)
		})
	}
}

func runRandomOps(t *testing.T, seed uint64, steps int) {
	f, devs := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	r := rand.New(rand.NewPCG(seed, 99))
	names := []string{"a", "b", "c", "d1", "d2", "e"}
	var existing []string // every path, refreshed now and then
	list := func() {
		existing = existing[:0]
		var walk func(dir string, in *fsys.Inode)
		walk = func(dir string, in *fsys.Inode) {
			must(t, f.ReadDir(in, func(e fsys.DirEntry) bool {
				p := dir + "/" + e.Name
				existing = append(existing, p)
				if e.Type == format.FileTypeDir {
					walk(p, resolve(t, f, p))
				}
				return true
			}))
		}
		walk("", resolve(t, f, "/"))
	}
	// randPath is mostly an existing path or a new name next to one.
	randPath := func() string {
		if len(existing) > 0 && r.IntN(4) > 0 {
			p := existing[r.IntN(len(existing))]
			if r.IntN(3) == 0 {
				p += "/" + names[r.IntN(len(names))]
			}
			return p
		}
		p := ""
		for d := r.IntN(2); d >= 0; d-- {
			p += "/" + names[r.IntN(len(names))]
		}
		return p
	}
	// An errno is a refused operation (EEXIST, ENOTEMPTY, ...): fine.
	// Anything else is a bug.
	ok := func(step int, op string, err error) {
		var errno syscall.Errno
		if err != nil && !errors.As(err, &errno) {
			t.Fatalf("step %d %s: %v", step, op, err)
		}
	}
	var log []string
	for step := 0; step < steps; step++ {
		if step%10 == 0 {
			list()
		}
		p, q := randPath(), randPath()
		if r.IntN(2) == 0 { // a new name in an existing directory
			q = path.Dir(q) + "/" + names[r.IntN(len(names))] + fmt.Sprint(r.IntN(4))
		}
		var err error
		var op string
		switch r.IntN(12) {
		case 0, 1:
			op = "create " + p
			_, err = f.Create(p, fsys.Attr{Mode: 0o644})
		case 2:
			op = "mkdir " + p
			_, err = f.Mkdir(p, fsys.Attr{Mode: 0o755})
		case 3, 4, 5:
			var in *fsys.Inode
			if in, err = f.Resolve(p, false); err == nil {
				n, off := r.IntN(4)*r.IntN(7000), r.IntN(4)*r.IntN(9000)
				data := pattern(n, byte(step))
				if r.IntN(4) == 0 {
					data = make([]byte, n) // zeros: holes
				}
				op = fmt.Sprintf("write %s %d+%d", p, off, n)
				err = f.WriteAt(in, data, uint64(off))
			}
		case 6:
			var in *fsys.Inode
			if in, err = f.Resolve(p, false); err == nil {
				size := uint64(r.IntN(3) * r.IntN(12000))
				op = fmt.Sprintf("truncate %s %d", p, size)
				err = f.Truncate(in, size)
			}
		case 7:
			op = "link " + p + " " + q
			err = f.Link(p, q)
		case 8:
			op = "rename " + p + " " + q
			err = f.Rename(p, q)
		case 9:
			op = "remove " + p
			err = f.Remove(p)
		case 10:
			op = "symlink " + p
			_, err = f.Symlink(strings.Repeat("t", 1+r.IntN(3)*r.IntN(1500)), p, fsys.Attr{})
		case 11:
			var in *fsys.Inode
			if in, err = f.Resolve(p, false); err == nil {
				op = "xattr " + p
				name := fmt.Sprintf("user.%d", r.IntN(3))
				if r.IntN(3) == 0 {
					err = f.RemoveXattr(in, name)
				} else {
					err = f.SetXattr(in, name, pattern(r.IntN(200), 1))
				}
			}
		}
		if op != "" {
			log = append(log, fmt.Sprintf("%d %s: %v", step, op, err))
		}
		ok(step, op, err)
		if step%50 == 49 || step == steps-1 {
			must(t, f.Sync())
			if rep := fsckDevs(t, devs, Options{CheckData: step == steps-1}); !rep.Clean() {
				t.Fatalf("after step %d: %v\nlast ops:\n%s", step, rep.Problems, strings.Join(log[max(0, len(log)-20):], "\n"))
			}
		}
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
