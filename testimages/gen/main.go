// Command gen writes the frozen test images of the current format version
// into testimages/: small, deterministic (fixed UUID, fixed times and
// contents), and gzip-compressed so the repository stays small. Run it
// (make testimages) only when the format gains a version; old images are
// never rewritten.
package main

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
)

// Size of each device: small enough to keep, big enough for all chunk types.
const size = 64 << 20

func main() {
	if err := gen("testimages"); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// Content is what every frozen image holds; images_test.go checks it.
func Content(i int) []byte {
	b := make([]byte, 3000+i*1000)
	for j := range b {
		b[j] = byte(i + j*7)
	}
	return b
}

// set is one frozen image set: how its filesystem is made and what it
// holds beyond the common tree (populate).
type set struct {
	name   string // without the version prefix
	params store.CreateParams
	props  []store.NewDevice // per device: Rotational, SeekSpeed, Bandwidth, Tier
	extra  func(*fsys.FS) error
}

// sets are every feature a frozen image covers. The first is the original
// v1 set; all of them are written once and never rewritten.
func sets() []set {
	base := store.CreateParams{Csum: format.CsumCRC32C, NodeSize: 16384, SectorSize: 4096}
	with := func(id byte, data, meta format.Profile, st format.Settings) store.CreateParams {
		p := base
		p.FSID = [16]byte{0xdd, 0xf5, id}
		p.Data, p.Metadata, p.Settings = data, meta, st
		return p
	}
	hdd := store.NewDevice{Rotational: true, SeekSpeed: 120, Bandwidth: 150 << 20}
	return []set{
		{name: "raid1-2dev", params: with(1, format.ProfileSingle, format.ProfileRaid1, format.Settings{}), props: make([]store.NewDevice, 2)},
		{name: "dedupe-zstd", params: with(2, format.ProfileSingle, format.ProfileDup, format.Settings{
			Dedupe: true, DedupeBlockLog2: 12, DedupeHash: format.CsumSHA256, Compression: format.CompressZstd, CompressionLevel: 3}),
			props: make([]store.NewDevice, 1), extra: duplicates},
		{name: "discard-async", params: with(3, format.ProfileSingle, format.ProfileDup, format.Settings{
			Discard: format.DiscardAsync, DiscardMaxPerCommit: 4096}),
			props: make([]store.NewDevice, 1), extra: churn},
		{name: "raid10-4dev", params: with(4, format.ProfileRaid10, format.ProfileRaid10, format.Settings{}), props: make([]store.NewDevice, 4)},
		{name: "tiered-4dev", params: with(5, format.ProfileSingle, format.ProfileRaid1, format.Settings{AllocPolicy: format.AllocTiered}),
			props: []store.NewDevice{{}, {}, hdd, hdd}},
		{name: "snapshots", params: with(6, format.ProfileSingle, format.ProfileDup, format.Settings{}),
			props: make([]store.NewDevice, 1), extra: snapshots},
	}
}

func gen(dir string) error {
	for _, s := range sets() {
		name := fmt.Sprintf("v%d-%s", format.CurrentVersion, s.name)
		if _, err := os.Stat(filepath.Join(dir, name+".1.img.gz")); err == nil {
			continue // frozen: never rewritten
		}
		if err := genSet(dir, name, s); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

func genSet(dir, name string, s set) error {
	var devs []*device.MemDevice
	p := s.params
	p.Label = name
	p.AllocPolicy = p.Settings.AllocPolicy
	for i, props := range s.props {
		d := device.NewMemDevice(fmt.Sprintf("%s.%d.img", name, i+1), size)
		devs = append(devs, d)
		props.Dev, props.Path, props.PathHint = d, d.Name(), d.Name()
		p.Devices = append(p.Devices, props)
	}
	st, tx, err := store.CreateTx(p)
	if err != nil {
		return err
	}
	f, err := fsys.New(st, fsys.Options{Now: func() time.Time { return time.Unix(1750000000, 0) }})
	if err != nil {
		return err
	}
	f.Adopt(tx)
	if err := populate(f); err != nil {
		return err
	}
	if s.extra != nil {
		if err := f.Sync(); err != nil {
			return err
		}
		if err := s.extra(f); err != nil {
			return err
		}
	}
	if err := f.Sync(); err != nil {
		return err
	}
	for _, d := range devs {
		if err := writeGz(filepath.Join(dir, d.Name()+".gz"), d); err != nil {
			return err
		}
	}
	return nil
}

// Compressible is the content of /dup1 and /dup2 in the dedupe set: 64 KiB
// that compresses well, written twice so the second copy is deduplicated.
func Compressible() []byte {
	b := make([]byte, 64<<10)
	for j := range b {
		b[j] = "ddfs frozen image "[j%18]
	}
	return b
}

func duplicates(f *fsys.FS) error {
	for _, p := range []string{"/dup1", "/dup2"} {
		in, err := f.Create(p, fsys.Attr{Mode: 0o644})
		if err != nil {
			return err
		}
		if err := f.WriteAt(in, Compressible(), 0); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
	}
	return nil
}

// churn writes and removes /churn so that its extents are freed; with at
// most 4 KiB discarded per commit, ranges stay recorded in the discard tree.
func churn(f *fsys.FS) error {
	in, err := f.Create("/churn", fsys.Attr{Mode: 0o644})
	if err != nil {
		return err
	}
	if err := f.WriteAt(in, make([]byte, 1<<20), 0); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return f.Remove("/churn")
}

// SnapshotFile is the content of /snap/a, which only snapshot "after"
// keeps, and of /snap/b, which only the live tree has.
func SnapshotFile(b byte) []byte {
	p := make([]byte, 100<<10)
	for j := range p {
		p[j] = b + byte(j/4096)
	}
	return p
}

// snapshots takes "before" of the common tree, writes /snap/a, takes
// "after", then replaces /snap/a by /snap/b: three fs trees sharing the
// nodes of /d, each with a leaf or data of its own.
func snapshots(f *fsys.FS) error {
	if _, err := f.CreateSnapshot("before"); err != nil {
		return err
	}
	if _, err := f.Mkdir("/snap", fsys.Attr{Mode: 0o755}); err != nil {
		return err
	}
	for _, step := range []struct {
		path string
		b    byte
		snap string
	}{{"/snap/a", 'a', "after"}, {"/snap/b", 'b', ""}} {
		in, err := f.Create(step.path, fsys.Attr{Mode: 0o644})
		if err != nil {
			return err
		}
		if err := f.WriteAt(in, SnapshotFile(step.b), 0); err != nil {
			return err
		}
		if step.snap != "" {
			if _, err := f.CreateSnapshot(step.snap); err != nil {
				return err
			}
		}
	}
	return f.Remove("/snap/a")
}

// populate writes a small tree: 300 files in a directory (a two-level fs
// tree), inline and extent data, a sparse file, a symlink, a hard link
// and an xattr.
func populate(f *fsys.FS) error {
	if err := f.InitRoot(fsys.Attr{Mode: 0o755}); err != nil {
		return err
	}
	if _, err := f.Mkdir("/d", fsys.Attr{Mode: 0o755}); err != nil {
		return err
	}
	for i := 0; i < 300; i++ {
		in, err := f.Create(fmt.Sprintf("/d/f%03d", i), fsys.Attr{Mode: 0o644, UID: 1000, GID: 1000})
		if err != nil {
			return err
		}
		if err := f.WriteAt(in, Content(i%5), 0); err != nil {
			return err
		}
	}
	sp, err := f.Create("/sparse", fsys.Attr{Mode: 0o600})
	if err != nil {
		return err
	}
	if err := f.WriteAt(sp, []byte("end"), 40<<20); err != nil {
		return err
	}
	if _, err := f.Symlink("d/f001", "/link", fsys.Attr{}); err != nil {
		return err
	}
	if err := f.Link("/d/f002", "/hard"); err != nil {
		return err
	}
	in, err := f.Resolve("/d", false)
	if err != nil {
		return err
	}
	return f.SetXattr(in, "user.frozen", []byte("v1"))
}

func writeGz(path string, d *device.MemDevice) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	zw, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
	if _, err := io.Copy(zw, io.NewSectionReader(d, 0, d.Size())); err != nil {
		return err
	}
	return zw.Close()
}
