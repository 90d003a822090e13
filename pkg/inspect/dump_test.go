package inspect

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// raid1Image makes two devices with a few files over several commits.
func raid1Image(t *testing.T) ([]*device.MemDevice, *store.FS) {
	t.Helper()
	p := store.CreateParams{FSID: [16]byte{4}, Csum: format.CsumCRC32C, NodeSize: 4096, SectorSize: 4096, Data: format.ProfileRaid1, Metadata: format.ProfileRaid1}
	var devs []*device.MemDevice
	for i := 0; i < 2; i++ {
		d := device.NewMemDevice(fmt.Sprintf("m%d", i), 128<<20)
		devs = append(devs, d)
		p.Devices = append(p.Devices, store.NewDevice{Dev: d, Path: d.Name()})
	}
	st, tx, err := store.CreateTx(p)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := fsys.New(st, fsys.Options{Now: func() time.Time { return time.Unix(1700000000, 0) }})
	f.Adopt(tx)
	must(t, f.InitRoot(fsys.Attr{Mode: 0o755}))
	_, err = f.Mkdir("/d", fsys.Attr{Mode: 0o755})
	must(t, err)
	for i := 0; i < 120; i++ {
		in, err := f.Create(fmt.Sprintf("/d/f%03d", i), fsys.Attr{Mode: 0o644})
		must(t, err)
		data := make([]byte, 5000+i)
		for j := range data {
			data[j] = byte(i + j) // not zeros, which become holes
		}
		must(t, f.WriteAt(in, data, 0))
		must(t, f.SetXattr(in, "user.n", []byte{byte(i)}))
		if i == 60 {
			must(t, f.Sync()) // a backup root set
		}
	}
	must(t, f.Sync())
	var ds []device.Device
	for _, d := range devs {
		ds = append(ds, d)
	}
	vol, err := volume.FromDevices(ds, false)
	must(t, err)
	fs, err := store.OpenVolume(vol)
	must(t, err)
	return devs, fs
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestLocate: a path leads to its inode, whose extent's copies are the
// two raid1 stripes, in the volume's copy order.
func TestLocate(t *testing.T) {
	_, fs := raid1Image(t)
	tr := fs.Tree(format.FSTree)
	ino, err := Lookup(tr, "/d/f007")
	must(t, err)
	if _, err := Lookup(tr, "/d/nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing name: %v", err)
	}
	d, err := Inode(fs, ino)
	must(t, err)
	if d.Item.Size != 5007 || len(d.Names) != 1 || d.Names[0].Name != "f007" || len(d.Xattrs) != 1 || len(d.Extents) != 1 {
		t.Fatalf("inode %+v", d)
	}
	x := d.Extents[0]
	targets, err := fs.Vol.Locate(x.Item.DiskLogical)
	must(t, err)
	if len(x.Copies) != 2 || len(targets) != 2 {
		t.Fatalf("copies %+v", x.Copies)
	}
	for i, c := range x.Copies {
		if c.Copy != i || c.DevID != targets[i].DevID || c.Offset != targets[i].Physical {
			t.Fatalf("copy %d: %+v, volume says %+v", i, c, targets[i])
		}
	}
	if _, err := Inode(fs, 999999); !errors.Is(err, ErrNotFound) {
		t.Fatalf("no inode: %v", err)
	}
}

// TestDumpTree: every node of the fs tree once, every item once, and a
// damaged copy's node still dumps from the other copy; --logical dumps
// one node.
func TestDumpTree(t *testing.T) {
	devs, fs := raid1Image(t)
	var nodes, items int
	var leaf uint64
	must(t, DumpTree(fs, format.FSTree, 0, func(n NodeDump) error {
		nodes++
		items += len(n.Items)
		if n.Level == 0 {
			leaf = n.Logical
		}
		if n.Error != "" {
			t.Fatalf("node %d: %s", n.Logical, n.Error)
		}
		return nil
	}))
	want := 0
	must(t, fs.Tree(format.FSTree).Scan(format.Key{}, format.MaxKey, func(format.Item) (bool, error) { want++; return true, nil }))
	if nodes < 3 || items != want {
		t.Fatalf("%d nodes, %d items, the tree has %d", nodes, items, want)
	}
	m, err := Map(fs.Vol, leaf)
	must(t, err)
	b := make([]byte, 1)
	devs[m.Copies[0].DevID-1].ReadAt(b, int64(m.Copies[0].Offset)+100)
	b[0] ^= 1
	devs[m.Copies[0].DevID-1].WriteAt(b, int64(m.Copies[0].Offset)+100)
	var one []NodeDump
	must(t, DumpTree(fs, format.FSTree, leaf, func(n NodeDump) error { one = append(one, n); return nil }))
	if len(one) != 1 || one[0].Logical != leaf || one[0].Error != "" || len(one[0].Items) == 0 {
		t.Fatalf("one node: %+v", one)
	}
	for _, it := range one[0].Items {
		if it.Value == nil || it.Error != "" {
			t.Fatalf("item not decoded: %+v", it)
		}
	}
}

// TestDumpSuper: every copy of every device; a damaged one says why.
func TestDumpSuper(t *testing.T) {
	devs, fs := raid1Image(t)
	b := make([]byte, 1)
	devs[1].ReadAt(b, 65536+40)
	b[0] ^= 1
	devs[1].WriteAt(b, 65536+40)
	copies := DumpSuper(fs.Vol)
	if len(copies) != 4 {
		t.Fatalf("%d copies", len(copies))
	}
	bad := 0
	for _, c := range copies {
		if c.Error != "" {
			bad++
			if c.DevID != 2 || c.Offset != 65536 {
				t.Fatalf("bad copy %+v", c)
			}
		} else if c.Generation != fs.Super().Generation || len(c.Roots) < 3 || len(c.Backups) == 0 {
			t.Fatalf("copy %+v", c)
		}
	}
	if bad != 1 {
		t.Fatalf("%d bad copies", bad)
	}
}
