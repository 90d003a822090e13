package fusefs

import (
	"errors"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// TestMountRootNotDir: an image whose root inode is a regular file
// (checksums valid) is refused before anything is mounted (it used to be
// served, the kernel then looking up names in a file).
func TestMountRootNotDir(t *testing.T) {
	f := memFS(t)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	st := f.Store()
	tx, err := st.Begin()
	if err != nil {
		t.Fatal(err)
	}
	k := format.Key{ObjectID: format.RootDirIno, Type: format.InodeItemKey}
	b, err := tx.Tree(format.FSTree).Get(k)
	if err != nil {
		t.Fatal(err)
	}
	in, err := format.UnmarshalInodeItem(b)
	if err != nil {
		t.Fatal(err)
	}
	in.Mode = format.ModeRegular | 0o644
	if err := tx.Tree(format.FSTree).Put(k, format.MarshalInodeItem(in)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	g, err := fsys.New(st, fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Mount(t.TempDir(), g, Options{ReadOnly: true})
	if !errors.Is(err, format.ErrCorrupt) {
		if srv != nil {
			srv.Unmount()
		}
		t.Fatalf("mount of a root that is a file: %v, want ErrCorrupt", err)
	}
}
