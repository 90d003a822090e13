package check

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// treeState is a file tree as "path type size sha256" lines.
func treeState(t *testing.T, f *fsys.FS) string {
	t.Helper()
	var lines []string
	var walk func(p string, in *fsys.Inode)
	walk = func(p string, in *fsys.Inode) {
		ents, err := f.List(in)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			c, err := f.Inode(e.Ino)
			if err != nil {
				t.Fatal(err)
			}
			cp := p + "/" + e.Name
			if c.IsDir() {
				lines = append(lines, cp+"/")
				walk(cp, c)
				continue
			}
			b := make([]byte, c.Size)
			if _, err := f.ReadAt(c, b, 0); err != nil && err != io.EOF {
				t.Fatalf("%s: %v", cp, err)
			}
			lines = append(lines, fmt.Sprintf("%s %d %d %x", cp, c.Nlink, c.Size, sha256.Sum256(b)))
		}
	}
	root, err := f.Resolve("/", false)
	if err != nil {
		t.Fatal(err)
	}
	walk("", root)
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestCrashReplayFiles records a file workload (creates, overwrites,
// truncates, renames, links, removes, in batched commits) on a raid1
// pair, then replays every write prefix: each state opens, checks clean
// and holds exactly the tree of one committed generation.
func TestCrashReplayFiles(t *testing.T) {
	const size = 256 << 20
	log := device.NewLog()
	p := store.CreateParams{FSID: [16]byte{8}, Csum: format.CsumCRC32C, NodeSize: 4096, SectorSize: 4096, Data: format.ProfileRaid1, Metadata: format.ProfileRaid1}
	for i := 0; i < 2; i++ {
		d := device.NewMemDevice(fmt.Sprintf("d%d", i), size)
		p.Devices = append(p.Devices, store.NewDevice{Dev: log.Wrap(d, i), Path: d.Name()})
	}
	st, tx, err := store.CreateTx(p)
	if err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return time.Unix(1700000000, 0) }
	f, err := fsys.New(st, fsys.Options{Now: now, BatchNodes: 40})
	if err != nil {
		t.Fatal(err)
	}
	f.Adopt(tx)
	if err := f.InitRoot(fsys.Attr{Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	states := map[uint64]string{f.Store().Super().Generation: treeState(t, f)}
	made := len(log.Ops()) // a crash inside mkfs promises nothing
	r := rand.New(rand.NewPCG(9, 9))
	names := []string{"/a", "/b", "/d/c", "/d/e", "/d"}
	succeeded := 0
	for step := 0; step < 120; step++ {
		p := names[r.IntN(len(names))]
		var err error
		var may []syscall.Errno // precondition errors this operation may return
		switch r.IntN(6) {
		case 0:
			_, err = f.Mkdir("/d", fsys.Attr{Mode: 0o755})
			may = []syscall.Errno{syscall.EEXIST}
		case 1, 2:
			in, rerr := f.Resolve(p, false)
			if rerr != nil {
				in, err = f.Create(p, fsys.Attr{Mode: 0o644})
			}
			if err == nil && in.IsRegular() {
				data := bytes.Repeat([]byte{byte(step)}, 1+r.IntN(30000))
				err = f.WriteAt(in, data, uint64(r.IntN(20000)))
			}
		case 3:
			if in, rerr := f.Resolve(p, false); rerr == nil && in.IsRegular() {
				err = f.Truncate(in, uint64(r.IntN(10000)))
			}
		case 4:
			err = f.Rename(p, names[r.IntN(len(names))])
			may = []syscall.Errno{syscall.EINVAL, syscall.EISDIR, syscall.ENOTDIR, syscall.ENOTEMPTY}
		case 5:
			if r.IntN(2) == 0 {
				err = f.Remove(p)
				may = []syscall.Errno{syscall.ENOTEMPTY}
			} else {
				err = f.Link(p, names[r.IntN(len(names))])
				may = []syscall.Errno{syscall.EEXIST, syscall.EPERM}
			}
		}
		if err == nil {
			succeeded++
		} else if !slices.ContainsFunc(append(may, syscall.ENOENT, syscall.ENOTDIR), func(e syscall.Errno) bool { return errors.Is(err, e) }) {
			t.Fatalf("step %d: %v", step, err)
		}
		// Commit points as the tools make them: only between operations.
		before := f.Store().Super().Generation
		if step%7 == 6 {
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
		} else if err := f.MaybeCommit(); err != nil {
			t.Fatal(err)
		}
		if g := f.Store().Super().Generation; g != before {
			states[g] = treeState(t, f)
		}
	}
	ops := log.Ops()
	verified := 0
	for upto := made; upto <= len(ops); upto += 1 + upto/400 {
		devs := fresh(2, size)
		if err := device.Replay(ops, upto, devs); err != nil {
			t.Fatal(err)
		}
		var ds []device.Device
		for _, d := range devs {
			ds = append(ds, d)
		}
		vol, err := volume.FromDevices(ds, false)
		if err != nil {
			t.Fatalf("prefix %d: %v", upto, err)
		}
		st, err := store.OpenVolume(vol)
		if err != nil {
			t.Fatalf("prefix %d: open: %v", upto, err)
		}
		g := st.Super().Generation
		ff, err := fsys.New(st, fsys.Options{})
		if err != nil {
			t.Fatal(err)
		}
		want, ok := states[g]
		if !ok {
			t.Fatalf("prefix %d: generation %d never committed", upto, g)
		}
		if got := treeState(t, ff); got != want {
			t.Fatalf("prefix %d: generation %d tree differs:\n%s\nwant\n%s", upto, g, got, want)
		}
		rep, err := CheckVolume(vol)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range rep.Problems {
			if !CrashTrace(p, rep.Generation) {
				t.Fatalf("prefix %d: %v", upto, p)
			}
		}
		verified++
	}
	if len(states) < 10 || verified < 100 || succeeded < 40 {
		t.Fatalf("weak test: %d generations, %d states verified, %d of 120 operations succeeded", len(states), verified, succeeded)
	}
	t.Logf("%d crash points verified over %d generations (%d ops, %d of 120 operations succeeded)", verified, len(states), len(ops), succeeded)
}
