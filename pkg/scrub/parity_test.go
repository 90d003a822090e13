package scrub

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
)

// buildParity makes a raid5/raid6 set whose data fills over 1,000 rows,
// returning the devices and the files' contents by path.
func buildParity(t *testing.T, n int, p format.Profile, r *rand.Rand) ([]*device.MemDevice, map[string][]byte) {
	t.Helper()
	cp := store.CreateParams{FSID: [16]byte{9}, Csum: format.CsumCRC32C, NodeSize: 4096, SectorSize: 4096, Data: p, Metadata: p}
	var devs []*device.MemDevice
	for i := range n {
		d := device.NewMemDevice(fmt.Sprintf("d%d", i), 256<<20)
		devs = append(devs, d)
		cp.Devices = append(cp.Devices, store.NewDevice{Dev: d, Path: d.Name()})
	}
	st, err := store.Create(cp)
	if err != nil {
		t.Fatal(err)
	}
	f, err := fsys.New(st, fsys.Options{Now: func() time.Time { return time.Unix(1700000000, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.InitRoot(fsys.Attr{Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for i := range 100 {
		b := make([]byte, 512<<10+r.IntN(4096))
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		name := fmt.Sprintf("/f%d", i)
		in, err := f.Create(name, fsys.Attr{Mode: 0o644})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.WriteAt(in, b, 0); err != nil {
			t.Fatal(err)
		}
		files[name] = b
		if i%10 == 9 {
			if err := f.Sync(); err != nil { // commits leave part-filled rows
				t.Fatal(err)
			}
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return devs, files
}

// Corrupt one strip (data or parity, chosen at random) in each of 1,000
// rows that hold data: scrub --repair fixes every one of them, a second
// scrub finds nothing, and every file reads back identical (issue 40).
func TestScrubParityRows(t *testing.T) {
	for _, tc := range []struct {
		n int
		p format.Profile
	}{{4, format.ProfileRaid5}, {5, format.ProfileRaid6}} {
		t.Run(fmt.Sprintf("%d-%v", tc.n, tc.p), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(tc.n), 40))
			devs, files := buildParity(t, tc.n, tc.p, r)
			fs := open(t, devs, false)
			damaged := 0
			for _, bg := range fs.BlockGroups() {
				c := bg.Chunk
				if c.Type != format.ChunkData {
					continue
				}
				free, err := fs.FreeRanges(bg)
				if err != nil {
					t.Fatal(err)
				}
				for _, row := range usedRows(c, free) {
					if damaged == 1000 {
						break
					}
					s := c.Stripes[r.IntN(len(c.Stripes))]
					at := s.Offset + row*uint64(c.StripeLen) + uint64(r.IntN(int(c.StripeLen)-64))
					junk := make([]byte, 64)
					for j := range junk {
						junk[j] = byte(r.Uint32()) | 1
					}
					if _, err := devs[s.DevID-1].WriteAt(junk, int64(at)); err != nil {
						t.Fatal(err)
					}
					damaged++
				}
			}
			fs.Close()
			if damaged < 1000 {
				t.Fatalf("only %d rows hold data", damaged)
			}
			fs = open(t, devs, true)
			rep, err := Run(fs, Options{Repair: true})
			if err != nil {
				t.Fatal(err)
			}
			if left, unc := rep.Left(); left != 0 || unc != 0 || len(rep.Errors) < damaged {
				t.Fatalf("repair left %d (%d uncorrectable) of %d errors for %d damaged rows", left, unc, len(rep.Errors), damaged)
			}
			fs.Close()
			fs = open(t, devs, false)
			rep, err = Run(fs, Options{})
			if err != nil || !rep.Clean() {
				t.Fatalf("second scrub: %v, %d errors (first %+v)", err, len(rep.Errors), first(rep.Errors))
			}
			f, err := fsys.New(fs, fsys.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range files {
				in, err := f.Resolve(name, false)
				if err != nil {
					t.Fatal(err)
				}
				got := make([]byte, len(want))
				if _, err := f.ReadAt(in, got, 0); err != nil || !bytes.Equal(got, want) {
					t.Fatalf("%s: %v, equal %v", name, err, bytes.Equal(got, want))
				}
			}
			fs.Close()
		})
	}
}

func first(es []CopyError) any {
	if len(es) == 0 {
		return nil
	}
	return es[0]
}
