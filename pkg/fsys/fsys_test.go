package fsys

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

var epoch = time.Unix(1700000000, 0)

func newTestFS(t testing.TB, size int64, ndev int) (*FS, []*device.MemDevice) {
	t.Helper()
	p := store.CreateParams{FSID: [16]byte{4}, Csum: format.CsumCRC32C, NodeSize: 16384, SectorSize: 4096, Data: format.ProfileSingle, Metadata: format.ProfileDup}
	if ndev > 1 {
		p.Data, p.Metadata = format.ProfileRaid0, format.ProfileRaid1
	}
	var devs []*device.MemDevice
	for i := 0; i < ndev; i++ {
		d := device.NewMemDevice(fmt.Sprintf("m%d", i), size)
		devs = append(devs, d)
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
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	return f, devs
}

func reopenFS(t testing.TB, devs []*device.MemDevice) *FS {
	t.Helper()
	var ds []device.Device
	for _, d := range devs {
		d.Crash() // only what was flushed survives
		ds = append(ds, d)
	}
	return openDevices(t, ds)
}

// openDevices opens a filesystem on devices (writable).
func openDevices(t testing.TB, ds []device.Device) *FS {
	t.Helper()
	return openWith(t, ds, true, Options{Now: func() time.Time { return epoch }})
}

// openWith opens a filesystem on devices with options opt.
func openWith(t testing.TB, ds []device.Device, write bool, opt Options) *FS {
	t.Helper()
	vol, err := volume.FromDevices(ds, write)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenVolume(vol)
	if err != nil {
		t.Fatal(err)
	}
	f, err := New(st, opt)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func readAll(t testing.TB, f *FS, p string) []byte {
	t.Helper()
	in, err := f.Resolve(p, true)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, in.Size)
	if _, err := f.ReadAt(in, b, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return b
}

func TestWriteReadPatterns(t *testing.T) {
	f, devs := newTestFS(t, 512<<20, 1)
	in, err := f.Create("/a", Attr{Mode: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	model := []byte{}
	write := func(off int, p []byte) {
		t.Helper()
		if err := f.WriteAt(in, p, uint64(off)); err != nil {
			t.Fatal(err)
		}
		if len(model) < off+len(p) {
			model = append(model, make([]byte, off+len(p)-len(model))...)
		}
		copy(model[off:], p)
	}
	r := rand.New(rand.NewPCG(1, 2))
	rnd := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	write(0, []byte("hello"))                // inline
	write(3, []byte("p me"))                 // still inline
	write(5000, rnd(10000))                  // leaves inline: hole, then extent
	write(7000, rnd(100))                    // overwrite in the middle: split
	write(20<<20, rnd(9<<20))                // sparse gap, two extents
	write(20<<20+4096, make([]byte, 3*4096)) // zeros written over data: hole
	write(1<<20, rnd(1))                     // one byte in a hole
	for _, sync := range []bool{false, true} {
		if sync {
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
			f = reopenFS(t, devs)
		}
		if got := readAll(t, f, "/a"); !bytes.Equal(got, model) {
			t.Fatalf("sync=%v: contents differ (len %d vs %d)", sync, len(got), len(model))
		}
	}
	in, _ = f.Resolve("/a", false)
	// Sparse: the 20 MiB gap and the zero run take no space.
	if in.NBytes >= uint64(len(model))-20<<20 {
		t.Fatalf("nbytes %d for %d bytes with a 20 MiB hole", in.NBytes, len(model))
	}
	if err := f.Truncate(in, 6000); err != nil {
		t.Fatal(err)
	}
	model = model[:6000]
	if err := f.Truncate(in, 9000); err != nil {
		t.Fatal(err)
	}
	model = append(model, make([]byte, 3000)...)
	if got := readAll(t, f, "/a"); !bytes.Equal(got, model) {
		t.Fatal("after truncate: contents differ")
	}
}

// TestModel runs random namespace and data operations against a real
// directory on disk, comparing results and the whole tree, across
// commits, reopens and crashes.
// TestModel runs random namespace and data operations on ddfs and on a
// host directory (the model) and requires the same errno from both and
// the same tree. The model never looks at the image: after an abort it
// goes back to its own copy of the last committed state, which is what
// the aborted transaction must leave.
func TestModel(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			runModel(t, seed, 1500)
		})
	}
}

func runModel(t *testing.T, seed uint64, steps int) {
	f, devs := newTestFS(t, 256<<20, 2)
	dir := t.TempDir()
	var committed []hostEntry // the model's copy of the last committed state
	r := rand.New(rand.NewPCG(seed, 77))
	names := []string{"a", "b", "c", "dir1", "dir2", "x y", "ü"}
	randPath := func() string {
		p := "" // mostly shallow, so that parents exist and operations succeed
		for d := r.IntN(3) * r.IntN(2); d >= 0; d-- {
			p += "/" + names[r.IntN(len(names))]
		}
		return p
	}
	// pick is a path the model holds half of the time (dirsOnly: a new
	// name in one of its directories), so operations also succeed.
	pick := func(dirsOnly bool) string {
		if r.IntN(2) == 0 {
			return randPath()
		}
		var have []string
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && p != dir && (!dirsOnly || d.IsDir()) {
				have = append(have, p[len(dir):])
			}
			return nil
		})
		if dirsOnly {
			have = append(have, "")
			return have[r.IntN(len(have))] + "/" + names[r.IntN(len(names))]
		}
		if len(have) == 0 {
			return randPath()
		}
		return have[r.IntN(len(have))]
	}
	succeeded, aborts := 0, 0
	var okByOp [9]int
	for step := 0; step < steps; step++ {
		if os.Getenv("DDFS_DEBUG_MODEL") != "" {
			t.Logf("step %d", step)
			compareTree(t, f, dir)
		}
		op := r.IntN(11)
		p := pick(op <= 2)
		host := filepath.Join(dir, p)
		var gotErr, wantErr error
		switch op {
		case 0, 1:
			_, gotErr = f.Create(p, Attr{Mode: 0o644})
			var fh *os.File
			fh, wantErr = os.OpenFile(host, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
			if fh != nil {
				fh.Close()
			}
		case 2:
			_, gotErr = f.Mkdir(p, Attr{Mode: 0o755})
			wantErr = os.Mkdir(host, 0o755)
		case 3, 4:
			data := bytes.Repeat([]byte{byte(step)}, r.IntN(3)*r.IntN(9000))
			off := r.IntN(3) * r.IntN(6000)
			in, err := f.Resolve(p, false)
			if err == nil {
				gotErr = f.WriteAt(in, data, uint64(off))
			} else {
				gotErr = err
			}
			if fh, err := os.OpenFile(host, os.O_WRONLY, 0); err == nil {
				_, wantErr = fh.WriteAt(data, int64(off))
				fh.Close()
			} else {
				wantErr = err
			}
		case 5:
			gotErr = f.Remove(p)
			wantErr = syscall.Rmdir(host)
			if errors.Is(wantErr, syscall.ENOTDIR) {
				wantErr = os.Remove(host)
			}
		case 6:
			q := pick(r.IntN(2) == 0)
			gotErr = f.Rename(p, q)
			wantErr = syscall.Rename(host, filepath.Join(dir, q)) // os.Rename refuses to replace a directory
		case 7:
			q := pick(true)
			gotErr = f.Link(p, q)
			wantErr = os.Link(host, filepath.Join(dir, q))
		case 8:
			size := r.IntN(5000)
			in, err := f.Resolve(p, false)
			if err == nil {
				gotErr = f.Truncate(in, uint64(size))
			} else {
				gotErr = err
			}
			wantErr = os.Truncate(host, int64(size))
		case 9:
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
			committed = snapHost(t, dir)
			if r.IntN(2) == 0 {
				f = reopenFS(t, devs)
			}
			continue
		case 10:
			if r.IntN(4) != 0 {
				continue
			}
			// A failed operation aborts the transaction in the tools: all
			// since the last commit is gone, in ddfs and in the model.
			f.Abort()
			f = reopenFS(t, devs)
			restoreHost(t, dir, committed)
			aborts++
			continue
		}
		got, want := errnoOf(t, gotErr), errnoOf(t, wantErr)
		if got != want {
			t.Fatalf("step %d: %v: ddfs %v (%v), host %v (%v)", step, p, got, gotErr, want, wantErr)
		}
		if gotErr == nil {
			succeeded++
			okByOp[op]++
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	compareTree(t, reopenFS(t, devs), dir)
	// A run where almost everything fails its precondition tests little.
	if succeeded < steps/4 || slices.Min(okByOp[:]) < 10 || aborts < 5 {
		t.Fatalf("%d of %d operations succeeded (by kind %v), %d aborts: too few to test", succeeded, steps, okByOp, aborts)
	}
	t.Logf("%d of %d operations succeeded (by kind %v), %d aborts", succeeded, steps, okByOp, aborts)
}

// errnoOf is the errno an operation failed with, 0 for success; an error
// that carries none fails the test (every fsys error a caller can expect
// here is an errno).
func errnoOf(t *testing.T, err error) syscall.Errno {
	t.Helper()
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if !errors.As(err, &e) {
		t.Fatalf("error without an errno: %v", err)
	}
	return e
}

// hostEntry is one name of the model's snapshot of a committed state.
type hostEntry struct {
	rel  string // path under the model's directory, parents first
	dir  bool
	ino  uint64 // host inode: names sharing one are hard links
	data []byte
}

// snapHost records the model's tree (directories, contents, hard links).
func snapHost(t *testing.T, dir string) []hostEntry {
	t.Helper()
	var out []hostEntry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		e := hostEntry{rel: p[len(dir):], dir: d.IsDir()}
		if !e.dir {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			e.ino = fi.Sys().(*syscall.Stat_t).Ino
			if e.data, err = os.ReadFile(p); err != nil {
				return err
			}
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// restoreHost makes the model's directory hold exactly snap.
func restoreHost(t *testing.T, dir string, snap []hostEntry) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	first := map[uint64]string{}
	for _, e := range snap {
		to := filepath.Join(dir, e.rel)
		var err error
		if e.dir {
			err = os.Mkdir(to, 0o755)
		} else if f, ok := first[e.ino]; ok {
			err = os.Link(f, to)
		} else {
			first[e.ino] = to
			err = os.WriteFile(to, e.data, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// compareTree checks names, types, contents and hard-link identity.
func compareTree(t *testing.T, f *FS, dir string) {
	t.Helper()
	var walk func(p string)
	inoOf := map[uint64]uint64{} // host ino -> image ino
	walk = func(p string) {
		in, err := f.Resolve(p, false)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		f.ReadDir(in, func(e DirEntry) bool { got = append(got, e.Name); return true })
		ents, _ := os.ReadDir(filepath.Join(dir, p))
		var want []string
		for _, e := range ents {
			want = append(want, e.Name())
		}
		sort.Strings(got)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: entries %v, host %v", p, got, want)
		}
		for _, name := range want {
			cp := p + "/" + name
			hi, _ := os.Lstat(filepath.Join(dir, cp))
			ci, err := f.Resolve(cp, false)
			if err != nil {
				t.Fatal(err)
			}
			hino := hi.Sys().(*syscall.Stat_t).Ino
			if prev, ok := inoOf[hino]; ok && prev != ci.Ino {
				t.Fatalf("%s: hard link identity lost", cp)
			}
			inoOf[hino] = ci.Ino
			if hi.IsDir() != ci.IsDir() {
				t.Fatalf("%s: type differs", cp)
			}
			if hi.IsDir() {
				walk(cp)
				continue
			}
			hb, _ := os.ReadFile(filepath.Join(dir, cp))
			if !bytes.Equal(hb, readAll(t, f, cp)) {
				t.Fatalf("%s: contents differ", cp)
			}
			if uint32(hi.Sys().(*syscall.Stat_t).Nlink) != ci.Nlink {
				t.Fatalf("%s: nlink %d, host %d", cp, ci.Nlink, hi.Sys().(*syscall.Stat_t).Nlink)
			}
		}
	}
	walk("")
}

// A device number is kept only for a device: mknod(2) ignores it for a
// fifo, socket or file, and fsck flags one there (RDEV), so a create
// (from mknod, a tar or a send stream) with one drops it.
func TestRdevOnlyForDevices(t *testing.T) {
	f, _ := newTestFS(t, 64<<20, 1)
	for _, tc := range []struct {
		name string
		mode uint32
		want uint64
	}{
		{"/fifo", syscall.S_IFIFO | 0o644, 0},
		{"/sock", syscall.S_IFSOCK | 0o644, 0},
		{"/file", syscall.S_IFREG | 0o644, 0},
		{"/chr", syscall.S_IFCHR | 0o644, 0x0501},
		{"/blk", syscall.S_IFBLK | 0o644, 0x0501},
	} {
		if _, err := f.Create(tc.name, Attr{Mode: tc.mode, Rdev: 0x0501}); err != nil {
			t.Fatal(err)
		}
		in, err := f.Resolve(tc.name, false)
		if err != nil || in.Rdev != tc.want {
			t.Errorf("%s: rdev %#x (%v), want %#x", tc.name, in.Rdev, err, tc.want)
		}
	}
}
