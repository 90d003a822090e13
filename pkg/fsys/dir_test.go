package fsys

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/ddfs/ddfs/format"
)

// TestDirectoryLoopRefused: a crafted directory entry that leads back to
// an ancestor (or the root) is reported as corruption by ReadDir, so every
// recursive walk stops with an error instead of looping.
func TestDirectoryLoopRefused(t *testing.T) {
	for _, target := range []string{"/a", "/"} {
		t.Run(target, func(t *testing.T) {
			f, _ := newTestFS(t, 256<<20, 1)
			for _, d := range []string{"/a", "/a/b"} {
				if _, err := f.Mkdir(d, Attr{Mode: 0o755}); err != nil {
					t.Fatal(err)
				}
			}
			b, _ := f.Resolve("/a/b", false)
			loop, _ := f.Resolve(target, false)
			tr, err := f.tree()
			if err != nil {
				t.Fatal(err)
			}
			e := format.DirEntry{Name: "loop", Ino: loop.Ino, Type: format.FileTypeDir}
			if err := tr.Insert(format.Key{ObjectID: b.Ino, Type: format.DirIndexKey, Offset: 1000}, format.MarshalDirEntry(e)); err != nil {
				t.Fatal(err)
			}
			if _, err := f.List(b); !errors.Is(err, format.ErrCorrupt) {
				t.Fatalf("listing a directory whose entry loops to %s: %v, want ErrCorrupt", target, err)
			}
			walked := 0
			err = fs.WalkDir(f.IOFS(), ".", func(p string, d fs.DirEntry, err error) error {
				if walked++; walked > 100 {
					t.Fatalf("walk loops: %s", p)
				}
				return err
			})
			if !errors.Is(err, format.ErrCorrupt) {
				t.Fatalf("walk: %v, want ErrCorrupt", err)
			}
			// Legitimate subdirectories still list.
			a, _ := f.Resolve("/a", false)
			if ents, err := f.List(a); err != nil || len(ents) != 1 || ents[0].Name != "b" {
				t.Fatalf("list /a: %v %v", ents, err)
			}
		})
	}
}
