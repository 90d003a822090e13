package scrub

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

type profileCase struct {
	devs       int
	data, meta format.Profile
}

var profiles = []profileCase{
	{2, format.ProfileRaid1, format.ProfileRaid1},
	{3, format.ProfileRaid1C3, format.ProfileRaid1C3},
	{4, format.ProfileRaid10, format.ProfileRaid10},
	{1, format.ProfileDup, format.ProfileDup},
}

// build makes a set holding files /f0.. with random data and many empty
// files (so the trees have many nodes); it returns the devices and each
// data file's inode number by path.
func build(t *testing.T, pc profileCase, r *rand.Rand) ([]*device.MemDevice, map[uint64]string) {
	t.Helper()
	p := store.CreateParams{FSID: [16]byte{8}, Csum: format.CsumCRC32C, NodeSize: 4096, SectorSize: 4096, Data: pc.data, Metadata: pc.meta}
	var devs []*device.MemDevice
	for i := 0; i < pc.devs; i++ {
		d := device.NewMemDevice(fmt.Sprintf("d%d", i), 512<<20)
		devs = append(devs, d)
		p.Devices = append(p.Devices, store.NewDevice{Dev: d, Path: d.Name()})
	}
	st, err := store.Create(p)
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
	files := map[uint64]string{}
	buf := make([]byte, 48<<10)
	for i := 0; i < 100; i++ {
		for j := range buf {
			buf[j] = byte(r.Uint32())
		}
		name := fmt.Sprintf("/f%d", i)
		in, err := f.Create(name, fsys.Attr{Mode: 0o644})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.WriteAt(in, buf, 0); err != nil {
			t.Fatal(err)
		}
		files[in.Ino] = name
	}
	for i := 0; i < 1500; i++ {
		if _, err := f.Create(fmt.Sprintf("/empty-with-a-long-name-%d", i), fsys.Attr{Mode: 0o644}); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return devs, files
}

func open(t *testing.T, devs []*device.MemDevice, write bool) *store.FS {
	t.Helper()
	var ds []device.Device
	for _, d := range devs {
		ds = append(ds, d)
	}
	vol, err := volume.FromDevices(ds, write)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := store.OpenVolume(vol)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// target is one damaged copy: of a node or of a data sector.
type target struct {
	logical uint64
	copy    int // 0-based
	meta    bool
	ino     uint64 // data: the file owning the sector
}

// candidates lists every node (from the metadata items) and every data
// sector of the files (from their file extent items), read straight from
// the trees: the model does not use the scrub code.
func candidates(t *testing.T, fs *store.FS, files map[uint64]string) []target {
	t.Helper()
	var out []target
	err := fs.Tree(format.ExtentTree).Scan(format.Key{}, format.Key{ObjectID: ^uint64(0)}, func(it format.Item) (bool, error) {
		if it.Key.Type == format.MetadataItemKey {
			out = append(out, target{logical: it.Key.ObjectID, meta: true})
		}
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for ino := range files {
		from, to := format.Key{ObjectID: ino, Type: format.FileExtentKey}, format.Key{ObjectID: ino, Type: format.FileExtentKey + 1}
		err := fs.Tree(format.FSTree).Scan(from, to, func(it format.Item) (bool, error) {
			x, err := format.UnmarshalFileExtentItem(it.Data)
			if err != nil {
				return false, err
			}
			if x.Type == format.FileExtentRegular && x.DiskLogical != 0 {
				for off := uint64(0); off < x.DiskLen; off += 4096 {
					out = append(out, target{logical: x.DiskLogical + off, ino: ino})
				}
			}
			return true, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].logical < out[j].logical })
	return out
}

// damage overwrites part of one copy of n random targets on the devices
// themselves and returns them.
func damage(t *testing.T, fs *store.FS, devs []*device.MemDevice, cands []target, n int, r *rand.Rand) []target {
	t.Helper()
	if len(cands) < n {
		t.Fatalf("only %d nodes and sectors to damage, want %d", len(cands), n)
	}
	var out []target
	for _, i := range r.Perm(len(cands))[:n] {
		tg := cands[i]
		ts, err := fs.Vol.Locate(tg.logical)
		if err != nil {
			t.Fatal(err)
		}
		tg.copy = r.IntN(len(ts))
		junk := make([]byte, 64)
		for j := range junk {
			junk[j] = byte(r.Uint32())
		}
		if _, err := devs[ts[tg.copy].DevID-1].WriteAt(junk, int64(ts[tg.copy].Physical)+int64(r.IntN(4096-64))); err != nil {
			t.Fatal(err)
		}
		out = append(out, tg)
	}
	return out
}

func errorSet(rep *Report) map[[2]uint64]bool {
	out := map[[2]uint64]bool{}
	for _, e := range rep.Errors {
		out[[2]uint64{e.Logical, uint64(e.Copy)}] = true
	}
	return out
}

// Corrupt one copy of 1,000 random nodes and data sectors: a read-only
// scrub finds exactly those (per device, with the files they belong to),
// --repair fixes all of them (bytes on disk equal a good copy's again),
// and a second scrub finds nothing.
func TestScrubRepairsThousand(t *testing.T) {
	for _, pc := range profiles {
		t.Run(fmt.Sprintf("%d-%v-%v", pc.devs, pc.data, pc.meta), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(pc.devs), uint64(pc.data)))
			devs, files := build(t, pc, r)
			fs := open(t, devs, false)
			bad := damage(t, fs, devs, candidates(t, fs, files), 1000, r)
			fs.Close()

			fs = open(t, devs, false)
			rep, err := Run(fs, Options{})
			fs.Close()
			if err != nil {
				t.Fatal(err)
			}
			want := map[[2]uint64]bool{}
			perDev := map[uint64]uint64{}
			wantFiles := map[string]bool{}
			for _, b := range bad {
				want[[2]uint64{b.logical, uint64(b.copy)}] = true
				ts, _ := fs.Vol.Locate(b.logical)
				perDev[ts[b.copy].DevID]++
				if !b.meta {
					wantFiles[files[b.ino]] = true
				}
			}
			if got := errorSet(rep); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("scrub found %d bad copies, want the %d damaged", len(got), len(want))
			}
			for _, d := range rep.Devices {
				if d.ErrorsFound != perDev[d.DevID] || d.CsumErrors != d.ErrorsFound || d.ErrorsCorrected != 0 || d.ErrorsUncorrectable != 0 {
					t.Fatalf("device %+v, want %d errors found", d, perDev[d.DevID])
				}
			}
			gotFiles := map[string]bool{}
			for _, f := range rep.Files {
				gotFiles[f.Path] = true
			}
			if fmt.Sprint(gotFiles) != fmt.Sprint(wantFiles) {
				t.Fatalf("files %v, want %v", gotFiles, wantFiles)
			}

			fs = open(t, devs, true)
			opened := fs.HealStats() // the open's own reads heal what they meet
			rep, err = Run(fs, Options{Repair: true})
			healed := fs.HealStats().Repaired
			if err != nil {
				t.Fatal(err)
			}
			var corrected uint64
			for _, d := range rep.Devices {
				corrected += d.ErrorsCorrected
				if d.ErrorsUncorrectable != 0 || d.ErrorsCorrected != d.ErrorsFound {
					t.Fatalf("repair: device %+v", d)
				}
			}
			// Tree nodes the scrub itself read were healed on that read.
			if corrected+uint64(healed) != 1000 {
				t.Fatalf("corrected %d + healed on read %d, want 1000", corrected, healed)
			}
			// The scrub's own walk leaves bad copies to its workers, which
			// count each once (a heal racing with them counted one twice).
			if hs := fs.HealStats(); hs != opened {
				t.Fatalf("reads during the scrub healed: %+v after, %+v before, want no change (the scrub repairs them)", hs, opened)
			}
			for _, b := range bad {
				n := 4096
				cs := copiesOf(t, fs, devs, b.logical, n)
				for m := range cs {
					if !bytes.Equal(cs[m], cs[0]) {
						t.Fatalf("logical %d: copy %d still differs after repair", b.logical, m+1)
					}
				}
			}
			fs.Close()

			fs = open(t, devs, false)
			defer fs.Close()
			rep, err = Run(fs, Options{})
			if err != nil || !rep.Clean() || len(rep.Files) != 0 || rep.Nodes == 0 || rep.DataBytes != 100*48<<10 {
				t.Fatalf("second scrub: %v, %+v", err, rep.Devices)
			}
			checkBytesRead(t, pc, rep)
		})
	}
}

