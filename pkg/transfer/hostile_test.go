package transfer

import (
	"archive/tar"
	"bytes"
	"cmp"
	"errors"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
	"github.com/ddfs/ddfs/pkg/check"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// walkBase is an image with /a/{f1,f2}, /b/g and a symlink /s -> ../../..
func walkBase(t *testing.T) *device.MemDevice {
	t.Helper()
	d := device.NewMemDevice("m", 256<<20)
	st, tx, err := store.CreateTx(store.CreateParams{FSID: [16]byte{13}, Csum: format.CsumCRC32C, NodeSize: 16384, SectorSize: 4096,
		Data: format.ProfileSingle, Metadata: format.ProfileDup, Devices: []store.NewDevice{{Dev: d, Path: "m"}}})
	must(t, err)
	f, err := fsys.New(st, fsys.Options{Now: func() time.Time { return time.Unix(1700000000, 0) }})
	must(t, err)
	f.Adopt(tx)
	must(t, f.InitRoot(fsys.Attr{Mode: 0o755}))
	for _, p := range []string{"/a", "/b"} {
		_, err := f.Mkdir(p, fsys.Attr{Mode: 0o755})
		must(t, err)
	}
	for _, p := range []string{"/a/f1", "/a/f2", "/b/g"} {
		in, err := f.Create(p, fsys.Attr{Mode: 0o644})
		must(t, err)
		must(t, f.WriteAt(in, []byte("contents of "+p), 0))
	}
	_, err = f.Symlink("../../..", "/s", fsys.Attr{})
	must(t, err)
	must(t, f.Sync())
	return d
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// crafter edits items of a copy of an image in one transaction; the
// commit recomputes every checksum, so the damage is valid on disk.
type crafter struct {
	t   *testing.T
	dev *device.MemDevice
	f   *fsys.FS // the committed state, for looking things up
	tr  *btree.Tree
	tx  *store.Txn
}

func newCrafter(t *testing.T, base *device.MemDevice) *crafter {
	c := &crafter{t: t, dev: base.Snapshot()}
	vol, err := volume.FromDevices([]device.Device{c.dev}, true)
	must(t, err)
	st, err := store.OpenVolume(vol)
	must(t, err)
	c.f, err = fsys.New(st, fsys.Options{})
	must(t, err)
	c.tx, err = st.Begin()
	must(t, err)
	c.tr = c.tx.Tree(format.FSTree)
	return c
}

func (c *crafter) ino(p string) uint64 {
	in, err := c.f.Resolve(p, false)
	must(c.t, err)
	return in.Ino
}

// entry writes a DIR_ITEM and a DIR_INDEX (at index idx) for name in dir.
func (c *crafter) entry(dir uint64, idx uint64, e format.DirEntry, item, index bool) {
	if item {
		must(c.t, c.tr.Put(format.Key{ObjectID: dir, Type: format.DirItemKey, Offset: format.NameHash([]byte(e.Name))}, format.MarshalDirEntries([]format.DirEntry{e})))
	}
	if index {
		must(c.t, c.tr.Put(format.Key{ObjectID: dir, Type: format.DirIndexKey, Offset: idx}, format.MarshalDirEntry(e)))
	}
}

// index finds the DIR_INDEX of name in dir.
func (c *crafter) index(dir uint64, name string) uint64 {
	var idx uint64
	must(c.t, c.tr.Scan(format.Key{ObjectID: dir, Type: format.DirIndexKey}, format.Key{ObjectID: dir, Type: format.DirIndexKey + 1}, func(it format.Item) (bool, error) {
		e, err := format.UnmarshalDirEntry(it.Data)
		if err == nil && e.Name == name {
			idx = it.Key.Offset
		}
		return idx == 0, nil
	}))
	if idx == 0 {
		c.t.Fatalf("no entry %q", name)
	}
	return idx
}

// done commits and opens the crafted image.
func (c *crafter) done() *fsys.FS {
	must(c.t, c.tx.Commit())
	vol, err := volume.FromDevices([]device.Device{c.dev}, true)
	must(c.t, err)
	rep, err := check.CheckVolume(vol)
	must(c.t, err)
	namespace := false
	for _, p := range rep.Problems {
		namespace = namespace || p.Pass == check.PassFS
	}
	if !namespace {
		c.t.Errorf("fsck finds no namespace problem in the crafted image: %v", rep.Problems)
	}
	st, err := store.OpenVolume(vol)
	must(c.t, err)
	f, err := fsys.New(st, fsys.Options{})
	must(c.t, err)
	return f
}

// TestWalkersRefuseWhatFsckFlags: each crafted namespace makes cp -r out,
// tar-out and copies inside the image fail with ErrCorrupt naming the bad
// entry's path, while every other file is still copied; fsck flags each.
func TestWalkersRefuseWhatFsckFlags(t *testing.T) {
	const root = format.RootDirIno
	base := walkBase(t)
	cases := []struct {
		name   string
		bad    string   // image path of the refused entry
		absent []string // paths that must not be copied
		craft  func(c *crafter)
	}{
		{"directory reachable from two entries", "/b/alias", []string{"b/alias", "b/alias/f1"}, func(c *crafter) {
			c.entry(c.ino("/b"), 100, format.DirEntry{Ino: c.ino("/a"), Type: format.FileTypeDir, Name: "alias"}, true, true)
		}},
		{"hard-linked directory", "/a", []string{"a", "a2", "a/f1", "a2/f1"}, func(c *crafter) {
			a := c.ino("/a")
			c.entry(root, 100, format.DirEntry{Ino: a, Type: format.FileTypeDir, Name: "a2"}, true, true)
			refs := []format.InodeRef{{Index: c.index(root, "a"), Name: "a"}, {Index: 100, Name: "a2"}}
			must(c.t, c.tr.Put(format.Key{ObjectID: a, Type: format.InodeRefKey, Offset: root}, format.MarshalInodeRefs(refs)))
		}},
		{"DIR_INDEX disagrees with DIR_ITEM", "/b/g", []string{"b/g"}, func(c *crafter) {
			b := c.ino("/b")
			c.entry(b, c.index(b, "g"), format.DirEntry{Ino: c.ino("/a/f1"), Type: format.FileTypeRegular, Name: "g"}, false, true)
		}},
		{"entry type disagrees with the inode", "/b/g", []string{"b/g"}, func(c *crafter) {
			b := c.ino("/b")
			c.entry(b, c.index(b, "g"), format.DirEntry{Ino: c.ino("/b/g"), Type: format.FileTypeSymlink, Name: "g"}, true, true)
		}},
		{"name listed twice, as a symlink and a directory", "/s", []string{"s/f1"}, func(c *crafter) {
			// A second DIR_INDEX "s" leading to /a: tar-out used to emit
			// "s -> ../../.." and then "s/f1", which extractors write
			// through the symlink.
			c.entry(root, 100, format.DirEntry{Ino: c.ino("/a"), Type: format.FileTypeDir, Name: "s"}, false, true)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCrafter(t, base)
			tc.craft(c)
			f := c.done()
			wantBad := func(what string, err error) {
				t.Helper()
				var pe *fs.PathError
				if !errors.Is(err, format.ErrCorrupt) || !errors.As(err, &pe) || pe.Path != tc.bad {
					t.Errorf("%s: %v, want ErrCorrupt at %s", what, err, tc.bad)
				}
			}
			// A path through the refused entry (if its DIR_ITEM leads there).
			if tc.name != "DIR_INDEX disagrees with DIR_ITEM" && tc.bad != "/s" {
				if _, err := f.Resolve(tc.bad+"/f1", false); !errors.Is(err, format.ErrCorrupt) {
					t.Errorf("resolve through %s: %v, want ErrCorrupt", tc.bad, err)
				}
			}
			// cp -a out
			out := t.TempDir()
			wantBad("copy out", CopyOut(f, "/", out, Options{Recursive: true, Archive: true}))
			var copied []string
			filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
				if rel, _ := filepath.Rel(out, p); rel != "." {
					copied = append(copied, rel)
				}
				return nil
			})
			checkCopied(t, "copy out", copied, tc.absent)
			if t.Failed() {
				return
			}
			// tar-out
			tb, err := tarBoth(t, f, "/") // and the same with a pipe
			wantBad("tar-out", err)
			archive := bytes.NewBuffer(tb)
			checkCopied(t, "tar-out", tarNames(t, archive), tc.absent)
			// the io/fs view: the walk goes on past the refused entry
			var walked []string
			var walkErr error
			fs.WalkDir(f.IOFS(), ".", func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					walkErr = cmp.Or(walkErr, err)
					return nil
				}
				if _, err := d.Info(); err != nil {
					walkErr = cmp.Or(walkErr, err)
					return nil
				}
				if p != "." {
					walked = append(walked, p)
				}
				return nil
			})
			if !errors.Is(walkErr, format.ErrCorrupt) {
				t.Errorf("io/fs walk: %v, want ErrCorrupt", walkErr)
			}
			checkCopied(t, "io/fs walk", walked, tc.absent)
			// cp -r inside the image (of /b: copying / would copy the copy)
			if strings.HasPrefix(tc.bad, "/b/") {
				wantBad("copy within", CopyWithin(f, "/b", "/copy", Options{Recursive: true, Archive: true}))
				if _, err := f.Resolve("/copy/"+path.Base(tc.bad), false); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("copy within: refused entry copied: %v", err)
				}
			}
		})
	}
}

