package dedupe

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/check"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

const testBlock = 16 << 10

var epoch = time.Unix(1700000000, 0)

// newImage makes an empty image with settings s and crc32c sums.
func newImage(t testing.TB, s format.Settings) *device.MemDevice {
	return newImageCsum(t, s, format.CsumCRC32C)
}

// newImageCsum makes an empty image with settings s and sums of type c.
func newImageCsum(t testing.TB, s format.Settings, c format.CsumType) *device.MemDevice {
	t.Helper()
	d := device.NewMemDevice("m", 256<<20)
	st, tx, err := store.CreateTx(store.CreateParams{FSID: [16]byte{14}, Csum: c, NodeSize: 16384, SectorSize: 4096,
		Data: format.ProfileSingle, Metadata: format.ProfileDup, Devices: []store.NewDevice{{Dev: d, Path: "m"}}, Settings: s})
	if err != nil {
		t.Fatal(err)
	}
	f, err := fsys.New(st, fsys.Options{Now: func() time.Time { return epoch }})
	if err != nil {
		t.Fatal(err)
	}
	f.Adopt(tx)
	if err := f.InitRoot(fsys.Attr{Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return d
}

// openImage opens d; writes before a run are made at epoch, runs later
// (a run must keep the times).
func openImage(t testing.TB, d *device.MemDevice, batch uint64) *fsys.FS {
	return openAt(t, d, batch, epoch.Add(time.Hour))
}

func openAt(t testing.TB, d *device.MemDevice, batch uint64, now time.Time) *fsys.FS {
	t.Helper()
	f, err := fsys.New(openStore(t, d), fsys.Options{Now: func() time.Time { return now }, BatchBytes: batch})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// openStore opens d for writing.
func openStore(t testing.TB, d *device.MemDevice) *store.FS {
	t.Helper()
	vol, err := volume.FromDevices([]device.Device{d}, true)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenVolume(vol)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// backupSet writes files without dedupe whose 16 KiB blocks repeat: a
// pool of distinct random blocks, files drawn from it (75% repeats), a
// tail shorter than a sector, a hole, a file rewritten in pieces and a
// hard link. It returns the model: path -> contents.
func backupSet(t testing.TB, f *fsys.FS) map[string][]byte {
	rng := rand.New(rand.NewPCG(7, 7))
	pool := make([][]byte, 24)
	for i := range pool {
		pool[i] = make([]byte, testBlock)
		for j := range pool[i] {
			pool[i][j] = byte(rng.Uint32() | 1) // no zero sectors: holes only where placed
		}
	}
	model := map[string][]byte{}
	put := func(p string, data []byte, pieces int) {
		in, err := f.Create(p, fsys.Attr{Mode: 0o644})
		if err != nil {
			t.Fatal(err)
		}
		step := (len(data) + pieces - 1) / pieces
		for off := 0; off < len(data); off += step {
			if err := f.WriteAt(in, data[off:min(off+step, len(data))], uint64(off)); err != nil {
				t.Fatal(err)
			}
		}
		model[p] = data
	}
	for i := range 8 {
		var data []byte
		for range 12 {
			data = append(data, pool[rng.IntN(len(pool))]...)
		}
		put(fmt.Sprintf("/f%d", i), data, 1+i%3)
	}
	put("/tail", append(bytes.Clone(pool[0]), pool[1][:1000]...), 1)
	put("/hole", append(append(bytes.Clone(pool[2]), make([]byte, 2*testBlock)...), pool[3]...), 1)
	put("/odd", append(bytes.Clone(pool[4][:5000]), pool[5]...), 3) // blocks straddle the pool's
	if err := f.Link("/f0", "/f0-link"); err != nil {
		t.Fatal(err)
	}
	model["/f0-link"] = model["/f0"]
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	return model
}

// wantPhysical is the data a perfect dedupe keeps: one sector-rounded
// extent per distinct non-zero 16 KiB block (counted from the model).
func wantPhysical(model map[string][]byte) uint64 {
	seen := map[[32]byte]bool{}
	var n uint64
	for p, data := range model {
		if p == "/f0-link" {
			continue
		}
		for off := 0; off < len(data); off += testBlock {
			b := data[off:min(off+testBlock, len(data))]
			if bytes.Equal(b, make([]byte, len(b))) {
				continue
			}
			if h := sha256.Sum256(b); !seen[h] {
				seen[h] = true
				n += uint64(len(b)+4095) / 4096 * 4096
			}
		}
	}
	return n
}

// verify checks the image: fsck clean with data, and every file equal to
// the model with its times kept.
func verify(t *testing.T, d *device.MemDevice, model map[string][]byte) {
	t.Helper()
	vol, err := volume.FromDevices([]device.Device{d.Snapshot()}, false)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := check.CheckVolume(vol, check.Options{CheckData: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 0 {
		t.Fatalf("fsck: %+v", rep.Problems)
	}
	f := openImage(t, d.Snapshot(), 0)
	for p, data := range model {
		in, err := f.Resolve(p, false)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, in.Size)
		if n, err := f.ReadAt(in, got, 0); n != len(got) && err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) || in.Mtime.Sec != epoch.Unix() {
			t.Fatalf("%s differs after run (size %d want %d, mtime %d)", p, len(got), len(data), in.Mtime.Sec)
		}
	}
}

func physicalBytes(t *testing.T, d *device.MemDevice) (uint64, uint64) {
	t.Helper()
	f := openImage(t, d.Snapshot(), 0)
	st, err := GetStatus(f.Store())
	if err != nil {
		t.Fatal(err)
	}
	return st.PhysicalBytes, st.IndexEntries
}

func TestRunFreesDuplicates(t *testing.T) {
	for _, h := range []format.CsumType{format.CsumBLAKE3, format.CsumXXH3} {
		t.Run(h.String(), func(t *testing.T) { testRunFrees(t, h) })
	}
}

func testRunFrees(t *testing.T, hash format.CsumType) {
	d := newImage(t, format.Settings{})
	model := writeSet(t, d)
	before, _ := physicalBytes(t, d)
	res := runVerifiedHash(t, d, model, hash)
	after, entries := physicalBytes(t, d)
	want := wantPhysical(model)
	if after != want || res.FreedBytes != before-after || res.IndexEntries != entries {
		t.Fatalf("physical %d -> %d (want %d), result %+v, index %d", before, after, want, res, entries)
	}
	if res.ExtentsShared == 0 || entries == 0 {
		t.Fatalf("nothing shared: %+v", res)
	}
	f := openImage(t, d, 0)
	again, err := Run(f, RunOptions{Block: testBlock, Hash: hash})
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if again.FreedBytes != 0 || again.RewrittenBytes != 0 || again.ExtentsShared != 0 {
		t.Fatalf("second run did something: %+v", again)
	}
	verify(t, d, model)
}

// runVerified runs a dedupe of d with 16 KiB blocks and verifies d
// against model afterwards.
func runVerified(t *testing.T, d *device.MemDevice, model map[string][]byte) *RunResult {
	t.Helper()
	return runVerifiedHash(t, d, model, format.CsumBLAKE3)
}

func runVerifiedHash(t *testing.T, d *device.MemDevice, model map[string][]byte, hash format.CsumType) *RunResult {
	t.Helper()
	f := openImage(t, d, 0)
	res, err := Run(f, RunOptions{Block: testBlock, Hash: hash})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	verify(t, d, model)
	return res
}

// TestRunKilled: the durable state at random moments of a run (small
// transactions) is consistent and holds the model; a rerun from it ends
// at the same physical size as an uninterrupted run.
// With blake3 sums, most repeats are shared unread (SumShares).
func TestRunKilled(t *testing.T) {
	for _, c := range []format.CsumType{format.CsumCRC32C, format.CsumBLAKE3} {
		t.Run(c.String(), func(t *testing.T) { runKilled(t, c) })
	}
}

func runKilled(t *testing.T, c format.CsumType) {
	d := newImageCsum(t, format.Settings{}, c)
	model := writeSet(t, d)
	want := wantPhysical(model)
	var kills []*device.MemDevice
	f := openImage(t, d, 64<<10)
	_, err := Run(f, RunOptions{Block: testBlock, Hash: format.CsumSHA256, Progress: func(int64) {
		kills = append(kills, d.Snapshot())
	}})
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if len(kills) < 5 {
		t.Fatalf("only %d kill points", len(kills))
	}
	for _, k := range kills {
		verify(t, k, model)
		f := openImage(t, k, 64<<10)
		if _, err := Run(f, RunOptions{Block: testBlock, Hash: format.CsumSHA256}); err != nil {
			t.Fatal(err)
		}
		f.Close()
		verify(t, k, model)
		if got, _ := physicalBytes(t, k); got != want {
			t.Fatalf("rerun after a kill: physical %d, want %d", got, want)
		}
	}
}

func writeSet(t *testing.T, d *device.MemDevice) map[string][]byte {
	f := openAt(t, d, 0, epoch)
	model := backupSet(t, f)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return model
}

// slowFlush is a device whose flush takes a while: commits then have time
// to give xxh3 entries their strong tails.
type slowFlush struct{ *device.MemDevice }

func (d slowFlush) Flush() error {
	time.Sleep(50 * time.Millisecond)
	return d.MemDevice.Flush()
}

// TestRunTails: under xxh3 with tails on (as dedupe-tool opens images),
// every entry run makes, the blocks it indexes in place included, ends
// with the strong tail of its block, and fsck --check-data (which
// recomputes each tail from the data) is clean.
func TestRunTails(t *testing.T) {
	d := newImage(t, format.Settings{})
	model := writeSet(t, d)
	vol, err := volume.FromDevices([]device.Device{slowFlush{d}}, true)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenVolume(vol)
	if err != nil {
		t.Fatal(err)
	}
	f, err := fsys.New(st, fsys.Options{Now: func() time.Time { return epoch }, StrongTails: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(f, RunOptions{Block: testBlock, Hash: format.CsumXXH3})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if res.AdoptedBytes == 0 || res.ExtentsShared == 0 {
		t.Fatalf("nothing indexed in place or shared: test too weak: %+v", res)
	}
	items := dedupeItems(t, d)
	for _, it := range items {
		if len(it.Data) != format.DedupeItemStrongSize {
			t.Fatalf("entry %v has no tail (%d of %d entries checked)", it.Key, len(it.Data), len(items))
		}
	}
	verify(t, d, model)
}
