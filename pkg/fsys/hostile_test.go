package fsys

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
	"github.com/ddfs/ddfs/pkg/device"
)

// craft changes items of f's fs tree in a transaction, commits (so every
// node checksum is recomputed: the image is valid but hostile) and
// returns the filesystem reopened from the devices.
func craft(t *testing.T, f *FS, devs []*device.MemDevice, change func(tr *btree.Tree)) *FS {
	t.Helper()
	tr, err := f.tree()
	if err != nil {
		t.Fatal(err)
	}
	change(tr)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	return reopenFS(t, devs)
}

// editExtents rewrites every file extent item of ino.
func editExtents(t *testing.T, tr *btree.Tree, ino uint64, edit func(x *format.FileExtentItem)) {
	t.Helper()
	var items []format.Item
	err := tr.Scan(extentKey(ino, 0), format.Key{ObjectID: ino, Type: format.FileExtentKey + 1}, func(it format.Item) (bool, error) {
		items = append(items, format.Item{Key: it.Key, Data: bytes.Clone(it.Data)})
		return true, nil
	})
	if err != nil || len(items) == 0 {
		t.Fatalf("extents of %d: %d, %v", ino, len(items), err)
	}
	for _, it := range items {
		x, err := format.UnmarshalFileExtentItem(it.Data)
		if err != nil {
			t.Fatal(err)
		}
		edit(x)
		if err := tr.Put(it.Key, format.MarshalFileExtentItem(x)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCraftedExtentSizes: a compressed extent whose disk_len or ram_bytes
// is huge (checksums valid) reads as corruption, where it used to panic
// (makeslice: len out of range) in cat.
func TestCraftedExtentSizes(t *testing.T) {
	text := bytes.Repeat([]byte("a compressible line of text. "), 20000)
	for name, edit := range map[string]func(x *format.FileExtentItem){
		"disk_len 2^40":   func(x *format.FileExtentItem) { x.DiskLen = 1 << 40 },
		"ram_bytes 2^62":  func(x *format.FileExtentItem) { x.RAMBytes, x.Offset = 1<<62, 1<<61 },
		"ram_bytes 2^63":  func(x *format.FileExtentItem) { x.RAMBytes = 1 << 63 },
		"disk_len 8M+4K":  func(x *format.FileExtentItem) { x.DiskLen = format.MaxExtentBytes + 4096 },
		"ram_bytes 8M+1":  func(x *format.FileExtentItem) { x.RAMBytes = format.MaxExtentBytes + 1 },
		"ram_bytes short": func(x *format.FileExtentItem) { x.RAMBytes, x.NumBytes, x.Offset = 4096, 4096, 0 },
	} {
		t.Run(name, func(t *testing.T) {
			f, d := newDedupeFS(t, format.Settings{Compression: format.CompressZstd, CompressionLevel: 1})
			in := write(t, f, "/t", text)
			g := craft(t, f, []*device.MemDevice{d}, func(tr *btree.Tree) {
				editExtents(t, tr, in.Ino, func(x *format.FileExtentItem) {
					if x.Compression == format.CompressNone {
						t.Fatal("extent not compressed")
					}
					edit(x)
				})
			})
			gin, err := g.Resolve("/t", false)
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 1<<20)
			_, err = g.ReadAt(gin, buf, 0)
			if !errors.Is(err, format.ErrCorrupt) || err == io.EOF {
				t.Fatalf("read: %v, want ErrCorrupt", err)
			}
		})
	}
}

// openFaulty opens devs through fault-injecting wrappers whose reads of
// the fs tree leaves that fail(leaf) picks fail with EIO.
func openFaulty(t *testing.T, devs []*device.MemDevice, fail func(leaf *format.Node) bool) *FS {
	t.Helper()
	f := reopenFS(t, devs)
	var leaves []uint64
	err := f.rtree(format.FSTree).WalkNodes(func(n *format.Node) error {
		if n.IsLeaf() && fail(n) {
			leaves = append(leaves, n.Logical)
		}
		return nil
	})
	if err != nil || len(leaves) == 0 {
		t.Fatalf("no leaf to fail: %v", err)
	}
	type span struct{ dev, start, end uint64 }
	var bad []span
	for _, l := range leaves {
		targets, err := f.st.Vol.Locate(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, tg := range targets {
			bad = append(bad, span{tg.DevID, tg.Physical, tg.Physical + uint64(f.st.Super().NodeSize)})
		}
	}
	var ds []device.Device
	for i, d := range devs {
		devid := uint64(i + 1)
		ds = append(ds, device.NewFaulty(d, func(op device.OpKind, off, n int64, _ int) error {
			for _, s := range bad {
				if op == device.OpRead && s.dev == devid && uint64(off) < s.end && uint64(off+n) > s.start {
					return syscall.EIO
				}
			}
			return nil
		}))
	}
	return openDevices(t, ds)
}

// TestUnreadableIsNotAbsent: when the leaves holding a directory's
// entries are unreadable, every lookup, removal and creation of a name
// there fails with EIO, never with ENOENT, so no tool reports "No such
// file" (or creates over a name) it could not read.
func TestUnreadableIsNotAbsent(t *testing.T) {
	f, devs := newTestFS(t, 256<<20, 1)
	d, err := f.Mkdir("/d", Attr{Mode: 0o755})
	if err != nil {
		t.Fatal(err)
	}
	name := func(i int) string { return fmt.Sprintf("file-with-a-longish-name-%04d", i) }
	for i := 0; i < 600; i++ {
		write(t, f, "/d/"+name(i), []byte("x"))
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	// Fail the leaves that hold only DIR_ITEMs of /d: the inodes of / and
	// /d stay readable, so each lookup reaches the entry it looks for.
	g := openFaulty(t, devs, func(n *format.Node) bool {
		for _, it := range n.Items {
			if it.Key.ObjectID != d.Ino || it.Key.Type != format.DirItemKey {
				return false
			}
		}
		return true
	})
	// Names whose DIR_ITEM falls into a failing leaf (a read error on the
	// way to it): an existing one and an absent one.
	failing := func(n string) bool {
		_, err := g.rtree(format.FSTree).Get(dirItemKey(d.Ino, n))
		return errors.Is(err, syscall.EIO)
	}
	var names []string
	for i := 0; i < 600 && len(names) < 1; i++ {
		if failing(name(i)) {
			names = append(names, name(i))
		}
	}
	for i := 0; i < 1000 && len(names) < 2; i++ {
		if n := fmt.Sprintf("absent-%d", i); failing(n) {
			names = append(names, n)
		}
	}
	if len(names) < 2 {
		t.Fatalf("no names in the failing leaves: %v", names)
	}
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, syscall.EIO) || errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %v, want EIO and not ErrNotExist", what, err)
		}
	}
	for _, n := range names {
		_, err := g.Resolve("/d/"+n, true)
		check("resolve "+n, err)
		_, err = fs.Stat(g.IOFS(), "d/"+n)
		check("io/fs stat "+n, err)
		check("remove "+n, g.Remove("/d/"+n))
		_, err = g.Create("/d/"+n, Attr{Mode: 0o644})
		check("create "+n, err)
	}
}

// TestHugeSparseReads: a file of size 2^62 with 6 bytes of data costs
// O(extents) to list (DataRanges, ReadData), and io/fs ReadFile refuses
// it with EFBIG instead of allocating by the size (makeslice panic).
func TestHugeSparseReads(t *testing.T) {
	f, _ := newTestFS(t, 256<<20, 1)
	in := write(t, f, "/huge", []byte("abc"))
	if err := f.WriteAt(in, []byte("xyz"), 1<<40); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(in, 1<<62); err != nil {
		t.Fatal(err)
	}
	rs, err := f.DataRanges(in)
	if err != nil || len(rs) != 2 || rs[0] != (Range{0, 3}) || rs[1].Off != 1<<40 || rs[1].Len != 3 {
		t.Fatalf("data ranges %v, %v", rs, err)
	}
	var got []byte
	err = f.ReadData(in, make([]byte, 1<<20), func(p []byte, off uint64) error { got = append(got, p...); return nil })
	if err != nil || string(got) != "abcxyz" {
		t.Fatalf("ReadData: %q %v", got, err)
	}
	if _, err := fs.ReadFile(f.IOFS(), "huge"); !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("io/fs ReadFile: %v, want EFBIG", err)
	}
	// cat streams the holes as zeros: the first chunks come at once.
	n := 0
	stop := errors.New("enough")
	err = f.ReadChunks(in, make([]byte, 1<<20), func(p []byte, off uint64) error {
		if n++; n == 64 {
			return stop
		}
		return nil
	})
	if err != stop {
		t.Fatalf("ReadChunks: %v", err)
	}
}

