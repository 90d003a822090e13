package fsys

import (
	"bytes"
	"errors"
	"io"
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
	err := tr.Scan(extentKey(ino, 0), extentKey(ino+1, 0), func(it format.Item) (bool, error) {
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