// checkCopied requires every path of the base image among names except
// the refused ones (absent, and what lies below them).
func checkCopied(t *testing.T, what string, names, absent []string) {
	t.Helper()
	has := map[string]bool{}
	for _, n := range names {
		has[n] = true
	}
	refused := func(n string) bool {
		for _, a := range absent {
			if n == a || strings.HasPrefix(n, a+"/") {
				return true
			}
		}
		return false
	}
	for _, n := range absent {
		if has[n] {
			t.Errorf("%s: refused %s copied: %v", what, n, names)
		}
	}
	for _, n := range []string{"a", "a/f1", "a/f2", "b", "b/g", "s"} {
		if !refused(n) && !has[n] {
			t.Errorf("%s: good entry %s not copied: %v", what, n, names)
		}
	}
}

// TestTarOutNeverWritesBelowASymlink: even if an entry slipped past the
// namespace checks, tar-out does not emit a name below a symlink it
// emitted earlier.
func TestTarOutNeverWritesBelowASymlink(t *testing.T) {
	f := newFS(t, 256<<20)
	_, err := f.Symlink("../../..", "/x", fsys.Attr{})
	must(t, err)
	_, err = f.Mkdir("/d", fsys.Attr{Mode: 0o755})
	must(t, err)
	in, err := f.Create("/d/y", fsys.Attr{Mode: 0o644})
	must(t, err)
	must(t, f.Sync())
	var archive bytes.Buffer
	tw := &tarWriter{f: f, w: &archive, tw: tar.NewWriter(&archive), links: map[uint64]string{}, buf: make([]byte, bufSize)}
	x, err := f.Resolve("/x", false)
	must(t, err)
	must(t, tw.entry(x, "/x", "x"))
	must(t, tw.entry(in, "/d/y", "x/y")) // as a second "x" directory would
	must(t, tw.tw.Close())
	err = tw.skips.done()
	if !errors.Is(err, format.ErrCorrupt) {
		t.Fatalf("entry below a symlink: %v, want ErrCorrupt", err)
	}
	if names := tarNames(t, &archive); len(names) != 1 || names[0] != "x" {
		t.Fatalf("archive holds %q", names)
	}
}

