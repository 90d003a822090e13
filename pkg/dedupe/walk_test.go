package dedupe

import (
	"errors"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
)

// loopImage makes /a/b/f and then, in /a/b, an entry "up" whose DIR_ITEM
// and DIR_INDEX both say regular file but name directory /a: a walk that
// follows the inode's own type instead of refusing the disagreement (as
// fsck does) descends into /a again, forever.
func loopImage(t *testing.T) *device.MemDevice {
	t.Helper()
	d := newImage(t, format.Settings{})
	f := openAt(t, d, 0, epoch)
	a, err := f.Mkdir("/a", fsys.Attr{Mode: 0o755})
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.Mkdir("/a/b", fsys.Attr{Mode: 0o755})
	if err != nil {
		t.Fatal(err)
	}
	in, err := f.Create("/a/b/f", fsys.Attr{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.WriteAt(in, make([]byte, testBlock), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	addEntry(t, d, b.Ino, format.DirEntry{Ino: a.Ino, Type: format.FileTypeRegular, Name: "up"})
	return d
}

// addEntry gives directory dir of d a name (DIR_ITEM and DIR_INDEX 1000,
// checksums valid) for e, and nothing else: no INODE_REF, no link count.
func addEntry(t *testing.T, d *device.MemDevice, dir uint64, e format.DirEntry) {
	t.Helper()
	b := format.MarshalDirEntry(e)
	inTx(t, d, func(tx *store.Txn) {
		ft := tx.Tree(format.FSTree)
		for _, k := range []format.Key{
			{ObjectID: dir, Type: format.DirItemKey, Offset: format.NameHash([]byte(e.Name))},
			{ObjectID: dir, Type: format.DirIndexKey, Offset: 1000},
		} {
			if err := ft.Insert(k, b); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestRunRefusesTypeLoop: run and its dry run end with corruption on an
// entry whose type disagrees with its inode's, rather than walking a
// directory loop until memory runs out.
func TestRunRefusesTypeLoop(t *testing.T) {
	d := loopImage(t)
	for _, o := range []RunOptions{{Block: testBlock}, {Block: testBlock, NoPrefilter: true}} {
		f := openImage(t, d, 0)
		done := make(chan error, 1)
		go func() { _, err := Run(f, o); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, format.ErrCorrupt) {
				t.Fatalf("%+v: err %v, want corruption", o, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%+v: run still walking after 20 s (a directory loop)", o)
		}
		f.Close()
	}
}

// TestListFiles: the files under a folder (or the one file named), each
// once however many names it has, in inode order; symlinks and folders
// are not listed.
func TestListFiles(t *testing.T) {
	d := newImage(t, format.Settings{})
	f := openAt(t, d, 0, epoch)
	ino := map[string]uint64{}
	for _, p := range []string{"/b", "/b/sub", "/a"} {
		in, err := f.Mkdir(p, fsys.Attr{Mode: 0o755})
		if err != nil {
			t.Fatal(err)
		}
		ino[p] = in.Ino
	}
	for _, p := range []string{"/b/sub/w", "/a/y", "/a/x"} { // created out of name order
		in, err := f.Create(p, fsys.Attr{Mode: 0o644})
		if err != nil {
			t.Fatal(err)
		}
		ino[p] = in.Ino
	}
	if err := f.Link("/a/x", "/b/z"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Symlink("/a/x", "/b/l", fsys.Attr{}); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string][]uint64{
		"/":        {ino["/b/sub/w"], ino["/a/y"], ino["/a/x"]},
		"/a":       {ino["/a/y"], ino["/a/x"]},
		"/b":       {ino["/b/sub/w"], ino["/a/x"]},
		"/b/sub/w": {ino["/b/sub/w"]},
		"b/":       {ino["/b/sub/w"], ino["/a/x"]},
	} {
		got, err := listFiles(f, dir)
		slices.Sort(want)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("listFiles(%q) = %v, %v; want %v", dir, got, err, want)
		}
	}
	if _, err := listFiles(f, "/nowhere"); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("listFiles of a missing folder: %v", err)
	}
	f.Close()
}

// TestRunMissingInode: a file entry naming an inode that is not there
// is corruption (fsck's ENTRY_DANGLING), not "no such file".
func TestRunMissingInode(t *testing.T) {
	d := newImage(t, format.Settings{})
	addEntry(t, d, format.RootDirIno, format.DirEntry{Ino: 9999, Type: format.FileTypeRegular, Name: "ghost"})
	f := openImage(t, d, 0)
	defer f.Close()
	if _, err := Run(f, RunOptions{Block: testBlock}); !errors.Is(err, format.ErrCorrupt) {
		t.Fatalf("run: %v, want corruption", err)
	}
}
