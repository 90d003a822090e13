package fsys

import (
	"bytes"
	"errors"
	"fmt"
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
	return healSetOf(t, format.ProfileRaid1, 2)
}

// healSetOf is healSet with data and metadata at profile on n devices.
func healSetOf(t *testing.T, profile format.Profile, n int) ([]*device.MemDevice, []byte, uint64, []volume.Target) {
	t.Helper()
	p := store.CreateParams{FSID: [16]byte{5}, Csum: format.CsumCRC32C, NodeSize: 16384, SectorSize: 4096, Data: profile, Metadata: profile}
	var devs []*device.MemDevice
	for i := range n {
		devs = append(devs, device.NewMemDevice(fmt.Sprintf("m%d", i), 512<<20))
	}
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

// profileCase is a profile on a number of devices, for table tests.
type profileCase struct {
	name    string
	profile format.Profile
	devices int
}

// asDevices is devs as the device interface.
func asDevices(devs []*device.MemDevice) []device.Device {
	ds := make([]device.Device, len(devs))
	for i, d := range devs {
		ds[i] = d
	}
	return ds
}

// readHealing opens the set writable over ds, reads /a through the io/fs
// view and returns the heals reported.
func readHealing(t *testing.T, ds []device.Device, want []byte) []store.Heal {
	t.Helper()
	f, heals := openReporting(t, ds)
	defer f.Close()
	got, err := fs.ReadFile(f.IOFS(), "a")
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read back: %v, equal %v", err, bytes.Equal(got, want))
	}
	return *heals
}

// openReporting opens the set writable over ds, collecting the heals
// reported.
func openReporting(t *testing.T, ds []device.Device) (*FS, *[]store.Heal) {
	t.Helper()
	vol, err := volume.FromDevices(ds, true)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenVolume(vol)
	if err != nil {
		t.Fatal(err)
	}
	heals := new([]store.Heal)
	st.OnHeal(func(h store.Heal) { *heals = append(*heals, h) })
	f, err := New(st, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return f, heals
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

// A data sector bad on every copy, each with its own garbage, fails the
// read with ErrDataChecksum; no copy is "repaired" with another's
// unverified bytes and no heal is reported.
func TestReadFailsWhenEveryCopyBad(t *testing.T) {
	for _, tc := range []profileCase{{"raid1", format.ProfileRaid1, 2}, {"dup", format.ProfileDup, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			devs, _, sector, ts := healSetOf(t, tc.profile, tc.devices)
			if len(ts) != 2 {
				t.Fatalf("%d copies of sector %d, want 2", len(ts), sector)
			}
			var bad [][]byte
			for i, tg := range ts {
				b := bytes.Repeat([]byte{0xA0 + byte(i)}, 4096)
				if _, err := devs[tg.DevID-1].WriteAt(b, int64(tg.Physical)); err != nil {
					t.Fatal(err)
				}
				bad = append(bad, b)
			}
			ds := asDevices(devs)
			f, heals := openReporting(t, ds)
			defer f.Close()
			in, err := f.Resolve("/a", false)
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.ReadAt(in, make([]byte, in.Size), 0)
			if !errors.Is(err, ErrDataChecksum) {
				t.Errorf("read of a sector bad on every copy: %v, want ErrDataChecksum", err)
			}
			if len(*heals) != 0 {
				t.Errorf("heals %+v, want none", *heals)
			}
			for i, tg := range ts {
				got := make([]byte, 4096)
				if _, err := devs[tg.DevID-1].ReadAt(got, int64(tg.Physical)); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, bad[i]) {
					t.Errorf("copy %d was overwritten with unverified bytes", i)
				}
			}
		})
	}
}

// ReadFile of the io/fs view returns a failed read's error, not the
// bytes before it as if the file ended there.
func TestIOFSReadFileReportsBadData(t *testing.T) {
	devs, _, _, ts := healSet(t)
	for i, tg := range ts {
		if _, err := devs[tg.DevID-1].WriteAt(bytes.Repeat([]byte{0xB0 + byte(i)}, 4096), int64(tg.Physical)); err != nil {
			t.Fatal(err)
		}
	}
	f, _ := openReporting(t, []device.Device{devs[0], devs[1]})
	defer f.Close()
	got, err := fs.ReadFile(f.IOFS(), "a")
	if !errors.Is(err, ErrDataChecksum) {
		t.Fatalf("ReadFile over a bad sector: %d bytes, %v; want ErrDataChecksum", len(got), err)
	}
}

// On raid5 and raid6 a data strip that reads back wrong is rebuilt from
// parity (copy 1) and rewritten in place: the strip then holds the good
// bytes and the row's parity still describes them.
func TestReadHealsParityDataStrip(t *testing.T) {
	for _, tc := range []profileCase{{"raid5", format.ProfileRaid5, 3}, {"raid6", format.ProfileRaid6, 4}} {
		t.Run(tc.name, func(t *testing.T) {
			devs, want, sector, ts := healSetOf(t, tc.profile, tc.devices)
			strip := ts[0]
			if _, err := devs[strip.DevID-1].WriteAt(make([]byte, 4096), int64(strip.Physical)); err != nil {
				t.Fatal(err)
			}
			ds := asDevices(devs)
			heals := readHealing(t, ds, want)
			if len(heals) != 1 || heals[0].Logical != sector || heals[0].Copy != 0 || !heals[0].Repaired {
				t.Fatalf("heals %+v, want the data strip of sector %d rewritten", heals, sector)
			}
			got := make([]byte, 4096)
			devs[strip.DevID-1].ReadAt(got, int64(strip.Physical))
			if !bytes.Equal(got, want[3*4096:4*4096]) {
				t.Fatal("the data strip was not rewritten with the good bytes")
			}
			if heals := readHealing(t, ds, want); len(heals) != 0 {
				t.Fatalf("second read healed again: %+v", heals)
			}
		})
	}
}
