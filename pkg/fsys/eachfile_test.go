package fsys

import (
	"errors"
	"slices"
	"testing"

	"github.com/ddfs/ddfs/format"
)

// TestRegularFiles: the whole-image walk lists every regular file once
// (hard links too), in inode order, and no folder or symlink; fn sees
// each with its inode read; an error of fn ends the walk with it.
func TestRegularFiles(t *testing.T) {
	f, _ := newTestFS(t, 256<<20, 1)
	var want []uint64
	for _, p := range []string{"/d", "/d/e"} {
		if _, err := f.Mkdir(p, Attr{Mode: 0o755}); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range []string{"/d/e/z", "/a", "/d/m"} {
		in, err := f.Create(p, Attr{Mode: 0o644})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.WriteAt(in, make([]byte, 1000*(i+1)), 0); err != nil {
			t.Fatal(err)
		}
		want = append(want, in.Ino)
	}
	if err := f.Link("/a", "/d/a2"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Symlink("/a", "/s", Attr{}); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	sizes := map[uint64]uint64{}
	got, err := f.RegularFiles(func(in *Inode) error { sizes[in.Ino] = in.Size; return nil })
	slices.Sort(want)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("RegularFiles = %v, %v; want %v", got, err, want)
	}
	for i, ino := range []uint64{want[0], want[1], want[2]} {
		if sizes[ino] != uint64(1000*(i+1)) {
			t.Errorf("inode %d: fn saw size %d, want %d", ino, sizes[ino], 1000*(i+1))
		}
	}
	stop := errors.New("stop")
	calls := 0
	if _, err := f.RegularFiles(func(*Inode) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("fn's error: %v after %d calls, want stop after 1", err, calls)
	}
}

// TestRegularFilesEntries: an entry typed as a file that names a folder
// or no inode, or typed as a folder that names a file, ends the walk in
// ErrCorrupt, as a walk of the folders would.
func TestRegularFilesEntries(t *testing.T) {
	for name, bad := range map[string]func(d, file uint64) format.DirEntry{
		"file names a folder": func(d, file uint64) format.DirEntry {
			return format.DirEntry{Name: "x", Ino: d, Type: format.FileTypeRegular}
		},
		"file names nothing": func(d, file uint64) format.DirEntry {
			return format.DirEntry{Name: "x", Ino: 99999, Type: format.FileTypeRegular}
		},
		"folder names a file": func(d, file uint64) format.DirEntry {
			return format.DirEntry{Name: "x", Ino: file, Type: format.FileTypeDir}
		},
	} {
		t.Run(name, func(t *testing.T) {
			f, _ := newTestFS(t, 256<<20, 1)
			d, err := f.Mkdir("/d", Attr{Mode: 0o755})
			if err != nil {
				t.Fatal(err)
			}
			in, err := f.Create("/d/f", Attr{Mode: 0o644})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.RegularFiles(func(*Inode) error { return nil }); err == nil {
				t.Fatal("a transaction is running: want an error")
			}
			tr, err := f.tree()
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.Insert(format.Key{ObjectID: d.Ino, Type: format.DirIndexKey, Offset: 1000}, format.MarshalDirEntry(bad(d.Ino, in.Ino))); err != nil {
				t.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
			if _, err := f.RegularFiles(func(*Inode) error { return nil }); !errors.Is(err, format.ErrCorrupt) {
				t.Fatalf("%v, want ErrCorrupt", err)
			}
		})
	}
}
