package fsys

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/ddfs/ddfs/format"
)

// TestWalkUnreadableInodeLeaf: a walk's inode lookups go from leaf to
// leaf through the tree's hints; when a leaf in the middle of a
// directory's inodes is unreadable, the inodes in it fail with EIO (never
// ENOENT, never "names an inode which does not exist"), however warm the
// hints are on the leaves either side, and the others are read.
func TestWalkUnreadableInodeLeaf(t *testing.T) {
	f, devs := newTestFS(t, 256<<20, 1)
	d, err := f.Mkdir("/d", Attr{Mode: 0o755})
	if err != nil {
		t.Fatal(err)
	}
	var inos []uint64
	for i := range 600 {
		inos = append(inos, write(t, f, fmt.Sprintf("/d/f%04d", i), nil).Ino)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	// The middle leaf of those holding only the files' own items.
	var leaves []*format.Node
	if err := reopenFS(t, devs).rtree(format.FSTree).WalkNodes(func(n *format.Node) error {
		if n.IsLeaf() && n.Items[0].Key.ObjectID > inos[0] && n.Items[len(n.Items)-1].Key.ObjectID < inos[len(inos)-1] {
			leaves = append(leaves, n)
		}
		return nil
	}); err != nil || len(leaves) < 3 {
		t.Fatalf("%d leaves of file items: %v", len(leaves), err)
	}
	bad := leaves[len(leaves)/2]
	inBad := map[uint64]bool{}
	for _, it := range bad.Items {
		if it.Key.Type == format.InodeItemKey {
			inBad[it.Key.ObjectID] = true
		}
	}
	g := openFaulty(t, devs, func(n *format.Node) bool { return n.Logical == bad.Logical })
	failed := 0
	for _, ino := range inos { // in order: each leaf's hint is warm when the next begins
		_, err := g.Inode(ino)
		if inBad[ino] {
			if !errors.Is(err, syscall.EIO) || errors.Is(err, syscall.ENOENT) {
				t.Errorf("inode %d in the unreadable leaf: %v, want EIO and not ENOENT", ino, err)
			}
			failed++
		} else if err != nil {
			t.Errorf("inode %d: %v", ino, err)
		}
	}
	if failed == 0 {
		t.Fatal("no inode item in the unreadable leaf: test too weak")
	}
	dir, err := g.Inode(d.Ino)
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Children(dir)
	var ee *EntryError
	if !errors.Is(err, syscall.EIO) || errors.As(err, &ee) || errors.Is(err, format.ErrCorrupt) {
		t.Errorf("Children: %v, want EIO, not an entry fsck flags", err)
	}
}
