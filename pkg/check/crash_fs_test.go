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
	f := newLoggedFS(t, log, size)
	states := map[uint64]string{f.Store().Super().Generation: treeState(t, f)}
	made := len(log.Ops()) // a crash inside mkfs promises nothing
	w := &fileWorkload{f: f, r: rand.New(rand.NewPCG(9, 9)), names: []string{"/a", "/b", "/d/c", "/d/e", "/d"}}
	succeeded := 0
	for step := 0; step < 120; step++ {
		if w.step(t, step) {
			succeeded++
		}
		commitBetweenOps(t, f, step, states)
	}
	ops := log.Ops()
	verified := 0
	for upto := made; upto <= len(ops); upto += 1 + upto/400 {
		verifyFilesPrefix(t, ops, upto, size, states)
		verified++
	}
	if len(states) < 10 || verified < 100 || succeeded < 40 {
		t.Fatalf("weak test: %d generations, %d states verified, %d of 120 operations succeeded", len(states), verified, succeeded)
	}
	t.Logf("%d crash points verified over %d generations (%d ops, %d of 120 operations succeeded)", verified, len(states), len(ops), succeeded)
}

// newLoggedFS makes a filesystem with a root directory on a raid1 pair of
// logged devices, synced.
func newLoggedFS(t *testing.T, log *device.Log, size int64) *fsys.FS {
	t.Helper()
	st, tx, err := store.CreateTx(loggedParams(log, 8, layout{2, format.ProfileRaid1, format.ProfileRaid1}, size))
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
	return f
}

// fileWorkload draws random file operations on a few names.
type fileWorkload struct {
	f     *fsys.FS
	r     *rand.Rand
	names []string
}

// fileOp is one kind of operation on path p: it returns the precondition
// errors it may return (besides ENOENT and ENOTDIR) and its error.
type fileOp func(w *fileWorkload, p string, step int) ([]syscall.Errno, error)

// fileOps are the operations a step draws from, equally likely by index
// (a write is twice as likely as the others).
var fileOps = [...]fileOp{
	(*fileWorkload).mkdir,
	(*fileWorkload).write,
	(*fileWorkload).write,
	(*fileWorkload).truncate,
	(*fileWorkload).rename,
	(*fileWorkload).removeOrLink,
}

// step runs one random operation: true when it succeeded, false when it
// was refused by a precondition; any other error fails the test.
func (w *fileWorkload) step(t *testing.T, step int) bool {
	t.Helper()
	p := w.names[w.r.IntN(len(w.names))]
	may, err := fileOps[w.r.IntN(len(fileOps))](w, p, step)
	if err == nil {
		return true
	}
	if !slices.ContainsFunc(append(may, syscall.ENOENT, syscall.ENOTDIR), func(e syscall.Errno) bool { return errors.Is(err, e) }) {
		t.Fatalf("step %d: %v", step, err)
	}
	return false
}

func (w *fileWorkload) mkdir(string, int) ([]syscall.Errno, error) {
	_, err := w.f.Mkdir("/d", fsys.Attr{Mode: 0o755})
	return []syscall.Errno{syscall.EEXIST}, err
}

// write writes step's byte over a random range of p, creating it first
// when it does not exist.
func (w *fileWorkload) write(p string, step int) ([]syscall.Errno, error) {
	var err error
	in, rerr := w.f.Resolve(p, false)
	if rerr != nil {
		in, err = w.f.Create(p, fsys.Attr{Mode: 0o644})
	}
	if err == nil && in.IsRegular() {
		data := bytes.Repeat([]byte{byte(step)}, 1+w.r.IntN(30000))
		err = w.f.WriteAt(in, data, uint64(w.r.IntN(20000)))
	}
	return nil, err
}

func (w *fileWorkload) truncate(p string, _ int) ([]syscall.Errno, error) {
	if in, rerr := w.f.Resolve(p, false); rerr == nil && in.IsRegular() {
		return nil, w.f.Truncate(in, uint64(w.r.IntN(10000)))
	}
	return nil, nil
}

func (w *fileWorkload) rename(p string, _ int) ([]syscall.Errno, error) {
	err := w.f.Rename(p, w.names[w.r.IntN(len(w.names))])
	return []syscall.Errno{syscall.EINVAL, syscall.EISDIR, syscall.ENOTDIR, syscall.ENOTEMPTY}, err
}

func (w *fileWorkload) removeOrLink(p string, _ int) ([]syscall.Errno, error) {
	if w.r.IntN(2) == 0 {
		return []syscall.Errno{syscall.ENOTEMPTY}, w.f.Remove(p)
	}
	err := w.f.Link(p, w.names[w.r.IntN(len(w.names))])
	return []syscall.Errno{syscall.EEXIST, syscall.EPERM}, err
}

// commitBetweenOps makes the commit points as the tools make them: only
// between operations, a sync every seventh step. A generation it commits
// goes into states with its tree.
func commitBetweenOps(t *testing.T, f *fsys.FS, step int, states map[uint64]string) {
	t.Helper()
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

// verifyFilesPrefix rebuilds the pair as the first upto operations left
// it: it must open, hold the tree of the generation it says, and check
// clean but for crash traces.
func verifyFilesPrefix(t *testing.T, ops []device.Op, upto int, size int64, states map[uint64]string) {
	t.Helper()
	devs := fresh(2, size)
	if err := device.Replay(ops, upto, devs); err != nil {
		t.Fatal(err)
	}
	vol, err := volume.FromDevices(asDevices(devs), false)
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
	checkCrashClean(t, vol, fmt.Sprintf("prefix %d", upto))
}
