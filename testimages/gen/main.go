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

func gen(dir string) error {
	name := fmt.Sprintf("v%d-raid1-2dev", format.CurrentVersion)
	var devs []*device.MemDevice
	p := store.CreateParams{
		FSID: [16]byte{0xdd, 0xf5, 1}, Label: name, Csum: format.CsumCRC32C, NodeSize: 16384, SectorSize: 4096,
		Data: format.ProfileSingle, Metadata: format.ProfileRaid1,
	}
	for i := 0; i < 2; i++ {
		d := device.NewMemDevice(fmt.Sprintf("%s.%d.img", name, i+1), size)
		devs = append(devs, d)
		p.Devices = append(p.Devices, store.NewDevice{Dev: d, Path: d.Name(), PathHint: d.Name()})
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