// TestWritersKeepLimits: writers refuse what readers would reject as
// corruption (FORMAT.md limits): a file past MaxFileSize, inline data
// past MaxInlineData.
func TestWritersKeepLimits(t *testing.T) {
	f, devs := newTestFS(t, 256<<20, 1)
	in := write(t, f, "/f", []byte("x"))
	if err := f.WriteAt(in, []byte("y"), format.MaxFileSize); !errors.Is(err, syscall.EFBIG) {
		t.Errorf("write past the largest file size: %v, want EFBIG", err)
	}
	if err := f.WriteAt(in, []byte("y"), format.MaxFileSize-1); err != nil {
		t.Errorf("write of the last byte: %v", err)
	}
	if err := f.Truncate(in, format.MaxFileSize+1); !errors.Is(err, syscall.EFBIG) {
		t.Errorf("truncate past the largest file size: %v, want EFBIG", err)
	}
	f.opt.MaxInline = 1 << 20
	g, err := New(f.st, f.opt)
	if err != nil {
		t.Fatal(err)
	}
	if g.opt.MaxInline > format.MaxInlineData {
		t.Errorf("MaxInline %d passes the format's %d", g.opt.MaxInline, format.MaxInlineData)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	h := reopenFS(t, devs)
	hin, err := h.Resolve("/f", false)
	if err != nil || hin.Size != format.MaxFileSize {
		t.Fatalf("reopened: %+v %v", hin, err)
	}
}

// TestRmdirLooksForEntries: a directory whose size says 0 but which has
// an entry (checksums valid) is not empty: rmdir and a rename over it
// fail with ENOTEMPTY and the child stays reachable (FORMAT.md §6.2: no
// reader or writer decides by a directory's size).
func TestRmdirLooksForEntries(t *testing.T) {
	f, devs := newTestFS(t, 256<<20, 1)
	d, err := f.Mkdir("/d", Attr{Mode: 0o755})
	if err != nil {
		t.Fatal(err)
	}
	write(t, f, "/d/f", []byte("kept"))
	if _, err := f.Mkdir("/e", Attr{Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	g := craft(t, f, devs, func(tr *btree.Tree) {
		in, err := f.Inode(d.Ino)
		if err != nil {
			t.Fatal(err)
		}
		in.Size = 0
		if err := tr.Put(inodeKey(d.Ino), format.MarshalInodeItem(&in.InodeItem)); err != nil {
			t.Fatal(err)
		}
	})
	if err := g.Remove("/d"); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Errorf("rmdir: %v, want ENOTEMPTY", err)
	}
	if err := g.Rename("/e", "/d"); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Errorf("rename over it: %v, want ENOTEMPTY", err)
	}
	if _, err := g.Resolve("/d/f", false); err != nil {
		t.Errorf("child: %v", err)
	}
}

// TestReadlinkRefusesNUL: a symlink target holding a NUL byte, a hole or
// nothing (checksums valid; fsck says SYMLINK_TARGET) reads as
// corruption, where it used to be served as a shorter or different path;
// writers refuse a target with NUL.
func TestReadlinkRefusesNUL(t *testing.T) {
	f, devs := newTestFS(t, 256<<20, 1)
	if _, err := f.Symlink("a\x00b", "/nul", Attr{}); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("symlink with NUL: %v, want EINVAL", err)
	}
	if _, err := f.SymlinkAt(format.RootDirIno, "nul", "a\x00b", Attr{}); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("symlinkat with NUL: %v, want EINVAL", err)
	}
	links := map[string]func(tr *btree.Tree, in *Inode){
		"/nul": func(tr *btree.Tree, in *Inode) {
			editExtents(t, tr, in.Ino, func(x *format.FileExtentItem) { x.Inline[1] = 0 })
		},
		"/hole": func(tr *btree.Tree, in *Inode) {
			in.Size += 3
			if err := tr.Put(inodeKey(in.Ino), format.MarshalInodeItem(&in.InodeItem)); err != nil {
				t.Fatal(err)
			}
		},
		"/empty": func(tr *btree.Tree, in *Inode) {
			if err := tr.Delete(extentKey(in.Ino, 0)); err != nil {
				t.Fatal(err)
			}
			in.Size = 0
			if err := tr.Put(inodeKey(in.Ino), format.MarshalInodeItem(&in.InodeItem)); err != nil {
				t.Fatal(err)
			}
		},
	}
	for p := range links {
		if _, err := f.Symlink("abc", p, Attr{}); err != nil {
			t.Fatal(err)
		}
	}
	g := craft(t, f, devs, func(tr *btree.Tree) {
		for p, change := range links {
			in, err := f.Resolve(p, false)
			if err != nil {
				t.Fatal(err)
			}
			change(tr, in)
		}
	})
	for p := range links {
		if target, err := g.Readlink(p); !errors.Is(err, format.ErrCorrupt) {
			t.Errorf("readlink %s: %q, %v, want ErrCorrupt", p, target, err)
		}
	}
}

