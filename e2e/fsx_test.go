package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fsx is an exerciser in the manner of fsx (file system exerciser): one
// file changed by random writes, writes and reads through mmap,
// truncates, punched holes, zeroed and allocated ranges, renames and
// reopens, each checked against an in-memory shadow of what the file
// must hold (the range it touched, and the size) after every step, and
// the whole file every fullEvery steps.
type fsx struct {
	t      *testing.T
	rnd    *rand.Rand
	seed   int64
	names  [2]string
	cur    int
	f      *os.File
	shadow []byte
	maxLen int
	pool   [][]byte // blocks written again and again, for dedupe to find
	log    []string // the last steps, for a failure report
	counts map[string]int
}

const (
	fsxMaxLen    = 256 << 10
	fsxMaxOp     = 64 << 10
	fsxFullEvery = 1000
	falZeroRange = 0x10
)

// fsxOps is the number of steps: DDFS_FSX_OPS, or a count that keeps
// make test short.
func fsxOps(t *testing.T) int {
	if s := os.Getenv("DDFS_FSX_OPS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("DDFS_FSX_OPS=%q", s)
		}
		return n
	}
	return 3000
}

func newFSX(t *testing.T, dir string, seed int64) *fsx {
	x := &fsx{t: t, rnd: rand.New(rand.NewSource(seed)), seed: seed, maxLen: fsxMaxLen, counts: map[string]int{}}
	x.names = [2]string{filepath.Join(dir, "fsx.a"), filepath.Join(dir, "fsx.b")}
	for i := 0; i < 8; i++ {
		b := make([]byte, 4096)
		x.rnd.Read(b)
		x.pool = append(x.pool, b)
	}
	f, err := os.OpenFile(x.names[0], os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	x.f = f
	return x
}

func (x *fsx) fail(format string, args ...any) {
	x.t.Helper()
	x.t.Fatalf("fsx seed %d step %d: %s\nlast steps:\n%s", x.seed, len(x.log), fmt.Sprintf(format, args...), strings.Join(x.log[max(0, len(x.log)-25):], "\n"))
}

func (x *fsx) must(err error, what string) {
	x.t.Helper()
	if err != nil {
		x.fail("%s: %v", what, err)
	}
}

// data makes n bytes to write at off: random, copies of pool blocks
// (aligned, so dedupe can share them) or zeros (holes).
func (x *fsx) data(off, n int) []byte {
	b := make([]byte, n)
	switch x.rnd.Intn(6) {
	case 0, 1:
		for i := range b {
			if (off+i)%4096 == 0 || i == 0 {
				copy(b[i:], x.pool[x.rnd.Intn(len(x.pool))][(off+i)%4096:])
			}
		}
	case 2:
		// zeros
	default:
		x.rnd.Read(b)
	}
	return b
}

// span picks a range starting below limit.
func (x *fsx) span(limit int) (int, int) {
	off := x.rnd.Intn(max(limit, 1))
	return off, 1 + x.rnd.Intn(min(fsxMaxOp, x.maxLen-off))
}

func (x *fsx) resize(n int) {
	if n <= len(x.shadow) {
		x.shadow = x.shadow[:n]
		return
	}
	x.shadow = append(x.shadow, make([]byte, n-len(x.shadow))...)
}

func (x *fsx) step() {
	size := len(x.shadow)
	var op string
	var off, n int
	fd := int(x.f.Fd())
	switch r := x.rnd.Intn(100); {
	case r < 25:
		op = "write"
		off, n = x.span(x.maxLen)
		b := x.data(off, n)
		_, err := x.f.WriteAt(b, int64(off))
		x.must(err, "pwrite")
		x.resize(max(size, off+n))
		copy(x.shadow[off:], b)
	case r < 37:
		op = "mapwrite"
		off, n = x.span(x.maxLen)
		if off+n > size {
			x.must(x.f.Truncate(int64(off+n)), "ftruncate before mapwrite")
			x.resize(off + n)
		}
		b := x.data(off, n)
		x.mapped(off, n, func(m []byte) { copy(m, b) })
		copy(x.shadow[off:], b)
	case r < 47:
		op = "mapread"
		if size == 0 {
			return
		}
		off = x.rnd.Intn(size)
		n = 1 + x.rnd.Intn(min(fsxMaxOp, size-off))
		x.mapped(off, n, func(m []byte) { x.compare("mapread", off, m) })
	case r < 57:
		op = "read"
		off, n = x.span(max(size, 1))
	case r < 65:
		op = "truncate"
		n = x.rnd.Intn(x.maxLen + 1)
		x.must(x.f.Truncate(int64(n)), "ftruncate")
		x.resize(n)
	case r < 73:
		op = "punch"
		if size == 0 {
			return
		}
		off, n = x.span(size)
		x.must(unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(off), int64(n)), "punch hole")
		clear(x.shadow[off:min(off+n, size)])
	case r < 77:
		op = "zerorange"
		off, n = x.span(x.maxLen)
		x.must(unix.Fallocate(fd, falZeroRange, int64(off), int64(n)), "zero range")
		x.resize(max(size, off+n))
		clear(x.shadow[off : off+n])
	case r < 81:
		op = "fallocate"
		off, n = x.span(x.maxLen)
		x.must(unix.Fallocate(fd, 0, int64(off), int64(n)), "fallocate")
		x.resize(max(size, off+n))
	case r < 85:
		op = "rename"
		x.must(x.f.Close(), "close")
		x.must(os.Rename(x.names[x.cur], x.names[1-x.cur]), "rename")
		x.cur = 1 - x.cur
		x.reopen()
	case r < 90:
		op = "reopen"
		x.must(x.f.Close(), "close")
		x.reopen()
	case r < 92:
		op = "fsync"
		x.must(x.f.Sync(), "fsync")
	default:
		op = "seek"
		if size == 0 {
			return
		}
		off = x.rnd.Intn(size)
		x.seek(off)
	}
	x.counts[op]++
	x.log = append(x.log, fmt.Sprintf("%d %s off=%d n=%d size=%d->%d", len(x.log), op, off, n, size, len(x.shadow)))
	x.check(off, n)
}

