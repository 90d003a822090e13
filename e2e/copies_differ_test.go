package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/store"
)

// TestCatCopiesDiffer (issue 36): copy 0 of the dup fs leaf holding a
// file's inode gets the inode's size halved, checksum recomputed. With
// nothing else changed both copies fit the leaf's place: `ddfs cat`
// fails instead of printing the short file, fsck -y cannot decide (exit
// 4) and cat still fails. With the leaf's first key moved too, only copy
// 1 fits: cat prints the whole file, fsck -y rewrites copy 0 (exit 1),
// fsck -n is clean and cat prints it again.
func TestCatCopiesDiffer(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	os.MkdirAll(src, 0o755)
	want := bytes.Repeat([]byte("the right bytes of target\n"), 800)
	for i := range 300 {
		os.WriteFile(filepath.Join(src, fmt.Sprintf("f%03d", i)), []byte(fmt.Sprintf("file %d\n", i)), 0o644)
	}
	os.WriteFile(filepath.Join(src, "target"), want, 0o644)
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "clean.img"), 0) // metadata dup
	must(t, run(t, dir, "ddfs", "cp", "-r", "src", "clean.img:/"), 0)
	clean, err := os.ReadFile(filepath.Join(dir, "clean.img"))
	if err != nil {
		t.Fatal(err)
	}
	for _, moveKey := range []bool{false, true} {
		t.Run(fmt.Sprintf("first key moved %v", moveKey), func(t *testing.T) {
			img := fmt.Sprintf("x%v.img", moveKey)
			os.WriteFile(filepath.Join(dir, img), clean, 0o644)
			halveInCopy0(t, filepath.Join(dir, img), "/src/target", moveKey)
			cat := func(when string) {
				r := run(t, dir, "ddfs", "cat", img+":/src/target")
				switch {
				case r.code == 0 && r.stdout != string(want):
					t.Errorf("%s: cat printed %d other bytes with exit 0", when, len(r.stdout))
				case r.code == 0 && !moveKey:
					t.Errorf("%s: cat read a leaf whose copies both fit its place", when)
				case r.code != 0 && moveKey:
					t.Errorf("%s: cat exit %d (%s), want the file from copy 1", when, r.code, r.stderr)
				}
			}
			cat("before fsck")
			fsckJSON(t, dir, 4, "-n", img)
			if moveKey {
				fsckJSON(t, dir, 1, "-y", img)
				fsckJSON(t, dir, 0, "-n", img)
			} else {
				fsckJSON(t, dir, 4, "-y", img)
			}
			cat("after fsck -y")
		})
	}
}

// halveInCopy0 halves the size of file p's inode in copy 0 of its fs
// leaf (checksum recomputed), and with moveKey moves the leaf's first key
// down as well.
func halveInCopy0(t *testing.T, image, p string, moveKey bool) {
	t.Helper()
	st, ino := openAtIno(t, image, p)
	leaf := leafOf(t, st, format.Key{ObjectID: ino, Type: format.InodeItemKey})
	ts, err := st.Vol.Locate(leaf)
	if err != nil {
		t.Fatal(err)
	}
	sb := st.Super()
	st.Close()
	fh, err := os.OpenFile(image, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	b := make([]byte, sb.NodeSize)
	fh.ReadAt(b, int64(ts[0].Physical))
	n, err := format.UnmarshalNode(b, sb.CsumType, format.NodeExpect{FSID: sb.FSID, Logical: leaf, Level: -1})
	if err != nil {
		t.Fatal(err)
	}
	i := sort.Search(len(n.Items), func(i int) bool { return !n.Items[i].Key.Less(format.Key{ObjectID: ino, Type: format.InodeItemKey}) })
	inode, err := format.UnmarshalInodeItem(n.Items[i].Data)
	if err != nil {
		t.Fatal(err)
	}
	inode.Size /= 2
	n.Items[i].Data = format.MarshalInodeItem(inode)
	if k := &n.Items[0].Key; moveKey && k.Offset > 0 {
		k.Offset-- // still below item 1: a valid leaf
	} else if moveKey {
		k.Type--
	}
	if _, err := fh.WriteAt(format.MarshalNode(n, sb.NodeSize, sb.CsumType), int64(ts[0].Physical)); err != nil {
		t.Fatal(err)
	}
}

// leafOf is the logical address of the fs leaf that holds key, below
// the root.
func leafOf(t *testing.T, st *store.FS, key format.Key) uint64 {
	t.Helper()
	sb := st.Super()
	r := sb.Roots.Root(format.FSTree)
	n, err := st.ReadNode(format.FSTree, r.Logical, r.Generation, int(r.Level))
	at := r.Logical
	for err == nil && !n.IsLeaf() {
		i := max(sort.Search(len(n.Ptrs), func(i int) bool { return key.Less(n.Ptrs[i].Key) })-1, 0)
		at = n.Ptrs[i].Logical
		n, err = st.ReadNode(format.FSTree, at, n.Ptrs[i].Generation, int(n.Level)-1)
	}
	if err != nil || at == r.Logical {
		t.Fatalf("want the fs tree taller than a leaf: %v", err)
	}
	return at
}