// TestRemoveRefusesTypeMismatch: an entry whose DIR_ITEM and DIR_INDEX
// say regular file but which names a directory (checksums valid; fsck
// flags it) is refused by unlink and rename as corruption, where unlink
// used to drop the name and the directory's parent link count with it.
func TestRemoveRefusesTypeMismatch(t *testing.T) {
	f, devs := newTestFS(t, 256<<20, 1)
	a, err := f.Mkdir("/a", Attr{Mode: 0o755})
	if err != nil {
		t.Fatal(err)
	}
	write(t, f, "/a/f", []byte("kept"))
	b, err := f.Mkdir("/b", Attr{Mode: 0o755})
	if err != nil {
		t.Fatal(err)
	}
	e := format.MarshalDirEntry(format.DirEntry{Ino: a.Ino, Type: format.FileTypeRegular, Name: "x"})
	g := craft(t, f, devs, func(tr *btree.Tree) {
		for _, k := range []format.Key{
			{ObjectID: b.Ino, Type: format.DirItemKey, Offset: format.NameHash([]byte("x"))},
			{ObjectID: b.Ino, Type: format.DirIndexKey, Offset: 1000},
		} {
			if err := tr.Insert(k, e); err != nil {
				t.Fatal(err)
			}
		}
	})
	root, err := g.Inode(format.RootDirIno)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Remove("/b/x"); !errors.Is(err, format.ErrCorrupt) {
		t.Errorf("unlink: %v, want corruption", err)
	}
	if err := g.UnlinkAt(b.Ino, "x", false); !errors.Is(err, format.ErrCorrupt) {
		t.Errorf("unlinkat: %v, want corruption", err)
	}
	if err := g.Rename("/b/x", "/y"); !errors.Is(err, format.ErrCorrupt) {
		t.Errorf("rename: %v, want corruption", err)
	}
	if r, err := g.Inode(format.RootDirIno); err != nil || r.Nlink != root.Nlink {
		t.Errorf("root links %d -> %v, %v", root.Nlink, r, err)
	}
	if _, err := g.Resolve("/a/f", false); err != nil {
		t.Errorf("/a/f: %v", err)
	}
}

