package inband_test

// Inband dedupe driven through the filesystem that hosts it: the tests of
// this package's index, verify and tail code that need a real data writer
// (fsys imports inband, so they live in the external test package, where
// `go test ./pkg/inband`, and so gremlins, runs them).

import (
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/check"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/inband"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

var epoch = time.Unix(1700000000, 0)

func newDedupeFS(t testing.TB, s format.Settings) (*fsys.FS, *device.MemDevice) {
	t.Helper()
	return newFSWith(t, store.CreateParams{FSID: [16]byte{6}, Csum: format.CsumCRC32C, Data: format.ProfileSingle, Settings: s})
}

// newFSWith makes a 1 GiB one-device FS with p's FSID, sums, data
// profile and settings (16 KiB nodes, 4 KiB sectors, dup metadata).
func newFSWith(t testing.TB, p store.CreateParams) (*fsys.FS, *device.MemDevice) {
	t.Helper()
	d := device.NewMemDevice("m", 1<<30)
	return newFSOn(t, d, p, fsys.Options{}), d
}

// newFSOn is newFSWith on device d, with opt (its Now set to epoch).
func newFSOn(t testing.TB, d device.Device, p store.CreateParams, opt fsys.Options) *fsys.FS {
	t.Helper()
	p.NodeSize, p.SectorSize, p.Metadata = 16384, 4096, format.ProfileDup
	p.Devices = []store.NewDevice{{Dev: d, Path: "m"}}
	st, tx, err := store.CreateTx(p)
	if err != nil {
		t.Fatal(err)
	}
	opt.Now = func() time.Time { return epoch }
	f, err := fsys.New(st, opt)
	if err != nil {
		t.Fatal(err)
	}
	f.Adopt(tx)
	if err := f.InitRoot(fsys.Attr{Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	return f
}

// reopen opens d again as after a crash: only what was flushed survives.
func reopen(t testing.TB, d *device.MemDevice) *fsys.FS {
	t.Helper()
	d.Crash()
	vol, err := volume.FromDevices([]device.Device{d}, true)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenVolume(vol)
	if err != nil {
		t.Fatal(err)
	}
	f, err := fsys.New(st, fsys.Options{Now: func() time.Time { return epoch }})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func rnd(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func write(t testing.TB, f *fsys.FS, p string, data []byte) *fsys.Inode {
	t.Helper()
	in, err := f.Create(p, fsys.Attr{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.WriteAt(in, data, 0); err != nil {
		t.Fatal(err)
	}
	return in
}

func readAll(t testing.TB, f *fsys.FS, p string) []byte {
	t.Helper()
	in, err := f.Resolve(p, true)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, in.Size)
	if _, err := f.ReadAt(in, b, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return b
}

// physical is the bytes used in data chunks.
func physical(f *fsys.FS) uint64 {
	var n uint64
	for _, bg := range f.Store().BlockGroups() {
		if bg.Chunk.Type == format.ChunkData {
			n += bg.Used
		}
	}
	return n
}

// extent is a file extent item and the file offset it is keyed at.
type extent struct {
	off uint64
	format.FileExtentItem
}

// extents returns the committed file extents of ino that start in
// [start, end), read from the tree with the format package's decoder.
func extents(f *fsys.FS, ino, start, end uint64) ([]extent, error) {
	var out []extent
	from := format.Key{ObjectID: ino, Type: format.FileExtentKey, Offset: start}
	to := format.Key{ObjectID: ino, Type: format.FileExtentKey, Offset: end}
	err := f.Store().Tree(format.FSTree).Scan(from, to, func(it format.Item) (bool, error) {
		e := extent{off: it.Key.Offset}
		err := format.DecodeFileExtentItem(it.Data, &e.FileExtentItem)
		out = append(out, e)
		return err == nil, err
	})
	return out, err
}

// atClean commits and requires fsck (with data sums) to find nothing.
func atClean(t *testing.T, f *fsys.FS) {
	t.Helper()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	rep, err := check.CheckVolume(f.Store().Vol, check.Options{CheckData: true})
	if err != nil || !rep.Clean() {
		t.Fatalf("fsck: %v %v", err, rep.Problems)
	}
}

// collideOn64 makes inband.BlockHash see only a block's first 64 bytes, so any
// two blocks that start alike collide, as crafted xxh3 inputs could.
func collideOn64(t *testing.T) {
	old := inband.BlockHash
	inband.BlockHash = func(algo format.CsumType, p []byte) [format.CsumSize]byte {
		return old(algo, p[:min(len(p), 64)])
	}
	t.Cleanup(func() { inband.BlockHash = old })
}

// rededupeAll passes a whole file through Rededupe and commits.
func rededupeAll(t *testing.T, f *fsys.FS, in *fsys.Inode, o fsys.RededupeOptions, st *fsys.RededupeStats) {
	t.Helper()
	step := f.Rededupe(in, o, st)
	for more := true; more; {
		var err error
		if more, err = step(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}
