package fsys

import (
	"errors"
	"testing"

	"github.com/ddfs/ddfs/format"
)

// TestLookupNeedsRef (issue 36): the DIR_ITEM of /a rewritten to name
// /b's inode (fsck: ENTRY_NO_REF, ENTRY_MISMATCH) makes a lookup of /a
// fail with ErrCorrupt instead of returning /b, whose bytes cat would
// print as /a's; /b and a hard link /c to it still resolve.
func TestLookupNeedsRef(t *testing.T) {
	f, devs := newTestFS(t, 256<<20, 1)
	var inos []uint64
	for _, name := range []string{"/a", "/b"} {
		in, err := f.Create(name, Attr{Mode: 0o644})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.WriteAt(in, []byte("content of "+name), 0); err != nil {
			t.Fatal(err)
		}
		inos = append(inos, in.Ino)
	}
	if err := f.Link("/b", "/c"); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	tx, err := f.Store().Begin()
	if err != nil {
		t.Fatal(err)
	}
	e := format.DirEntry{Ino: inos[1], Type: format.FileTypeRegular, Name: "a"}
	if err := tx.Tree(format.FSTree).Put(dirItemKey(format.RootDirIno, "a"), format.MarshalDirEntries([]format.DirEntry{e})); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	f = reopenFS(t, devs)
	if in, err := f.Resolve("/a", false); !errors.Is(err, format.ErrCorrupt) {
		t.Errorf("resolve /a: inode %v, %v; want ErrCorrupt", in, err)
	}
	if in, err := f.LookupAt(format.RootDirIno, "a"); !errors.Is(err, format.ErrCorrupt) {
		t.Errorf("lookup a: inode %v, %v; want ErrCorrupt", in, err)
	}
	for _, p := range []string{"/b", "/c"} {
		if in, err := f.Resolve(p, false); err != nil || in.Ino != inos[1] {
			t.Errorf("resolve %s: %v, %v", p, in, err)
		}
	}
}