// copiesOf reads every copy of [logical, +n) straight from the devices.
func copiesOf(t *testing.T, fs *store.FS, devs []*device.MemDevice, logical uint64, n int) [][]byte {
	t.Helper()
	ts, err := fs.Vol.Locate(logical)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, tg := range ts {
		b := make([]byte, n)
		if _, err := devs[tg.DevID-1].ReadAt(b, int64(tg.Physical)); err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// An interrupted scrub records how far it got; --resume finishes the
// rest, and the two runs together find each damaged copy exactly once.
func TestScrubResume(t *testing.T) {
	pc := profiles[0]
	r := rand.New(rand.NewPCG(5, 5))
	devs, files := build(t, pc, r)
	fs := open(t, devs, false)
	bad := damage(t, fs, devs, candidates(t, fs, files), 300, r)
	defer fs.Close()
	statePath := filepath.Join(t.TempDir(), "state")
	stop := make(chan struct{})
	var read int64
	// One worker keeps the producer only a few units ahead of the stop.
	opt := Options{StatePath: statePath, Workers: 1, Stop: stop, Progress: func(n int64) {
		if read += n; read > 256<<10 && stop != nil {
			close(stop)
			stop = nil
		}
	}}
	rep, err := Run(fs, opt)
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("interrupted run: %v", err)
	}
	first := len(rep.Errors)
	rep, err = Run(fs, Options{StatePath: statePath, Resume: true})
	if err != nil || rep.ResumedFrom == 0 {
		t.Fatalf("resumed run: %v from %d", err, rep.ResumedFrom)
	}
	if len(rep.Errors) != len(bad) || first == 0 || first == len(bad) {
		t.Fatalf("%d bad copies found (%d before the interruption), want %d", len(rep.Errors), first, len(bad))
	}
	if len(errorSet(rep)) != len(bad) {
		t.Fatal("a bad copy was counted twice")
	}
	full, err := Run(fs, Options{})
	if err != nil || full.Nodes != rep.Nodes || full.DataBytes != rep.DataBytes || full.BytesRead != rep.BytesRead {
		t.Fatalf("resumed run counted %d nodes, %d data bytes, read %d; a whole run %d, %d, %d (%v)",
			rep.Nodes, rep.DataBytes, rep.BytesRead, full.Nodes, full.DataBytes, full.BytesRead, err)
	}
}

// supers is the superblock bytes scrub reads per device of build's sets
// (the copies that fit in 512 MiB).
var supers = uint64(len(volume.SuperOffsets(512<<20)) * format.SuperblockSize)

// checkBytesRead: every copy of every node and sector and every
// superblock was read once; the mirrored profiles spread that evenly
// over their devices.
func checkBytesRead(t *testing.T, pc profileCase, rep *Report) {
	t.Helper()
	pi, _ := pc.meta.Info()
	want := (rep.Nodes*4096 + rep.DataBytes) * uint64(pi.Copies)
	var sum uint64
	for _, d := range rep.Devices {
		sum += d.BytesRead
		if !pi.Striped && d.BytesRead != want/uint64(pc.devs)+supers {
			t.Fatalf("device %d read %d bytes, want %d", d.DevID, d.BytesRead, want/uint64(pc.devs)+supers)
		}
	}
	want += supers * uint64(pc.devs)
	if sum != want || rep.BytesRead != want {
		t.Fatalf("read %d (devices %d) bytes, want %d", rep.BytesRead, sum, want)
	}
}

// The files hit are named, and one whose sector has no good copy left is
// marked uncorrectable (and counted so), while a file with one bad copy
// is repaired.
func TestScrubNamesFiles(t *testing.T) {
	pc := profiles[0]
	devs, files := build(t, pc, rand.New(rand.NewPCG(9, 9)))
	fs := open(t, devs, true)
	defer fs.Close()
	byName := map[string]uint64{}
	for ino, name := range files {
		byName[name] = ino
	}
	var f3, f7 []target
	for _, c := range candidates(t, fs, files) {
		switch c.ino {
		case byName["/f3"]:
			f3 = append(f3, c)
		case byName["/f7"]:
			f7 = append(f7, c)
		}
	}
	hit := func(logical uint64, copies ...int) {
		ts, _ := fs.Vol.Locate(logical)
		for _, m := range copies {
			if _, err := devs[ts[m].DevID-1].WriteAt([]byte("garbage"), int64(ts[m].Physical)+9); err != nil {
				t.Fatal(err)
			}
		}
	}
	hit(f3[1].logical, 1)
	hit(f7[len(f7)-1].logical, 0, 1) // the last sector, on both copies
	rep, err := Run(fs, Options{Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []File{{"/f3", byName["/f3"], false, true}, {"/f7", byName["/f7"], true, false}}
	if byName["/f3"] > byName["/f7"] {
		want[0], want[1] = want[1], want[0]
	}
	if fmt.Sprint(rep.Files) != fmt.Sprint(want) {
		t.Fatalf("files %v, want %v", rep.Files, want)
	}
	if left, unc := rep.Left(); left != 2 || unc != 2 {
		t.Fatalf("left %d uncorrectable %d, want 2 and 2", left, unc)
	}
}

// On a degraded set the missing member is reported as such, its copies
// are neither read nor counted as bad, and the present copies are
// scrubbed in full.
func TestScrubDegraded(t *testing.T) {
	pc := profiles[0]
	devs, _ := build(t, pc, rand.New(rand.NewPCG(2, 2)))
	vol, err := volume.FromDevices([]device.Device{devs[0]}, false)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := store.OpenDegraded(vol)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	rep, err := Run(fs, Options{})
	if err != nil || !rep.Clean() {
		t.Fatalf("%v %+v", err, rep.Devices)
	}
	d1, d2 := rep.Devices[0], rep.Devices[1]
	if d1.Missing || !d2.Missing || d2.BytesRead != 0 || d1.BytesRead != rep.Nodes*4096+rep.DataBytes+supers || rep.DataBytes != 100*48<<10 {
		t.Fatalf("devices %+v %+v, %d nodes %d data bytes", d1, d2, rep.Nodes, rep.DataBytes)
	}
}

// failReads makes reads that touch [off, off+n) of a device fail with EIO.
func failReads(off, n int64) device.Rule {
	return func(op device.OpKind, o, l int64, _ int) error {
		if op == device.OpRead && o < off+n && off < o+l {
			return syscall.EIO
		}
		return nil
	}
}

// Sectors one copy cannot read are isolated sector by sector (the rest of
// the unit on that copy is still verified), counted as I/O errors on
// their device, and rewritten from the good copy with Repair.
func TestScrubIOErrors(t *testing.T) {
	pc := profiles[0]
	devs, files := build(t, pc, rand.New(rand.NewPCG(4, 4)))
	fs := open(t, devs, false)
	var sectors []uint64
	for _, c := range candidates(t, fs, files) {
		if !c.meta && files[c.ino] == "/f5" {
			sectors = append(sectors, c.logical)
		}
	}
	ts, _ := fs.Vol.Locate(sectors[4])
	fs.Close()
	bad := ts[1]
	faulty := device.NewFaulty(devs[bad.DevID-1], failReads(int64(bad.Physical), 3*4096))
	ds := []device.Device{devs[0], devs[1]}
	ds[bad.DevID-1] = faulty
	for _, repair := range []bool{false, true} {
		vol, err := volume.FromDevices(ds, repair)
		if err != nil {
			t.Fatal(err)
		}
		fs, err := store.OpenVolume(vol)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Run(fs, Options{Repair: repair})
		fs.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range rep.Devices {
			want, corrected := uint64(0), uint64(0)
			if d.DevID == bad.DevID {
				want = 3
			}
			if repair {
				corrected = want
			}
			if d.ErrorsFound != want || d.IOErrors != want || d.CsumErrors != 0 || d.ErrorsCorrected != corrected {
				t.Fatalf("repair %v: device %+v, want %d I/O errors", repair, d, want)
			}
		}
		for i, e := range rep.Errors {
			if e.Logical != sectors[4]+uint64(i)*4096 || e.Copy != 1 || e.Kind != KindIO {
				t.Fatalf("error %d: %+v", i, e)
			}
		}
	}
}

// A damaged superblock copy is found (kind super, on its device) and
// rewritten from the device's good copy with Repair.
func TestScrubSuperblock(t *testing.T) {
	pc := profiles[0]
	devs, _ := build(t, pc, rand.New(rand.NewPCG(6, 6)))
	off := int64(format.SuperblockOffsets[1])
	if _, err := devs[1].WriteAt([]byte("scribble"), off+200); err != nil {
		t.Fatal(err)
	}
	for i, repair := range []bool{false, true, false} {
		fs := open(t, devs, repair)
		rep, err := Run(fs, Options{Repair: repair})
		fs.Close()
		if err != nil {
			t.Fatal(err)
		}
		d := rep.Devices[1]
		if repair && (d.SuperErrors != 1 || d.ErrorsCorrected != 1 || rep.Errors[0].Kind != KindSuper || rep.Errors[0].Physical != uint64(off)) {
			t.Fatalf("repair: %+v %+v", d, rep.Errors)
		}
		if want := uint64(1 - i/2); d.SuperErrors != want || d.ErrorsFound != want || rep.Devices[0].ErrorsFound != 0 {
			t.Fatalf("run %d: %+v, want %d superblock errors", i, d, want)
		}
	}
	for _, c := range volume.ReadSuperCopies(devs[1]) {
		if c.Err != nil {
			t.Fatalf("after repair: %v", c.Err)
		}
	}
}

// TestScrubWalkLeavesRepairs: with copy 0 of every node damaged, the
// scrub's own walk of the extent and csum trees meets bad copies; it must
// leave them to the workers, which rewrite and count each once (a heal
// by the walk raced with them and counted a copy twice on CI).
func TestScrubWalkLeavesRepairs(t *testing.T) {
	pc := profiles[0]
	r := rand.New(rand.NewPCG(7, 7))
	devs, files := build(t, pc, r)
	fs := open(t, devs, false)
	var nodes []target
	for _, c := range candidates(t, fs, files) {
		if c.meta {
			nodes = append(nodes, c)
		}
	}
	for _, n := range nodes {
		ts, err := fs.Vol.Locate(n.logical)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := devs[ts[0].DevID-1].WriteAt(make([]byte, 64), int64(ts[0].Physical)+100); err != nil {
			t.Fatal(err)
		}
	}
	fs.Close()

	fs = open(t, devs, true)
	defer fs.Close()
	opened := fs.HealStats()
	rep, err := Run(fs, Options{Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	if hs := fs.HealStats(); hs != opened {
		t.Fatalf("reads during the scrub healed: %+v after, %+v before, want no change", hs, opened)
	}
	var corrected uint64
	for _, d := range rep.Devices {
		corrected += d.ErrorsCorrected
	}
	if corrected+uint64(opened.Repaired) != uint64(len(nodes)) {
		t.Fatalf("corrected %d + healed at open %d, want the %d damaged nodes", corrected, opened.Repaired, len(nodes))
	}
	if rep, err := Run(fs, Options{}); err != nil || !rep.Clean() {
		t.Fatalf("second scrub: %v, %+v", err, rep.Devices)
	}
}
