package fsys

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
)

// TestDeleteCsumsOfMergedItem: one csum item covering three adjacent
// extents (as another writer may merge them, FORMAT.md §6.7). Freeing the
// middle extent, then the first, keeps exactly the sums of what is still
// allocated: the kept files still verify and no sum covers freed space.
func TestDeleteCsumsOfMergedItem(t *testing.T) {
	f, devs := newTestFS(t, 256<<20, 1)
	var ranges [3][2]uint64 // disk_logical, disk_len of files a, b, c
	for i, name := range []string{"/a", "/b", "/c"} {
		in := write(t, f, name, bytes.Repeat([]byte{byte('a' + i)}, 3*4096))
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		l, n := diskRange(t, f, in)
		ranges[i] = [2]uint64{l, n}
	}
	for i := 1; i < 3; i++ {
		if ranges[i][0] != ranges[i-1][0]+ranges[i-1][1] {
			t.Fatalf("extents not adjacent: %v", ranges)
		}
	}
	start, end := ranges[0][0], ranges[2][0]+ranges[2][1]
	g := craft(t, f, devs, func(tr *btree.Tree) {
		merged := csumItems(t, f.tx.Tree(format.CsumTree), start, end)
		var sums []byte
		for _, it := range merged {
			if err := f.tx.Tree(format.CsumTree).Delete(it.Key); err != nil {
				t.Fatal(err)
			}
			sums = append(sums, it.Data...)
		}
		if uint64(len(sums)) != (end-start)/4096*4 {
			t.Fatalf("%d bytes of sums for %d bytes of data", len(sums), end-start)
		}
		if err := f.tx.Tree(format.CsumTree).Insert(csumKey(start), sums); err != nil {
			t.Fatal(err)
		}
	})
	for _, step := range []struct {
		remove string
		kept   []string
		freed  [2]uint64
	}{
		{"/b", []string{"/a", "/c"}, ranges[1]},
		{"/a", []string{"/c"}, ranges[0]},
	} {
		if err := g.Remove(step.remove); err != nil {
			t.Fatal(err)
		}
		if err := g.Sync(); err != nil {
			t.Fatal(err)
		}
		g = reopenFS(t, devs)
		if its := csumItems(t, g.rtree(format.CsumTree), step.freed[0], step.freed[0]+step.freed[1]); len(its) != 0 {
			t.Errorf("after removing %s: sums still cover its freed range: %v", step.remove, its[0].Key)
		}
		for _, name := range step.kept {
			in, err := g.Resolve(name, false)
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 3*4096)
			if _, err := g.ReadAt(in, buf, 0); err != nil || buf[0] != name[1] {
				t.Errorf("after removing %s: read %s: %v", step.remove, name, err)
			}
		}
	}
}

// csumItems are the csum items that overlap [start, end).
func csumItems(t *testing.T, tr *btree.Tree, start, end uint64) []format.Item {
	t.Helper()
	var out []format.Item
	if it, err := tr.SeekLE(csumKey(start)); err == nil && it.Key.Offset < start && isCsumKey(it.Key) {
		if it.Key.Offset+uint64(len(it.Data)/4)*4096 > start { // crc32c, 4 KiB sectors
			out = append(out, it)
		}
	}
	err := tr.Scan(csumKey(start), csumKey(end), func(it format.Item) (bool, error) {
		out = append(out, format.Item{Key: it.Key, Data: bytes.Clone(it.Data)})
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCsumItemGrows: the sums of extents written end to end in one
// transaction go in one item, grown in place. A file removed in the same
// transaction cuts the item; the next file, allocated past the cut, gets
// an item of its own (growing the cut one would put its sums at the
// removed file's place). Every file reads back through its sums, after a
// reopen too.
func TestCsumItemGrows(t *testing.T) {
	f, devs := newTestFS(t, 256<<20, 1)
	model := map[string][]byte{}
	var first, last *Inode
	for i := range 20 {
		name := fmt.Sprintf("/f%02d", i)
		model[name] = bytes.Repeat([]byte{byte(i + 1)}, 3*4096)
		in := write(t, f, name, model[name])
		if i == 0 {
			first = in
		}
		last = in
	}
	start, _ := diskRange(t, f, first)
	lastStart, lastLen := diskRange(t, f, last)
	if its := csumItems(t, f.tx.Tree(format.CsumTree), start, lastStart+lastLen); len(its) != 1 || len(its[0].Data) != 20*3*4 {
		t.Fatalf("20 adjacent extents: %d csum items, want 1 of 240 bytes", len(its))
	}
	in18, err := f.Resolve("/f18", false)
	if err != nil {
		t.Fatal(err)
	}
	s18, l18 := diskRange(t, f, in18)
	if err := f.Remove("/f18"); err != nil {
		t.Fatal(err)
	}
	delete(model, "/f18")
	// Too big for /f18's hole: allocated right after /f19, where the
	// item putSums grew last used to end.
	model["/g"] = bytes.Repeat([]byte{0xee}, 4*4096)
	gs, _ := diskRange(t, f, write(t, f, "/g", model["/g"]))
	if gs != lastStart+lastLen {
		t.Fatalf("/g at %d, want %d (right after /f19)", gs, lastStart+lastLen)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if its := csumItems(t, f.rtree(format.CsumTree), s18, s18+l18); len(its) != 0 {
		t.Fatalf("sums cover the removed /f18's freed range: %v", its[0].Key)
	}
	for _, g := range []*FS{f, reopenFS(t, devs)} {
		for name, want := range model {
			if got := readAll(t, g, name); !bytes.Equal(got, want) {
				t.Fatalf("%s reads back wrong", name)
			}
		}
	}
}

// diskRange is the disk extent of a one-extent file.
func diskRange(t *testing.T, f *FS, in *Inode) (uint64, uint64) {
	t.Helper()
	b, err := f.rtree(format.FSTree).Get(extentKey(in.Ino, 0))
	if err != nil {
		t.Fatal(err)
	}
	x, err := format.UnmarshalFileExtentItem(b)
	if err != nil {
		t.Fatal(err)
	}
	return x.DiskLogical, x.DiskLen
}