// tarNames lists the names in an archive, without a directory's "/".
func tarNames(t *testing.T, r io.Reader) []string {
	t.Helper()
	var names []string
	tarEach(t, r, func(h *tar.Header, _ io.Reader) {
		names = append(names, strings.TrimSuffix(h.Name, "/"))
	})
	return names
}

// tarEach calls fn with each header of an archive and its data.
func tarEach(t *testing.T, r io.Reader, fn func(h *tar.Header, data io.Reader)) {
	t.Helper()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		must(t, err)
		fn(h, tr)
	}
}

// TestIOFSReadDirFileGoesOn: fs.ReadDirFile on a directory with a refused
// entry hands out the good entries, then the ErrCorrupt in place of io.EOF.
func TestIOFSReadDirFileGoesOn(t *testing.T) {
	c := newCrafter(t, walkBase(t))
	c.entry(c.ino("/b"), 100, format.DirEntry{Ino: c.ino("/a"), Type: format.FileTypeDir, Name: "alias"}, true, true)
	f := c.done()
	d, err := f.IOFS().Open("b")
	must(t, err)
	defer d.Close()
	var names []string
	for {
		ents, err := d.(fs.ReadDirFile).ReadDir(1)
		for _, e := range ents {
			names = append(names, e.Name())
		}
		if err != nil {
			if !errors.Is(err, format.ErrCorrupt) || len(names) != 1 || names[0] != "g" {
				t.Fatalf("ReadDir: %v after %v, want ErrCorrupt after [g]", err, names)
			}
			return
		}
	}
}