// TestReadAtFillsEveryByte: ReadAt into a buffer full of 0xa5 returns a
// file's bytes, holes as zeros (before, between and after extents, a
// punched middle, a tail past the last extent), for random ranges: it
// zeroes only what no extent fills, and must miss nothing.
func TestReadAtFillsEveryByte(t *testing.T) {
	f, devs := newTestFS(t, 64<<20, 1)
	in, err := f.Create("/sparse", Attr{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	const size = 300 << 10
	model := make([]byte, size)
	for _, w := range []struct{ off, n int }{{4096, 5000}, {40 << 10, 70 << 10}, {200 << 10, 3}, {210 << 10, 8192}} {
		d := rnd(uint64(w.off), w.n)
		if err := f.WriteAt(in, d, uint64(w.off)); err != nil {
			t.Fatal(err)
		}
		copy(model[w.off:], d)
	}
	if err := f.PunchHole(in, 60<<10, 12<<10); err != nil {
		t.Fatal(err)
	}
	clear(model[60<<10 : 72<<10])
	if err := f.Truncate(in, size); err != nil {
		t.Fatal(err)
	}
	small := write(t, f, "/small", []byte("inline bytes"))
	// An explicit hole item in the gap after the first extent (fsck
	// accepts them; a reader takes it as an extent that reads zeros).
	f = craft(t, f, devs, func(tr *btree.Tree) {
		hole := &format.FileExtentItem{Generation: 1, Type: format.FileExtentRegular, NumBytes: 8 << 10, RAMBytes: 8 << 10}
		if err := tr.Insert(extentKey(in.Ino, 16<<10), format.MarshalFileExtentItem(hole)); err != nil {
			t.Fatal(err)
		}
		// An inline extent shorter than its file (the rest reads as a
		// hole: fsck's INLINE_SIZE).
		small.Size = 20
		if err := tr.Put(inodeKey(small.Ino), format.MarshalInodeItem(&small.InodeItem)); err != nil {
			t.Fatal(err)
		}
	})
	for _, tc := range []struct {
		in    *Inode
		model []byte
	}{{in, model}, {small, []byte("inline bytes\x00\x00\x00\x00\x00\x00\x00\x00")}} {
		rng := rand.New(rand.NewPCG(3, uint64(len(tc.model))))
		for i := 0; i < 300; i++ {
			off := rng.IntN(len(tc.model))
			n := 1 + rng.IntN(len(tc.model)-off+100)
			buf := bytes.Repeat([]byte{0xa5}, n)
			got, err := f.ReadAt(tc.in, buf, uint64(off))
			want := min(n, len(tc.model)-off)
			if got != want || (err != nil && err != io.EOF) || !bytes.Equal(buf[:got], tc.model[off:off+want]) {
				t.Fatalf("inode %d ReadAt(%d, +%d): %d bytes, %v; differs from the model", tc.in.Ino, off, n, got, err)
			}
		}
	}
}
