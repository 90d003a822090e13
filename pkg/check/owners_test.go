package check

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// TestDataOwnerAtExtentStart: a bad data sector that is the first of its
// extent, right after another file's extent, is named after its own
// file, not the neighbour's.
func TestDataOwnerAtExtentStart(t *testing.T) {
	f, devs := newFS(t, layout{1, format.ProfileDup, format.ProfileDup})
	populate(t, f)
	s := newSurgeon(t, devs)
	defer s.tx.Abort()
	// Files by their extents: find one whose extent starts where another
	// file's extent ends.
	owner := map[uint64]string{} // data extent start → path
	ends := map[uint64]string{}  // data extent end → path
	for _, p := range []string{"/small", "/mid", "/big", "/sparse", "/zeros", "/trunc", "/victim"} {
		for _, it := range s.extents(s.ino(p)) {
			x, err := format.UnmarshalFileExtentItem(it.Data)
			must(t, err)
			if x.Type == format.FileExtentInline || x.DiskLogical == 0 {
				continue
			}
			owner[x.DiskLogical] = p
			ends[x.DiskLogical+x.DiskLen] = p
		}
	}
	var at uint64
	var path string
	for _, l := range slices.Sorted(maps.Keys(owner)) { // the lowest: the same every run
		if q, ok := ends[l]; ok && q != owner[l] {
			p := owner[l]
			at, path = l, p
			break
		}
	}
	if at == 0 {
		t.Fatalf("no extent right after another file's: %v %v", owner, ends)
	}
	targets, err := s.st.Vol.Locate(at)
	must(t, err)
	flip(s.devs[targets[0].DevID-1], int64(targets[0].Physical)+10)
	rep := fsckDevs(t, s.devs, Options{CheckData: true})
	if len(rep.Problems) != 1 {
		t.Fatalf("problems: %v", rep.Problems)
	}
	if p := rep.Problems[0]; p.Code != DataCopyBad || p.Logical != at || !p.CopyIs(0) || p.Ino != s.ino(path) || p.Path != path {
		t.Fatalf("got %v, want DATA_COPY_BAD copy 0 at %d of %s", p, at, path)
	}
}

// TestReservedObjectOnce: two fs tree items of a reserved object id are
// one problem (about the object), not one per item.
func TestReservedObjectOnce(t *testing.T) {
	f, base := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	populate(t, f)
	s := newSurgeon(t, base)
	in := &format.InodeItem{Mode: 0o100644, Nlink: 1, Generation: 1}
	s.put(format.FSTree, inodeKey(5), format.MarshalInodeItem(in))
	s.put(format.FSTree, format.Key{ObjectID: 5, Type: format.XattrItemKey, Offset: 1}, []byte("x"))
	rep := s.check(Options{})
	n := 0
	for _, p := range rep.Problems {
		if p.Code != InoReserved {
			t.Errorf("unexpected %v", p)
		}
		n++
	}
	if n != 1 {
		t.Errorf("%d problems, want one INO_RESERVED: %v", n, rep.Problems)
	}
}

// TestProblemOrder: problems come by pass (csum before fs), and within a
// pass in the order the walk meets them (by inode).
func TestProblemOrder(t *testing.T) {
	f, base := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	populate(t, f)
	s := newSurgeon(t, base)
	small, mid := s.ino("/small"), s.ino("/mid")
	if small > mid {
		t.Fatalf("/small %d after /mid %d", small, mid)
	}
	s.inode(mid, func(in *format.InodeItem) { in.Nlink = 7 })
	s.inode(small, func(in *format.InodeItem) { in.Nlink = 7 })
	l, n := s.diskExtent(mid)
	s.ownSums(l, n)
	s.del(format.CsumTree, csumKey(l))
	rep := s.check(Options{})
	var got []string
	for _, p := range rep.Problems {
		got = append(got, fmt.Sprintf("%s:%d", p.Code, p.Ino))
	}
	want := []string{"CSUM_MISSING:0", fmt.Sprintf("NLINK:%d", small), fmt.Sprintf("NLINK:%d", mid)}
	if !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

// TestCheckDataLongSumItem: --check-data over a file whose checksum
// items hold more sums than one read batch finds exactly the one
// flipped sector, in the second batch, and nothing else.
func TestCheckDataLongSumItem(t *testing.T) {
	const ss, sectors, bad = 4096, 2*dataBatch + 44, dataBatch + 44
	f, base := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	in, err := f.Create("/long", fsys.Attr{Mode: 0o644})
	must(t, err)
	must(t, f.WriteAt(in, pattern(sectors*ss, 21), 0))
	must(t, f.Sync())
	s := newSurgeon(t, base)
	defer s.tx.Abort()
	l, _ := s.diskExtent(s.ino("/long"))
	long := false
	for _, it := range s.items(format.CsumTree, csumKey(l), csumKey(l+sectors*ss)) {
		long = long || len(it.Data)/4 > dataBatch
	}
	if !long { // the case under test: a skip here would hide its loss
		t.Fatalf("no checksum item holds more than %d sums (one read batch): the file no longer makes the case tested", dataBatch)
	}
	targets, err := s.st.Vol.Locate(l + bad*ss)
	must(t, err)
	flip(s.devs[targets[0].DevID-1], int64(targets[0].Physical)+7)
	rep := fsckDevs(t, s.devs, Options{CheckData: true})
	if len(rep.Problems) != 1 || rep.Problems[0].Code != DataCopyBad || rep.Problems[0].Logical != l+bad*ss {
		t.Fatalf("problems %v, want one DATA_COPY_BAD at %d", rep.Problems, l+bad*ss)
	}
}

// TestDataOwnerShared: a bad sector of an extent two files share is
// named after the first of them in key order (the lower inode), as the
// walk met them, whichever file the second scan meets last.
func TestDataOwnerShared(t *testing.T) {
	f, devs := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	a, err := f.Create("/a", fsys.Attr{Mode: 0o644})
	must(t, err)
	must(t, f.WriteAt(a, bytes.Repeat([]byte("shared. "), 4096), 0))
	for _, p := range []string{"/b", "/c"} {
		in, err := f.Create(p, fsys.Attr{Mode: 0o644})
		must(t, err)
		must(t, f.CloneData(a, in))
	}
	must(t, f.Sync())
	s := newSurgeon(t, devs)
	defer s.tx.Abort()
	x, err := format.UnmarshalFileExtentItem(s.extents(s.ino("/c"))[0].Data)
	must(t, err)
	targets, err := s.st.Vol.Locate(x.DiskLogical + 4096)
	must(t, err)
	flip(s.devs[targets[0].DevID-1], int64(targets[0].Physical)+10)
	rep := fsckDevs(t, s.devs, Options{CheckData: true})
	if len(rep.Problems) != 1 {
		t.Fatalf("problems: %v", rep.Problems)
	}
	if p := rep.Problems[0]; p.Code != DataCopyBad || p.Ino != s.ino("/a") || p.Path != "/a" {
		t.Fatalf("got %v, want DATA_COPY_BAD of /a", p)
	}
}
