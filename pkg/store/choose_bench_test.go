package store

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/volume"
)

// BenchmarkWalkCopies measures a cold walk of a large fs tree (about
// 10,000 leaves of 4 KiB in image files, so every read is a system call
// into the page cache) read-only (through the read-ahead window) and
// writable (a read per node), with metadata single (one copy to read),
// dup and raid1 (every copy read and compared, issue 36). The cost of
// reading every copy is dup's and raid1's time over single's.
func BenchmarkWalkCopies(b *testing.B) {
	for _, meta := range []struct {
		name string
		p    format.Profile
		devs int
	}{{"single", format.ProfileSingle, 1}, {"dup", format.ProfileDup, 1}, {"raid1", format.ProfileRaid1, 2}} {
		paths := walkImage(b, meta.p, meta.devs)
		for _, write := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/write=%v", meta.name, write), func(b *testing.B) {
				for b.Loop() {
					walkOnce(b, paths, write)
				}
			})
		}
	}
}

// walkImage builds the tree of BenchmarkWalkCopies on devs image files.
func walkImage(b *testing.B, meta format.Profile, devs int) []string {
	dir := b.TempDir()
	p := CreateParams{FSID: [16]byte{9}, Csum: format.CsumCRC32C, NodeSize: 4096, SectorSize: 4096, Data: format.ProfileSingle, Metadata: meta}
	var paths []string
	for i := range devs {
		path := filepath.Join(dir, fmt.Sprintf("d%d.img", i))
		d, err := device.Open(path, device.OpenOptions{Mode: device.ReadWrite, Create: true, CreateSize: 2 << 30})
		if err != nil {
			b.Fatal(err)
		}
		paths = append(paths, path)
		p.Devices = append(p.Devices, NewDevice{Dev: d, Path: path})
	}
	fs, err := Create(p)
	if err != nil {
		b.Fatal(err)
	}
	for batch := uint64(0); batch < 20; batch++ {
		tx, err := fs.Begin()
		if err != nil {
			b.Fatal(err)
		}
		for i := uint64(0); i < 10000; i++ {
			k := format.Key{ObjectID: batch*10000 + i, Type: format.InodeItemKey}
			if err := tx.Tree(format.FSTree).Put(k, make([]byte, 160)); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	if err := fs.Close(); err != nil {
		b.Fatal(err)
	}
	return paths
}

// walkOnce opens the set and scans its fs tree from a cold node cache.
func walkOnce(b *testing.B, paths []string, write bool) {
	mode := device.ReadOnly
	if write {
		mode = device.ReadWrite
	}
	var ds []device.Device
	for _, path := range paths {
		d, err := device.Open(path, device.OpenOptions{Mode: mode})
		if err != nil {
			b.Fatal(err)
		}
		ds = append(ds, d)
	}
	vol, err := volume.FromDevices(ds, write)
	if err != nil {
		b.Fatal(err)
	}
	fs, err := OpenVolume(vol)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	err = fs.Tree(format.FSTree).Scan(format.Key{}, format.MaxKey, func(format.Item) (bool, error) { n++; return true, nil })
	if err != nil || n < 200000 {
		b.Fatalf("%d items: %v", n, err)
	}
	if err := fs.Close(); err != nil {
		b.Fatal(err)
	}
}
