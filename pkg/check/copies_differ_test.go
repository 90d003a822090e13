package check

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
)

// TestCopiesDifferChosenByPlace (issue 36): copy 0 of a dup fs leaf (not
// the first child) holding a file's inode gets that inode's size halved,
// checksum recomputed. Left at that, both copies fit the leaf's place:
// fsck reports NODE_COPIES_DIFFER without a fix, -y leaves it, and
// readers refuse the leaf (store.ErrCopiesDiffer) rather than return the
// short file. With the leaf's first key moved as well, only copy 1 fits:
// fsck reports copy 0 alone (no NODE_FIRST_KEY: it checks copy 1, as
// readers read it), -y rewrites it, -n is then clean and every file
// reads as before.
func TestCopiesDifferChosenByPlace(t *testing.T) {
	for _, moveKey := range []bool{false, true} {
		t.Run(fmt.Sprintf("first key moved %v", moveKey), func(t *testing.T) {
			devs, before, leaf := differingLeaf(t, moveKey)
			rep := fsckDevs(t, devs, Options{})
			var got []Problem
			for _, p := range rep.Problems {
				if p.Code == NodeCopiesDiffer {
					got = append(got, p)
				} else {
					t.Errorf("unexpected %v", p)
				}
			}
			if len(got) != 1 || got[0].Logical != leaf || (moveKey && !got[0].CopyIs(0)) || (got[0].fix != nil) != moveKey {
				t.Fatalf("want one NODE_COPIES_DIFFER at leaf %d (copy 0 and a fix when the key moved): %v", leaf, rep.Problems)
			}
			repairDevs(t, devs, ModeRepair)
			after := fsckDevs(t, devs, Options{})
			if after.Clean() != moveKey {
				t.Fatalf("after -y: clean %v, want %v: %v", after.Clean(), moveKey, after.Problems)
			}
			files := contents(t, devs)
			for ino, h := range files {
				if h != before[ino] {
					t.Errorf("inode %d reads other bytes than before", ino)
				}
			}
			if moveKey && len(files) != len(before) {
				t.Errorf("%d of %d files read after -y", len(files), len(before))
			}
			if !moveKey {
				if len(files) == len(before) {
					t.Error("every file read: the leaf whose copies differ was not refused")
				}
				if err := walkTree(openedFS(t, devs)); !errors.Is(err, store.ErrCopiesDiffer) {
					t.Errorf("walk of the fs tree: %v, want ErrCopiesDiffer", err)
				}
			}
		})
	}
}

// walkTree scans the whole fs tree.
func walkTree(f *fsys.FS) error {
	return f.Store().Tree(format.FSTree).Scan(format.Key{}, format.MaxKey, func(format.Item) (bool, error) { return true, nil })
}

// differingLeaf builds 200 files on dup metadata and alters copy 0 of
// an fs leaf (not the first) as TestCopiesDifferChosenByPlace says; it returns
// the devices, the files' contents before and the leaf.
func differingLeaf(t *testing.T, moveKey bool) ([]*device.MemDevice, map[uint64][32]byte, uint64) {
	f, devs := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	for i := range 200 {
		in, err := f.Create(fmt.Sprintf("/f%03d", i), fsys.Attr{Mode: 0o644})
		must(t, err)
		must(t, f.WriteAt(in, pattern(5000+i, byte(i)), 0))
	}
	must(t, f.Sync())
	st := f.Store()
	sb := st.Super()
	r := sb.Roots.Root(format.FSTree)
	parent, err := st.ReadNode(format.FSTree, r.Logical, r.Generation, int(r.Level))
	for err == nil && parent.Level > 1 {
		parent, err = st.ReadNode(format.FSTree, parent.Ptrs[0].Logical, parent.Ptrs[0].Generation, int(parent.Level)-1)
	}
	if err != nil || parent.Level != 1 {
		t.Fatalf("want a level 1 fs node: %v", err)
	}
	var leaf uint64
	for _, p := range parent.Ptrs[1:] {
		n, err := st.ReadNode(format.FSTree, p.Logical, p.Generation, 0)
		if err == nil && leaf == 0 && fileInode(n) >= 0 {
			leaf = p.Logical
		}
	}
	ts, err := st.Vol.Locate(leaf)
	must(t, err)
	must(t, st.Close())
	before := contents(t, devs)
	d := devs[ts[0].DevID-1]
	b := make([]byte, 4096)
	d.ReadAt(b, int64(ts[0].Physical))
	n, err := format.UnmarshalNode(b, format.CsumCRC32C, format.NodeExpect{FSID: [16]byte{9}, Logical: leaf, Level: -1})
	must(t, err)
	if !halveAFile(n) {
		t.Fatal("no file inode in the leaf")
	}
	if moveKey {
		moveDown(&n.Items[0].Key) // still below item 1: a valid leaf
	}
	d.WriteAt(format.MarshalNode(n, 4096, format.CsumCRC32C), int64(ts[0].Physical))
	return devs, before, leaf
}

// moveDown makes k a smaller key.
func moveDown(k *format.Key) {
	if k.Offset > 0 {
		k.Offset--
	} else {
		k.Type--
	}
}

// fileInode is the index of the first regular file's inode in n, -1
// when it holds none.
func fileInode(n *format.Node) int {
	for i, it := range n.Items {
		if it.Key.Type != format.InodeItemKey {
			continue
		}
		if in, err := format.UnmarshalInodeItem(it.Data); err == nil && in.FileType() == format.FileTypeRegular {
			return i
		}
	}
	return -1
}

// halveAFile halves the size of the first regular file's inode in n.
func halveAFile(n *format.Node) bool {
	i := fileInode(n)
	if i < 0 {
		return false
	}
	in, _ := format.UnmarshalInodeItem(n.Items[i].Data)
	in.Size /= 2
	n.Items[i].Data = format.MarshalInodeItem(in)
	return true
}
