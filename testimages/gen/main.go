// Command gen writes the frozen test images of the current format version
// into testimages/: small, deterministic (fixed UUID, fixed contents), and
// gzip-compressed so the repository stays small. Run it (make testimages)
// only when the format gains a version; old images are never rewritten.
package main

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/store"
)

// Size of each image: small enough to keep, big enough for all chunk types.
const size = 64 << 20

func main() {
	if err := gen("testimages"); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
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
	fs, err := store.Create(p)
	if err != nil {
		return err
	}
	// Enough items for a two-level fs tree.
	tx, err := fs.Begin()
	if err != nil {
		return err
	}
	for i := 0; i < 400; i++ {
		k := format.Key{ObjectID: uint64(format.FirstFreeIno + uint64(i)), Type: format.InodeItemKey}
		if err := tx.Tree(format.FSTree).Insert(k, []byte(fmt.Sprintf("item %d of the frozen image", i))); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	for _, d := range devs {
		if err := writeGz(filepath.Join(dir, d.Name()+".gz"), d); err != nil {
			return err
		}
	}
	return nil
}

func writeGz(path string, d *device.MemDevice) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	zw, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
	zw.ModTime = zw.ModTime.UTC() // zero: reproducible output
	if _, err := io.Copy(zw, io.NewSectionReader(d, 0, d.Size())); err != nil {
		return err
	}
	return zw.Close()
}
