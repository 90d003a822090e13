package check

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"strings"
	"syscall"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// TestFSRandomOps: random sequences of namespace and data operations keep
// the filesystem clean at every commit.
func TestFSRandomOps(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			runRandomOps(t, seed, 400)
		})
	}
}

func runRandomOps(t *testing.T, seed uint64, steps int) {
	f, devs := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	o := &randomOps{t: t, f: f, r: rand.New(rand.NewPCG(seed, 99)), names: []string{"a", "b", "c", "d1", "d2", "e"}}
	for step := 0; step < steps; step++ {
		if step%10 == 0 {
			o.list()
		}
		o.step(step)
		if step%50 == 49 || step == steps-1 {
			o.syncAndCheck(devs, step, step == steps-1)
		}
	}
}

// randomOps draws namespace and data operations on a filesystem and keeps
// a log of them for the failure message.
type randomOps struct {
	t        *testing.T
	f        *fsys.FS
	r        *rand.Rand
	names    []string
	existing []string // every path, refreshed now and then
	log      []string
}

// randomOp is one kind of operation on path p (q is a second path, for
// link and rename): what it did, for the log ("" when it found no inode
// at p), and its error.
type randomOp func(o *randomOps, step int, p, q string) (string, error)

// randomOpTable are the operations a step draws from, equally likely by
// index: creates are twice and writes three times as likely as the rest.
var randomOpTable = [...]randomOp{
	(*randomOps).create,
	(*randomOps).create,
	(*randomOps).mkdir,
	(*randomOps).write,
	(*randomOps).write,
	(*randomOps).write,
	(*randomOps).truncate,
	(*randomOps).link,
	(*randomOps).rename,
	(*randomOps).remove,
	(*randomOps).symlink,
	(*randomOps).xattr,
}

// list refreshes existing from a walk of the tree.
func (o *randomOps) list() {
	o.existing = o.existing[:0]
	var walk func(dir string, in *fsys.Inode)
	walk = func(dir string, in *fsys.Inode) {
		must(o.t, o.f.ReadDir(in, func(e fsys.DirEntry) bool {
			p := dir + "/" + e.Name
			o.existing = append(o.existing, p)
			if e.Type == format.FileTypeDir {
				walk(p, resolve(o.t, o.f, p))
			}
			return true
		}))
	}
	walk("", resolve(o.t, o.f, "/"))
}

// randPath is mostly an existing path or a new name next to one.
func (o *randomOps) randPath() string {
	r, names := o.r, o.names
	if len(o.existing) > 0 && r.IntN(4) > 0 {
		p := o.existing[r.IntN(len(o.existing))]
		if r.IntN(3) == 0 {
			p += "/" + names[r.IntN(len(names))]
		}
		return p
	}
	p := ""
	for d := r.IntN(2); d >= 0; d-- {
		p += "/" + names[r.IntN(len(names))]
	}
	return p
}

// step draws two paths and one operation, runs it and logs it. An errno
// is a refused operation (EEXIST, ENOTEMPTY, ...): fine. Anything else is
// a bug.
func (o *randomOps) step(step int) {
	r, names := o.r, o.names
	p, q := o.randPath(), o.randPath()
	if r.IntN(2) == 0 { // a new name in an existing directory
		q = path.Dir(q) + "/" + names[r.IntN(len(names))] + fmt.Sprint(r.IntN(4))
	}
	op, err := randomOpTable[r.IntN(len(randomOpTable))](o, step, p, q)
	if op != "" {
		o.log = append(o.log, fmt.Sprintf("%d %s: %v", step, op, err))
	}
	var errno syscall.Errno
	if err != nil && !errors.As(err, &errno) {
		o.t.Fatalf("step %d %s: %v", step, op, err)
	}
}

// syncAndCheck commits and checks the devices, the data too when asked;
// a problem fails the test with the last operations.
func (o *randomOps) syncAndCheck(devs []*device.MemDevice, step int, checkData bool) {
	must(o.t, o.f.Sync())
	if rep := fsckDevs(o.t, devs, Options{CheckData: checkData}); !rep.Clean() {
		o.t.Fatalf("after step %d: %v\nlast ops:\n%s", step, rep.Problems, strings.Join(o.log[max(0, len(o.log)-20):], "\n"))
	}
}

func (o *randomOps) create(_ int, p, _ string) (string, error) {
	_, err := o.f.Create(p, fsys.Attr{Mode: 0o644})
	return "create " + p, err
}

func (o *randomOps) mkdir(_ int, p, _ string) (string, error) {
	_, err := o.f.Mkdir(p, fsys.Attr{Mode: 0o755})
	return "mkdir " + p, err
}

// write writes step's pattern, or zeros (holes), over a random range.
func (o *randomOps) write(step int, p, _ string) (string, error) {
	r := o.r
	in, err := o.f.Resolve(p, false)
	if err != nil {
		return "", err
	}
	n, off := r.IntN(4)*r.IntN(7000), r.IntN(4)*r.IntN(9000)
	data := pattern(n, byte(step))
	if r.IntN(4) == 0 {
		data = make([]byte, n) // zeros: holes
	}
	return fmt.Sprintf("write %s %d+%d", p, off, n), o.f.WriteAt(in, data, uint64(off))
}

func (o *randomOps) truncate(_ int, p, _ string) (string, error) {
	in, err := o.f.Resolve(p, false)
	if err != nil {
		return "", err
	}
	size := uint64(o.r.IntN(3) * o.r.IntN(12000))
	return fmt.Sprintf("truncate %s %d", p, size), o.f.Truncate(in, size)
}

func (o *randomOps) link(_ int, p, q string) (string, error) {
	return "link " + p + " " + q, o.f.Link(p, q)
}

func (o *randomOps) rename(_ int, p, q string) (string, error) {
	return "rename " + p + " " + q, o.f.Rename(p, q)
}

func (o *randomOps) remove(_ int, p, _ string) (string, error) {
	return "remove " + p, o.f.Remove(p)
}

func (o *randomOps) symlink(_ int, p, _ string) (string, error) {
	_, err := o.f.Symlink(strings.Repeat("t", 1+o.r.IntN(3)*o.r.IntN(1500)), p, fsys.Attr{})
	return "symlink " + p, err
}

func (o *randomOps) xattr(_ int, p, _ string) (string, error) {
	in, err := o.f.Resolve(p, false)
	if err != nil {
		return "", err
	}
	name := fmt.Sprintf("user.%d", o.r.IntN(3))
	if o.r.IntN(3) == 0 {
		return "xattr " + p, o.f.RemoveXattr(in, name)
	}
	return "xattr " + p, o.f.SetXattr(in, name, pattern(o.r.IntN(200), 1))
}
