package check

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// TestDedupeClean: random writes, overwrites and removals with dedupe and
// compression on keep fsck (with --check-data) clean; removing a dedupe
// entry, or an extent's marking, is reported.
func TestDedupeClean(t *testing.T) {
	d := device.NewMemDevice("m", 512<<20)
	st, tx, err := store.CreateTx(store.CreateParams{FSID: [16]byte{11}, Csum: format.CsumCRC32C, NodeSize: 4096, SectorSize: 4096,
		Data: format.ProfileSingle, Metadata: format.ProfileDup, Devices: []store.NewDevice{{Dev: d, Path: "m"}},
		Settings: format.Settings{Dedupe: true, DedupeBlockLog2: 14, Compression: format.CompressZstd, CompressionLevel: 3}})
	if err != nil {
		t.Fatal(err)
	}
	f, _ := fsys.New(st, fsys.Options{Now: func() time.Time { return time.Unix(1700000000, 0) }})
	f.Adopt(tx)
	f.InitRoot(fsys.Attr{Mode: 0o755})
	r := rand.New(rand.NewPCG(4, 4))
	blocks := [][]byte{bytes.Repeat([]byte("abc"), 6000), make([]byte, 16384), bytes.Repeat([]byte{1, 2, 3, 4, 5}, 4000)}
	rb := make([]byte, 16384)
	for i := range rb {
		rb[i] = byte(r.Uint32())
	}
	blocks = append(blocks, rb)
	for i := 0; i < 300; i++ {
		p := fmt.Sprintf("/f%d", r.IntN(8))
		if r.IntN(5) == 0 {
			f.Remove(p)
			continue
		}
		in, err := f.Resolve(p, false)
		if err != nil {
			in, _ = f.Create(p, fsys.Attr{Mode: 0o644})
		}
		if err := f.WriteAt(in, blocks[r.IntN(len(blocks))], uint64(r.IntN(5))*16384); err != nil {
			t.Fatal(err)
		}
		if i%40 == 0 {
			f.Sync()
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	vol, _ := volume.FromDevices([]device.Device{d}, true)
	rep, err := CheckVolume(vol, Options{CheckData: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean() {
		t.Fatalf("problems: %v", rep.Problems)
	}
	// Surgery: drop one dedupe entry.
	st2, err := store.OpenVolume(vol)
	if err != nil {
		t.Fatal(err)
	}
	var victim format.Key
	st2.Tree(format.DedupeTree).Scan(format.Key{}, format.MaxKey, func(it format.Item) (bool, error) { victim = it.Key; return false, nil })
	if victim.Type == 0 {
		t.Fatal("no dedupe entries: test too weak")
	}
	tx2, _ := st2.Begin()
	if err := tx2.Tree(format.DedupeTree).Delete(victim); err != nil {
		t.Fatal(err)
	}
	if err := tx2.Commit(); err != nil {
		t.Fatal(err)
	}
	vol2, _ := volume.FromDevices([]device.Device{d}, false)
	rep, _ = CheckVolume(vol2)
	found := false
	for _, p := range rep.Problems {
		found = found || (p.Code == DedupeEntries && p.Logical == victim.Offset)
	}
	if !found {
		t.Fatalf("dropped entry not reported: %v", rep.Problems)
	}
}

// TestFileExtentDisagrees: a file extent that reads an s2 extent as zstd
// is reported (it would read garbage).
func TestFileExtentDisagrees(t *testing.T) {
	// Two files share the extent; the item of one of them is damaged.
	// Whichever comes first in the walk, the report names the one that
	// reads the extent otherwise (the check compares every item with the
	// extent item, not with the first item seen).
	for _, bad := range []string{"/a", "/b"} {
		d := device.NewMemDevice("m", 256<<20)
		st, tx, err := store.CreateTx(store.CreateParams{FSID: [16]byte{12}, Csum: format.CsumCRC32C, NodeSize: 4096, SectorSize: 4096,
			Data: format.ProfileSingle, Metadata: format.ProfileDup, Devices: []store.NewDevice{{Dev: d, Path: "m"}},
			Settings: format.Settings{Compression: format.CompressS2}})
		if err != nil {
			t.Fatal(err)
		}
		f, _ := fsys.New(st, fsys.Options{})
		f.Adopt(tx)
		f.InitRoot(fsys.Attr{Mode: 0o755})
		a, _ := f.Create("/a", fsys.Attr{Mode: 0o644})
		if err := f.WriteAt(a, bytes.Repeat([]byte("squeeze "), 40000), 0); err != nil {
			t.Fatal(err)
		}
		b, _ := f.Create("/b", fsys.Attr{Mode: 0o644})
		if err := f.CloneData(a, b); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		ino := map[string]uint64{"/a": a.Ino, "/b": b.Ino}[bad]
		tx2, _ := st.Begin()
		k := format.Key{ObjectID: ino, Type: format.FileExtentKey, Offset: 0}
		raw, err := tx2.Tree(format.FSTree).Get(k)
		if err != nil {
			t.Fatal(err)
		}
		x, _ := format.UnmarshalFileExtentItem(raw)
		if x.Compression != format.CompressS2 {
			t.Fatalf("extent not compressed: %+v", x)
		}
		x.Compression = format.CompressZstd // still valid on its own; wrong for this extent
		tx2.Tree(format.FSTree).Put(k, format.MarshalFileExtentItem(x))
		if err := tx2.Commit(); err != nil {
			t.Fatal(err)
		}
		vol, _ := volume.FromDevices([]device.Device{d}, false)
		rep, _ := CheckVolume(vol)
		var got []Problem
		for _, p := range rep.Problems {
			if p.Code == ExtentReadAs && p.Logical == x.DiskLogical {
				got = append(got, p)
			}
		}
		want := fmt.Sprintf("but inode %d extent at 0 reads it differently", ino)
		if len(got) != 1 || !strings.Contains(got[0].Message, want) {
			t.Fatalf("damaged %s: want one EXTENT_READ_AS naming %q, got %v (all: %v)", bad, want, got, rep.Problems)
		}
		for _, p := range rep.Problems {
			if p.Code == ExtentRefs || p.Code == ExtentUnreferenced {
				t.Fatalf("damaged %s: refs wrongly reported: %v", bad, p)
			}
		}
	}
}
