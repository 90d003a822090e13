package dedupe

import (
	"errors"
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
	e := format.MarshalDirEntry(format.DirEntry{Ino: a.Ino, Type: format.FileTypeRegular, Name: "up"})
	inTx(t, d, func(tx *store.Txn) {
		ft := tx.Tree(format.FSTree)
		for _, k := range []format.Key{
			{ObjectID: b.Ino, Type: format.DirItemKey, Offset: format.NameHash([]byte("up"))},
			{ObjectID: b.Ino, Type: format.DirIndexKey, Offset: 1000},
		} {
			if err := ft.Insert(k, e); err != nil {
				t.Fatal(err)
			}
		}
	})
	return d
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
