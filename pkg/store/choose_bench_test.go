package store

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
)

// BenchmarkWalkCopies measures a cold walk of a large fs tree (about
// 10,000 leaves of 4 KiB in image files, so every read is a system call
// into the page cache) read-only (through the read-ahead window) and
// writable (a read per node), with metadata single (one copy to read),
// dup and raid1 (every copy read and compared, issue 36). The cost of
// reading every copy is dup's and raid1's time over single's. On a
// loaded machine wall time swings several-fold between runs, so it also
// reports what does not: device reads and bytes per walk, and the
// process's CPU time (user+system) per walk.
func BenchmarkWalkCopies(b *testing.B) {
	for _, meta := range []struct {
		name string
		p    format.Profile
		devs int
	}{{"single", format.ProfileSingle, 1}, {"dup", format.ProfileDup, 1}, {"raid1", format.ProfileRaid1, 2}} {
		paths := walkImage(b, meta.p, meta.devs)
		for _, write := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/write=%v", meta.name, write), func(b *testing.B) {
				var st device.Stats
				cpu0 := cpuTime()
				for b.Loop() {
					s := walkOnce(b, paths, write)
					st.Reads += s.Reads
					st.ReadBytes += s.ReadBytes
				}
				b.ReportMetric(float64(st.Reads)/float64(b.N), "reads/op")
				b.ReportMetric(float64(st.ReadBytes)/float64(b.N), "readbytes/op")
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
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

// cpuTime is the process's user and system time so far, in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// walkOnce opens the set and scans its fs tree from a cold node cache;
// it returns the device I/O of the scan.
func walkOnce(b *testing.B, paths []string, write bool) device.Stats {
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
		ds = append(ds, device.NewCounting(d))
	}
	fs := openOn(b, ds, write)
	n := 0
	err := fs.Tree(format.FSTree).Scan(format.Key{}, format.MaxKey, func(format.Item) (bool, error) { n++; return true, nil })
	if err != nil || n < 200000 {
		b.Fatalf("%d items: %v", n, err)
	}
	if err := fs.Close(); err != nil {
		b.Fatal(err)
	}
	var st device.Stats
	for _, d := range ds {
		s := d.(*device.Counting).Stats()
		st.Reads += s.Reads
		st.ReadBytes += s.ReadBytes
	}
	return st
}