func (x *fsx) reopen() {
	f, err := os.OpenFile(x.names[x.cur], os.O_RDWR, 0)
	x.must(err, "reopen")
	x.f = f
}

// mapped runs fn on the file bytes [off, off+n) mapped shared; changes
// are written back (msync) before it returns.
func (x *fsx) mapped(off, n int, fn func([]byte)) {
	pg := off &^ (os.Getpagesize() - 1)
	m, err := unix.Mmap(int(x.f.Fd()), int64(pg), off+n-pg, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	x.must(err, "mmap")
	fn(m[off-pg:])
	x.must(unix.Msync(m, unix.MS_SYNC), "msync")
	x.must(unix.Munmap(m), "munmap")
}

// seek checks SEEK_DATA and SEEK_HOLE at off against the shadow: what
// they skip must read as zeros.
func (x *fsx) seek(off int) {
	fd := int(x.f.Fd())
	d, err := unix.Seek(fd, int64(off), unix.SEEK_DATA)
	if errors.Is(err, unix.ENXIO) {
		d = int64(len(x.shadow))
	} else if err != nil || d < int64(off) || d > int64(len(x.shadow)) {
		x.fail("SEEK_DATA at %d: %d, %v (size %d)", off, d, err, len(x.shadow))
	}
	if i := bytes.IndexFunc(x.shadow[off:d], func(r rune) bool { return r != 0 }); i >= 0 {
		x.fail("SEEK_DATA at %d skipped to %d over data at %d", off, d, off+i)
	}
	h, err := unix.Seek(fd, int64(off), unix.SEEK_HOLE)
	if err != nil || h < int64(off) || h > int64(len(x.shadow)) {
		x.fail("SEEK_HOLE at %d: %d, %v (size %d)", off, h, err, len(x.shadow))
	}
	if h < int64(len(x.shadow)) && x.shadow[h] != 0 {
		x.fail("SEEK_HOLE at %d: %d holds data", off, h)
	}
}

// check compares the size, and the file bytes around the step's range.
func (x *fsx) check(off, n int) {
	st, err := x.f.Stat()
	x.must(err, "fstat")
	if st.Size() != int64(len(x.shadow)) {
		x.fail("size %d, want %d", st.Size(), len(x.shadow))
	}
	if len(x.log)%fsxFullEvery == 0 {
		off, n = 0, len(x.shadow)
	}
	off = max(0, off-512)
	end := min(off+n+1024, len(x.shadow))
	if off >= end {
		return
	}
	b := make([]byte, end-off)
	got, err := x.f.ReadAt(b, int64(off))
	if got != len(b) {
		x.fail("pread %d at %d: %d, %v", len(b), off, got, err)
	}
	x.compare("pread", off, b)
}

func (x *fsx) compare(what string, off int, b []byte) {
	want := x.shadow[off : off+len(b)]
	if bytes.Equal(b, want) {
		return
	}
	i := 0
	for b[i] == want[i] {
		i++
	}
	x.fail("%s: mismatch at file offset %d: got %#x, want %#x", what, off+i, b[i], want[i])
}

// finish checks the whole file once more and closes it; it returns the
// file's image path and what it must hold.
func (x *fsx) finish() (string, []byte) {
	x.check(0, len(x.shadow))
	x.must(x.f.Close(), "close")
	return "/" + filepath.Base(x.names[x.cur]), x.shadow
}

// TestFSX runs the exerciser on a dedupe+zstd image and on a raid1 set,
// mounted with a 1 s commit timer so commits land in the middle; then
// unmounts, requires fsck clean (with the data) and the committed file to
// equal the shadow. DDFS_FSX_OPS=100000 for the long run.
func TestFSX(t *testing.T) {
	needFUSE(t)
	ops := fsxOps(t)
	seed := time.Now().UnixNano()
	if s := os.Getenv("DDFS_FSX_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	for _, tc := range []struct {
		name string
		mkfs []string
	}{
		{"dedupe-zstd", []string{"-b", "512M", "--dedupe", "--compress", "zstd:3", "a.img"}},
		{"raid1", []string{"-b", "512M", "-d", "raid1", "-m", "raid1", "a.img", "b.img"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			must(t, run(t, dir, "mkfs.ddfs", append([]string{"-q"}, tc.mkfs...)...), 0)
			m := mountImage(t, dir, "a.img", "-o", "commit=1")
			x := newFSX(t, m.dir, seed)
			start := time.Now()
			for i := 0; i < ops; i++ {
				x.step()
			}
			name, want := x.finish()
			t.Logf("%s: %d steps in %v, seed %d, 0 mismatches: %v", tc.name, ops, time.Since(start).Round(time.Millisecond), seed, x.counts)
			m.unmount()
			fsckClean(t, dir, "a.img")
			got := must(t, run(t, dir, "ddfs", "cat", "a.img:"+name), 0).stdout
			if got != string(want) {
				t.Fatalf("committed %s: %d bytes differ from the shadow's %d", name, len(got), len(want))
			}
		})
	}
}
