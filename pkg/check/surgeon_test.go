package check

import (
	"bytes"
	"strings"
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

// ownSums gives the sums of the data extent [l, l+n) an item of their own,
// keyed at l (writers put the sums of extents laid end to end in one
// item), so a case can damage that extent's sums alone.
func (s *surgeon) ownSums(l, n uint64) {
	s.t.Helper()
	sb := s.st.Super()
	ss, cl := uint64(sb.SectorSize), uint64(sb.CsumType.Len())
	var sums []byte
	for at := l; at < l+n; at += ss {
		it, err := s.tree(format.CsumTree).SeekLE(csumKey(at))
		must(s.t, err)
		i := (at - it.Key.Offset) / ss * cl
		if it.Key.Offset > at || i+cl > uint64(len(it.Data)) {
			s.t.Fatalf("no sum for logical %d", at)
		}
		sums = append(sums, it.Data[i:i+cl]...)
	}
	must(s.t, s.tx.DeleteCsums(l, l+n))
	s.put(format.CsumTree, csumKey(l), sums)
}
