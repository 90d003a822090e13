package fsys

import (
	"bytes"
	"errors"
	"io/fs"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// healSet makes a raid1 set holding /a (64 KiB of random bytes) and
// returns the devices, the bytes, and where the copies of /a's fourth
// sector lie.
func healSet(t *testing.T) ([]*device.MemDevice, []byte, uint64, []volume.Target) {
	t.Helper()
	p := store.CreateParams{FSID: [16]byte{5}, Csum: format.CsumCRC32C, NodeSize: 16384, SectorSize: 4096, Data: format.ProfileRaid1, Metadata: format.ProfileRaid1}
	devs := []*device.MemDevice{device.NewMemDevice("m0", 512<<20), device.NewMemDevice("m1", 512<<20)}
	for _, d := range devs {
		p.Devices = append(p.Devices, store.NewDevice{Dev: d, Path: d.Name()})
	}
	st, err := store.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f, err := New(st, Options{Now: func() time.Time { return epoch }})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.InitRoot(Attr{Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 64<<10)
	r := rand.New(rand.NewPCG(1, 1))
	for i := range want {
		want[i] = byte(r.Uint32())
	}
	in, err := f.Create("/a", Attr{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.WriteAt(in, want, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	xs, err := f.extents(in.Ino, 0, in.Size)
	if err != nil || len(xs) == 0 || xs[0].DiskLogical == 0 {
		t.Fatalf("extents %v %v", xs, err)
	}
	sector := xs[0].DiskLogical + 3*4096
	ts, err := st.Vol.Locate(sector)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	return devs, want, sector, ts
}

// readHealing opens the set writable over ds, reads /a through the io/fs
// view and returns the heals reported.
func readHealing(t *testing.T, ds []device.Device, want []byte) []store.Heal {
	t.Helper()
	vol, err := volume.FromDevices(ds, true)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenVolume(vol)
	if err != nil {
		t.Fatal(err)
	}
	var heals []store.Heal
	st.OnHeal(func(h store.Heal) { heals = append(heals, h) })
	f, err := New(st, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := fs.ReadFile(f.IOFS(), "a")
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back: %v, equal %v", err, bytes.Equal(got, want))
	}
	return heals
}

// A read through the io/fs view that meets a bad data sector on copy 0
// returns the good bytes from copy 1 and rewrites copy 0's sector, which
// then holds exactly the good copy's bytes.
func TestReadHealsBadDataCopy(t *testing.T) {
	devs, want, sector, ts := healSet(t)
	if _, err := devs[ts[0].DevID-1].WriteAt(bytes.Repeat([]byte{0xEE}, 100), int64(ts[0].Physical)+7); err != nil {
		t.Fatal(err)
	}
	heals := readHealing(t, []device.Device{devs[0], devs[1]}, want)
	if len(heals) != 1 || heals[0].Logical != sector || heals[0].Copy != 0 || heals[0].Metadata || !heals[0].Repaired {
		t.Fatalf("heals %+v, want copy 0 of sector %d rewritten", heals, sector)
	}
	c0, c1 := make([]byte, 4096), make([]byte, 4096)
	devs[ts[0].DevID-1].ReadAt(c0, int64(ts[0].Physical))
	devs[ts[1].DevID-1].ReadAt(c1, int64(ts[1].Physical))
	if !bytes.Equal(c0, c1) || !bytes.Equal(c1, want[3*4096:4*4096]) {
		t.Fatal("copy 0 of the sector was not rewritten with the good bytes")
	}
}

// A copy that cannot be read (EIO) is served by the other and rewritten
// once the data verified, with the I/O error as the cause.
func TestReadHealsUnreadableCopy(t *testing.T) {
	devs, want, _, ts := healSet(t)
	var writes int
	bad := int64(ts[0].Physical)
	faulty := device.NewFaulty(devs[ts[0].DevID-1], func(op device.OpKind, off, n int64, _ int) error {
		if off < bad+4096 && bad < off+n {
			switch op {
			case device.OpRead:
				return syscall.EIO
			case device.OpWrite:
				writes++
			}
		}
		return nil
	})
	ds := []device.Device{devs[0], devs[1]}
	ds[ts[0].DevID-1] = faulty
	heals := readHealing(t, ds, want)
	if len(heals) != 1 || heals[0].Copy != 0 || !heals[0].Repaired || !errors.Is(heals[0].Cause, syscall.EIO) || writes != 1 {
		t.Fatalf("heals %+v, %d rewrites of the unreadable range, want one", heals, writes)
	}
}
