package volume_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

const copy1 = 64 << 20 // superblock copy 1 (FORMAT.md §3)

// twoDevices makes a raid1 set on two memory devices and commits gens
// empty transactions on it.
func twoDevices(t *testing.T, gens int) []*device.MemDevice {
	t.Helper()
	devs := []*device.MemDevice{device.NewMemDevice("d0", 128<<20), device.NewMemDevice("d1", 128<<20)}
	p := store.CreateParams{FSID: [16]byte{7, 7}, Csum: format.CsumCRC32C, NodeSize: 4096, SectorSize: 4096, Data: format.ProfileRaid1, Metadata: format.ProfileRaid1}
	for _, d := range devs {
		p.Devices = append(p.Devices, store.NewDevice{Dev: d, Path: d.Name()})
	}
	fs, err := store.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	for range gens {
		tx, err := fs.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	return devs
}

func raw(t *testing.T, d *device.MemDevice, off int64) []byte {
	t.Helper()
	b := make([]byte, format.SuperblockSize)
	if _, err := d.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	return b
}

// rewrite decodes the superblock at off, changes it and writes it back
// with a valid checksum.
func rewrite(t *testing.T, d *device.MemDevice, off int64, change func(*format.Superblock)) {
	t.Helper()
	sb, err := format.UnmarshalSuperblock(raw(t, d, off))
	if err != nil {
		t.Fatal(err)
	}
	change(sb)
	b, err := format.MarshalSuperblock(sb)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func open(devs []*device.MemDevice, write bool) (*volume.Volume, error) {
	var ds []device.Device
	for _, d := range devs {
		ds = append(ds, d)
	}
	return volume.FromDevices(ds, write)
}

// behind puts d back to the superblocks it had before the last commit.
func behind(t *testing.T, d *device.MemDevice, prev [2][]byte) {
	t.Helper()
	for i, off := range []int64{64 << 10, copy1} {
		if _, err := d.WriteAt(prev[i], off); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMemberBehind: a device that missed the last superblock write is
// accepted when the set's backup roots hold its root set with its nonce,
// and refused as diverged when only the nonce differs (equal root
// pointers are what two copies committing on their own produce).
func TestMemberBehind(t *testing.T) {
	for _, tc := range []struct {
		name     string
		diverged bool
	}{{"crash trace", false}, {"diverged copy", true}} {
		t.Run(tc.name, func(t *testing.T) {
			devs := twoDevices(t, 2)
			prev := [2][]byte{raw(t, devs[1], 64<<10), raw(t, devs[1], copy1)}
			vol, _ := open(devs, true)
			fs, err := store.OpenVolume(vol)
			if err != nil {
				t.Fatal(err)
			}
			tx, _ := fs.Begin()
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			gen := fs.Super().Generation
			fs.Close()
			behind(t, devs[1], prev)
			if tc.diverged {
				for _, off := range []int64{64 << 10, copy1} {
					rewrite(t, devs[1], off, func(sb *format.Superblock) { sb.Roots.Nonce ^= 1 })
				}
			}
			v, err := open(devs, false)
			var de *volume.DivergedError
			switch {
			case !tc.diverged && err != nil:
				t.Fatalf("crash trace refused: %v", err)
			case !tc.diverged && v.Super.Generation != gen:
				t.Fatalf("set generation %d, want %d", v.Super.Generation, gen)
			case tc.diverged && (!errors.Is(err, volume.ErrDivergedDevice) || !errors.As(err, &de)):
				t.Fatalf("diverged member: %v", err)
			case tc.diverged && (de.DevID != 2 || de.Generation != gen-1 || de.SetGeneration != gen):
				t.Fatalf("diverged error %+v", de)
			}
		})
	}
}

// TestSameGenerationCopiesDiffer: a copy of the set's generation with
// other set-wide fields is a finding; readers open, writers refuse.
func TestSameGenerationCopiesDiffer(t *testing.T) {
	devs := twoDevices(t, 1)
	rewrite(t, devs[1], copy1, func(sb *format.Superblock) { sb.Settings.SmallDataMax = 8192 })
	v, err := open(devs, false)
	if err != nil {
		t.Fatal(err)
	}
	f := v.Findings()
	if len(f) != 1 || f[0].DevID != 2 || f[0].Offset != copy1 {
		t.Fatalf("findings %+v", f)
	}
	if _, err := open(devs, true); !errors.Is(err, volume.ErrSuperMismatch) {
		t.Fatalf("writer: %v", err)
	}
}

// TestDeterministicChoice: with two equal-generation primaries that
// differ, the set superblock is the lowest devid's whatever the order the
// devices come in (issue 12: fsck exited 0 or 4 at random).
func TestDeterministicChoice(t *testing.T) {
	devs := twoDevices(t, 1)
	rewrite(t, devs[0], 64<<10, func(sb *format.Superblock) { sb.Label = "one" })
	rewrite(t, devs[1], 64<<10, func(sb *format.Superblock) { sb.Label = "two" })
	for _, order := range [][]*device.MemDevice{devs, {devs[1], devs[0]}} {
		for range 5 {
			v, err := open(order, false)
			if err != nil {
				t.Fatal(err)
			}
			if v.Super.Label != "one" || v.Super.DevID != 1 || len(v.Findings()) != 3 {
				t.Fatalf("chose %q of devid %d, %d findings", v.Super.Label, v.Super.DevID, len(v.Findings()))
			}
		}
	}
}

// TestWriterChecksDevUUID: a device whose dev_uuid is not the one its
// device item names is not written to (readers go on, fsck reports it).
func TestWriterChecksDevUUID(t *testing.T) {
	devs := twoDevices(t, 1)
	for _, off := range []int64{64 << 10, copy1} {
		rewrite(t, devs[1], off, func(sb *format.Superblock) { sb.DevUUID[0] ^= 1 })
	}
	for _, write := range []bool{false, true} {
		v, err := open(devs, write)
		if err != nil {
			t.Fatal(err)
		}
		fs, err := store.OpenVolume(v)
		if write != errors.Is(err, format.ErrCorrupt) {
			t.Fatalf("write=%v: %v", write, err)
		}
		if err == nil {
			fs.Close()
		} else {
			v.Close()
		}
	}
}

// TestNamedCopyAmbiguous: two files named on the command line that claim
// the same device of a set are refused with ErrAmbiguousDevice naming
// both, never one of them silently dropped: in the folder scanned, in
// another folder (only the first device's folder is scanned) and with no
// scan at all; FromDevices refuses a copy the same way.
func TestNamedCopyAmbiguous(t *testing.T) {
	devs := twoDevices(t, 1)
	dir, other := t.TempDir(), t.TempDir()
	a, b := filepath.Join(dir, "a.img"), filepath.Join(dir, "b.img")
	writeImage(t, a, devs[0])
	writeImage(t, b, devs[1])
	writeImage(t, filepath.Join(dir, "a-copy.img"), devs[0])
	writeImage(t, filepath.Join(other, "a-copy.img"), devs[0])
	for _, c := range []struct {
		name string
		copy string
		opt  volume.Options
	}{
		{"same folder, no scan", filepath.Join(dir, "a-copy.img"), volume.Options{NoScan: true}},
		{"other folder", filepath.Join(other, "a-copy.img"), volume.Options{}},
		{"other folder, no scan", filepath.Join(other, "a-copy.img"), volume.Options{NoScan: true}},
	} {
		v, err := volume.Open([]string{a, b, c.copy}, c.opt)
		if err == nil {
			v.Close()
		}
		var amb *volume.AmbiguousError
		if !errors.Is(err, volume.ErrAmbiguousDevice) || !errors.As(err, &amb) ||
			amb.DevID != 1 || !slices.Contains(amb.Paths, a) || !slices.Contains(amb.Paths, c.copy) {
			t.Errorf("%s: %v, want device 1 ambiguous between %s and %s", c.name, err, a, c.copy)
		}
	}
	dup := device.NewMemDevice("d0-copy", devs[0].Size())
	copyBlocks(t, dup, devs[0])
	if v, err := open([]*device.MemDevice{devs[0], devs[1], dup}, false); !errors.Is(err, volume.ErrAmbiguousDevice) {
		if err == nil {
			v.Close()
		}
		t.Errorf("FromDevices with a copy of device 1: %v, want ErrAmbiguousDevice", err)
	}
}

// writeImage writes d's bytes to a new image file at path, leaving its
// zero blocks as holes.
func writeImage(t *testing.T, path string, d *device.MemDevice) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	copyBlocks(t, f, d)
	if err := f.Truncate(d.Size()); err != nil {
		t.Fatal(err)
	}
}

// copyBlocks writes the blocks of d that are not all zeros to dst.
func copyBlocks(t *testing.T, dst io.WriterAt, d *device.MemDevice) {
	t.Helper()
	buf, zero := make([]byte, 1<<20), make([]byte, 1<<20)
	for off := int64(0); off < d.Size(); off += int64(len(buf)) {
		n, err := d.ReadAt(buf[:min(int64(len(buf)), d.Size()-off)], off)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(buf[:n], zero[:n]) {
			continue
		}
		if _, err := dst.WriteAt(buf[:n], off); err != nil {
			t.Fatal(err)
		}
	}
}
