package fsys

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/ddfs/ddfs/format"
)

// ioTree is a generated tree: files with their contents, directories,
// symlinks and special files, built into an image by build.
type ioTree struct {
	files    map[string][]byte // regular files (hard links listed under each name)
	dirs     []string
	links    map[string]string // symlink -> target
	specials map[string]uint32 // fifo, device: mode with type bits
}

func ioRandBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// buildIOTree makes the generated tree in f and returns the model.
func buildIOTree(t *testing.T, f *FS) *ioTree {
	t.Helper()
	r := rand.New(rand.NewPCG(7, 11))
	m := &ioTree{files: map[string][]byte{}, links: map[string]string{}, specials: map[string]uint32{}}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	mkdir := func(p string, mode uint32) {
		t.Helper()
		_, err := f.Mkdir("/"+p, Attr{Mode: mode})
		must(err)
		m.dirs = append(m.dirs, p)
	}
	write := func(p string, mode uint32, data []byte) *Inode {
		t.Helper()
		in, err := f.Create("/"+p, Attr{Mode: mode})
		must(err)
		// In pieces, to exercise extending writes.
		for off := 0; off < len(data); off += 3 << 20 {
			must(f.WriteAt(in, data[off:min(off+3<<20, len(data))], uint64(off)))
		}
		m.files[p] = data
		must(f.MaybeCommit())
		return in
	}
	symlink := func(target, p string) {
		t.Helper()
		_, err := f.Symlink(target, "/"+p, Attr{})
		must(err)
		m.links[p] = target
	}

	mkdir("a", 0o755)
	mkdir("a/b", 0o750)
	mkdir("a/b/c", 0o700)
	mkdir("a/b/c/d", 0o755)
	mkdir("empty", 0o755)
	mkdir("sticky", 0o1777)
	mkdir("many", 0o755)
	write("top.txt", 0o644, []byte("hello, world\n"))
	write("a/empty", 0o644, nil)
	write("a/b/c/d/empty2", 0o600, nil)
	write("a/inline", 0o644, ioRandBytes(r, 2048))  // MaxInline exactly
	write("a/b/small", 0o644, ioRandBytes(r, 2049)) // one past inline
	write("a/b/c/big", 0o644, ioRandBytes(r, 5<<20+123))
	write("a/b/c/d/huge", 0o644, ioRandBytes(r, 9<<20+1)) // > maxExtent: several extents
	write("suid", 0o4755, []byte("#!/bin/sh\n"))
	write("sgid", 0o2711, []byte("x"))
	for i := range 300 { // a directory spanning several leaves, names out of order
		name := path.Join("many", strings.Repeat("z", i%7)+string(rune('a'+i%26))+string(rune('0'+i/26)))
		write(name, 0o644, ioRandBytes(r, i%50))
	}

	// Sparse: data, a 3 MiB hole, data, a hole to the end.
	sp, err := f.Create("/sparse", Attr{Mode: 0o644})
	must(err)
	head, mid := ioRandBytes(r, 100), ioRandBytes(r, 5000)
	must(f.WriteAt(sp, head, 0))
	must(f.WriteAt(sp, mid, 3<<20))
	must(f.Truncate(sp, 12<<20))
	data := make([]byte, 12<<20)
	copy(data, head)
	copy(data[3<<20:], mid)
	m.files["sparse"] = data

	// Hard links.
	must(f.Link("/a/b/c/big", "/a/hardbig"))
	m.files["a/hardbig"] = m.files["a/b/c/big"]
	must(f.Link("/top.txt", "/a/b/c/d/hardtop"))
	m.files["a/b/c/d/hardtop"] = m.files["top.txt"]

	// Symlinks to files and directories, relative and absolute.
	symlink("top.txt", "lnk-top")
	symlink("a/b", "lnk-dir")
	symlink("/a/b/c", "a/lnk-abs-dir")
	symlink("../../../../top.txt", "a/b/c/d/lnk-up")
	symlink("../../..", "a/b/c/lnk-root")
	symlink("lnk-top", "lnk-chain") // a link to a link
	symlink("../lnk-dir/small", "a/lnk-via-dir")
	symlink("../a/b/small", "many/lnk-out") // out of the fs.Sub TestFS checks

	// Special files read as empty.
	for p, mode := range map[string]uint32{"fifo": syscall.S_IFIFO | 0o644, "a/chr": syscall.S_IFCHR | 0o600, "a/blk": syscall.S_IFBLK | 0o660, "sock": syscall.S_IFSOCK | 0o755} {
		_, err := f.Create("/"+p, Attr{Mode: mode, Rdev: 0x0801})
		must(err)
		m.specials[p] = mode
	}
	must(f.Sync())
	return m
}

// names lists every path of the model, as TestFS's expected list.
func (m *ioTree) names() []string {
	var out []string
	out = append(out, m.dirs...)
	for p := range m.files {
		out = append(out, p)
	}
	for p := range m.links {
		out = append(out, p)
	}
	for p := range m.specials {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

func TestIOFSGenerated(t *testing.T) {
	f, _ := newTestFS(t, 512<<20, 1)
	m := buildIOTree(t, f)
	v := f.IOFS()

	start := time.Now()
	// The first name with a slash picks the directory TestFS also checks
	// through fs.Sub: "many" (small files, a link out of it).
	if err := fstest.TestFS(v, append([]string{"many/lnk-out"}, m.names()...)...); err != nil {
		t.Fatal(err)
	}
	t.Logf("fstest.TestFS: %v", time.Since(start))
	if f.tx != nil {
		t.Fatal("reading through the view began a transaction")
	}

	// Nothing beyond the model.
	var walked []string
	err := fs.WalkDir(v, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != "." {
			walked = append(walked, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := m.names(); !slices.Equal(walked, want) {
		t.Fatalf("walked %q\nwant %q", walked, want)
	}

	// Contents, through a symlink or not.
	for p, want := range m.files {
		got, err := fs.ReadFile(v, p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: contents differ (%d bytes, want %d)", p, len(got), len(want))
		}
	}
	for p, want := range map[string]string{"lnk-top": "top.txt", "lnk-chain": "top.txt", "a/b/c/d/lnk-up": "top.txt", "a/lnk-via-dir": "a/b/small", "lnk-dir/small": "a/b/small", "a/lnk-abs-dir/big": "a/b/c/big", "a/b/c/lnk-root/top.txt": "top.txt"} {
		got, err := fs.ReadFile(v, p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, m.files[want]) {
			t.Fatalf("%s: not the contents of %s", p, want)
		}
	}
	for p, target := range m.links {
		got, err := fs.ReadLink(v, p)
		if err != nil || got != target {
			t.Fatalf("ReadLink(%s) = %q, %v; want %q", p, got, err, target)
		}
	}

	// Modes, Stat vs Lstat, Sys.
	modes := map[string]fs.FileMode{
		".": fs.ModeDir | 0o755, "a/b": fs.ModeDir | 0o750, "sticky": fs.ModeDir | fs.ModeSticky | 0o777,
		"top.txt": 0o644, "suid": fs.ModeSetuid | 0o755, "sgid": fs.ModeSetgid | 0o711,
		"fifo": fs.ModeNamedPipe | 0o644, "a/chr": fs.ModeDevice | fs.ModeCharDevice | 0o600,
		"a/blk": fs.ModeDevice | 0o660, "sock": fs.ModeSocket | 0o755,
		"lnk-dir": fs.ModeDir | 0o750, // Stat follows
	}
	for p, want := range modes {
		fi, err := fs.Stat(v, p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode(), want)
		}
		if fi.Name() != path.Base(p) {
			t.Errorf("%s: name %q", p, fi.Name())
		}
	}
	li, err := fs.Lstat(v, "lnk-dir")
	if err != nil {
		t.Fatal(err)
	}
	if li.Mode() != fs.ModeSymlink|0o777 || li.Size() != int64(len("a/b")) {
		t.Fatalf("Lstat(lnk-dir) = %v", li)
	}
	fi, _ := fs.Stat(v, "sparse")
	in := fi.Sys().(*Inode)
	if fi.Size() != 12<<20 || in.NBytes > 16<<10 {
		t.Fatalf("sparse: size %d, nbytes %d", fi.Size(), in.NBytes)
	}
	if !fi.ModTime().Equal(epoch) {
		t.Fatalf("sparse: mtime %v, want %v", fi.ModTime(), epoch)
	}
	a, _ := fs.Stat(v, "a/hardbig")
	b, _ := fs.Stat(v, "a/b/c/big")
	if a.Sys().(*Inode).Ino != b.Sys().(*Inode).Ino || a.Sys().(*Inode).Nlink != 2 {
		t.Fatal("hard links are not one inode with nlink 2")
	}
	ents, err := fs.ReadDir(v, "a")
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]fs.FileMode{}
	for _, e := range ents {
		types[e.Name()] = e.Type()
	}
	wantTypes := map[string]fs.FileMode{"b": fs.ModeDir, "empty": 0, "inline": 0, "hardbig": 0, "lnk-abs-dir": fs.ModeSymlink,
		"lnk-via-dir": fs.ModeSymlink, "chr": fs.ModeDevice | fs.ModeCharDevice, "blk": fs.ModeDevice}
	for n, want := range wantTypes {
		if got, ok := types[n]; !ok || got != want {
			t.Errorf("a/%s: type %v (present %v), want %v", n, got, ok, want)
		}
	}

	// Reads and seeks across the window edge and past the end.
	fl, err := v.Open("a/b/c/big")
	if err != nil {
		t.Fatal(err)
	}
	want := m.files["a/b/c/big"]
	ra := fl.(io.ReaderAt)
	for _, c := range []struct{ off, n int }{{ioWindow - 3, 7}, {ioWindow - 1, ioWindow + 2}, {len(want) - 5, 10}, {0, len(want) + 1}, {3 * ioWindow, 1}} {
		buf := make([]byte, c.n)
		n, err := ra.ReadAt(buf, int64(c.off))
		wantN := min(c.n, len(want)-c.off)
		if n != wantN || (n < c.n) != (err == io.EOF) || (err != nil && err != io.EOF) {
			t.Fatalf("ReadAt(%d, %d) = %d, %v", c.n, c.off, n, err)
		}
		if !bytes.Equal(buf[:n], want[c.off:c.off+n]) {
			t.Fatalf("ReadAt(%d, %d): wrong data", c.n, c.off)
		}
	}
	// Parallel ReadAt calls share the window safely (run with -race).
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 3))
			buf := make([]byte, 300)
			for range 2000 {
				off := r.IntN(len(want) - len(buf))
				if n, err := ra.ReadAt(buf, int64(off)); n != len(buf) || err != nil || !bytes.Equal(buf, want[off:off+n]) {
					t.Errorf("parallel ReadAt(%d) = %d, %v", off, n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if _, err := ra.ReadAt(make([]byte, 1), -1); !errors.Is(err, fs.ErrInvalid) {
		t.Fatalf("ReadAt at -1: %v", err)
	}
	sk := fl.(io.Seeker)
	if _, err := sk.Seek(-1, io.SeekStart); !errors.Is(err, fs.ErrInvalid) {
		t.Fatalf("Seek(-1): %v", err)
	}
	if off, err := sk.Seek(10, io.SeekEnd); off != int64(len(want))+10 || err != nil {
		t.Fatalf("Seek(10, end) = %d, %v", off, err)
	}
	if n, err := fl.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("Read past the end = %d, %v", n, err)
	}
	if _, err := fl.(fs.ReadDirFile).ReadDir(-1); !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("ReadDir of a file: %v", err)
	}
	fl.Close()
	if _, err := fl.Read(make([]byte, 1)); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("Read after Close: %v", err)
	}
	if err := fl.Close(); !errors.Is(err, fs.ErrClosed) {
		t.Fatalf("second Close: %v", err)
	}

	// A directory: reads fail, Seek(0) restarts ReadDir.
	dir, err := v.Open("many")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dir.Read(make([]byte, 1)); !errors.Is(err, syscall.EISDIR) {
		t.Fatalf("Read of a directory: %v", err)
	}
	first, _ := dir.(fs.ReadDirFile).ReadDir(5)
	dir.(io.Seeker).Seek(0, io.SeekStart)
	again, _ := dir.(fs.ReadDirFile).ReadDir(-1)
	if len(again) != 301 || again[0].Name() != first[0].Name() {
		t.Fatalf("after Seek(0): %d entries", len(again))
	}
	dir.Close()

	// Errors carry the io/fs name.
	for _, c := range []struct {
		name string
		err  error
		call func(string) error
	}{
		{"nope", fs.ErrNotExist, func(n string) error { _, err := v.Open(n); return err }},
		{"a/nope/x", fs.ErrNotExist, func(n string) error { _, err := fs.Stat(v, n); return err }},
		{"top.txt/x", syscall.ENOTDIR, func(n string) error { _, err := v.Open(n); return err }},
		{"/top.txt", fs.ErrInvalid, func(n string) error { _, err := v.Open(n); return err }},
		{"a/../top.txt", fs.ErrInvalid, func(n string) error { _, err := fs.ReadFile(v, n); return err }},
		{"a/", fs.ErrInvalid, func(n string) error { _, err := fs.ReadDir(v, n); return err }},
		{"a", syscall.EISDIR, func(n string) error { _, err := fs.ReadFile(v, n); return err }},
		{"top.txt", syscall.ENOTDIR, func(n string) error { _, err := fs.ReadDir(v, n); return err }},
		{"top.txt", syscall.EINVAL, func(n string) error { _, err := fs.ReadLink(v, n); return err }},
	} {
		err := c.call(c.name)
		var pe *fs.PathError
		if !errors.Is(err, c.err) || !errors.As(err, &pe) || pe.Path != c.name {
			t.Errorf("%s: error %v, want a PathError for it with %v", c.name, err, c.err)
		}
	}
	if f.tx != nil {
		t.Fatal("reading through the view began a transaction")
	}
}

// goroot returns $(go env GOROOT), skipping the test without one.
func goroot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skipf("go env GOROOT: %v", err)
	}
	root := strings.TrimSpace(string(out))
	if _, err := os.Stat(filepath.Join(root, "src")); err != nil {
		t.Skipf("no GOROOT source: %v", err)
	}
	return root
}

// copyIn copies the host tree at src into the image directory dst (which
// exists) through the fsys API: directories, regular files and symlinks
// with their permissions and modification times; other files are left
// out. It commits as batches fill and syncs at the end.
func copyIn(t *testing.T, f *FS, src, dst string) {
	t.Helper()
	var walk func(hdir, idir string)
	walk = func(hdir, idir string) {
		ents, err := os.ReadDir(hdir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			h, p := filepath.Join(hdir, e.Name()), path.Join(idir, e.Name())
			info, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			a := Attr{Mode: unixPerm(info.Mode())}
			switch info.Mode().Type() {
			case fs.ModeDir:
				if _, err := f.Mkdir(p, a); err != nil {
					t.Fatal(err)
				}
				walk(h, p)
			case fs.ModeSymlink:
				target, err := os.Readlink(h)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.Symlink(target, p, a); err != nil {
					t.Fatal(err)
				}
			case 0:
				in, err := f.Create(p, a)
				if err != nil {
					t.Fatal(err)
				}
				data, err := os.ReadFile(h)
				if err != nil {
					t.Fatal(err)
				}
				for off := 0; off < len(data); off += 1 << 20 {
					if err := f.WriteAt(in, data[off:min(off+1<<20, len(data))], uint64(off)); err != nil {
						t.Fatal(err)
					}
				}
			default:
				continue
			}
			// After the contents, which set the times to now.
			mt := TimespecOf(info.ModTime())
			if err := f.Setattr(p, SetAttr{Atime: &mt, Mtime: &mt}); err != nil {
				t.Fatal(err)
			}
			if err := f.MaybeCommit(); err != nil {
				t.Fatal(err)
			}
		}
	}
	walk(src, dst)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// unixPerm is the inverse of ioFileMode for permission bits.
func unixPerm(m fs.FileMode) uint32 {
	u := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		u |= ioModeSetuid
	}
	if m&fs.ModeSetgid != 0 {
		u |= ioModeSetgid
	}
	if m&fs.ModeSticky != 0 {
		u |= ioModeSticky
	}
	return u
}

// compareIOFS checks that view holds exactly what host holds: names,
// types, permissions, modification times, link targets and bytes. It
// returns the number of names and bytes compared.
func compareIOFS(t *testing.T, host, view fs.FS) (names, size int) {
	t.Helper()
	seen := 0
	err := fs.WalkDir(host, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		seen++
		hi, err := d.Info()
		if err != nil {
			return err
		}
		vi, err := fs.Lstat(view, p)
		if err != nil {
			return err
		}
		if p != "." && (hi.Mode() != vi.Mode() || !hi.ModTime().Equal(vi.ModTime())) {
			t.Errorf("%s: %v %v in the image, host %v %v", p, vi.Mode(), vi.ModTime(), hi.Mode(), hi.ModTime())
		}
		switch d.Type() {
		case 0:
			hb, err := fs.ReadFile(host, p)
			if err != nil {
				return err
			}
			vb, err := fs.ReadFile(view, p)
			if err != nil {
				return err
			}
			if !bytes.Equal(hb, vb) {
				t.Errorf("%s: contents differ (%d bytes, host %d)", p, len(vb), len(hb))
			}
			size += len(hb)
		case fs.ModeSymlink:
			ht, _ := fs.ReadLink(host, p)
			if vt, err := fs.ReadLink(view, p); err != nil || vt != ht {
				t.Errorf("%s: link to %q, %v; host %q", p, vt, err, ht)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := fs.WalkDir(view, ".", func(string, fs.DirEntry, error) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != seen {
		t.Fatalf("image holds %d names, host %d", n, seen)
	}
	return seen, size
}

// TestIOFSGoroot copies $GOROOT/src (src/fmt and src/io with -short) into
// an image and checks the view with fstest.TestFS and against the host.
func TestIOFSGoroot(t *testing.T) {
	src := filepath.Join(goroot(t), "src")
	f, _ := newTestFS(t, 1<<30, 1)
	start := time.Now()
	var expected []string
	hosts := map[string]fs.FS{}
	if testing.Short() {
		for _, d := range []string{"fmt", "io"} {
			if _, err := f.Mkdir("/"+d, Attr{Mode: 0o755}); err != nil {
				t.Fatal(err)
			}
			copyIn(t, f, filepath.Join(src, d), "/"+d)
			hosts[d] = os.DirFS(filepath.Join(src, d))
		}
		expected = []string{"fmt", "io", "fmt/print.go", "io/io.go", "io/fs/fs.go"}
	} else {
		copyIn(t, f, src, "/")
		hosts["."] = os.DirFS(src)
		// The first name with a slash picks the directory fstest also
		// checks through fs.Sub: keep it small.
		expected = []string{"go.mod", "unicode/utf16/utf16.go", "fmt/print.go", "io/fs/fs.go", "cmd/go/main.go", "runtime/proc.go"}
	}
	t.Logf("copy in: %v", time.Since(start))
	v := f.IOFS()

	start = time.Now()
	names, size := 0, 0
	for d, host := range hosts {
		sub, err := fs.Sub(v, d)
		if err != nil {
			t.Fatal(err)
		}
		n, s := compareIOFS(t, host, sub)
		names, size = names+n, size+s
	}
	t.Logf("compare %d names, %d bytes with the host: %v", names, size, time.Since(start))

	start = time.Now()
	if err := fstest.TestFS(v, expected...); err != nil {
		t.Fatal(err)
	}
	t.Logf("fstest.TestFS: %v", time.Since(start))
	if f.tx != nil {
		t.Fatal("reading through the view began a transaction")
	}
}

// TestIOFSEscape checks that symlinks crafted to leave the image (up, to
// absolute host paths) stay inside it, that loops and long chains fail
// with ELOOP instead of hanging, and that stored names which are not
// file names are not listed.
func TestIOFSEscape(t *testing.T) {
	f, _ := newTestFS(t, 64<<20, 1)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	mkdir := func(p string) {
		t.Helper()
		_, err := f.Mkdir(p, Attr{Mode: 0o755})
		must(err)
	}
	symlink := func(target, p string) {
		t.Helper()
		_, err := f.Symlink(target, p, Attr{})
		must(err)
	}
	file := func(p, data string) {
		t.Helper()
		in, err := f.Create(p, Attr{Mode: 0o644})
		must(err)
		must(f.WriteAt(in, []byte(data), 0))
	}
	mkdir("/etc")
	file("/etc/passwd", "image passwd\n")
	file("/secret", "image root\n")
	mkdir("/d")
	mkdir("/d/e")
	symlink("../../..", "/d/e/up")
	symlink("../../../../../../../../secret", "/d/e/upfile")
	symlink("/etc/passwd", "/d/abs")
	symlink("/../../../etc/passwd", "/d/absup")
	symlink("/etc/shadow", "/d/absmissing")
	symlink("/", "/d/root")
	symlink(strings.Repeat("../", 1365), "/d/longup") // 4095 bytes
	symlink("loop2", "/loop1")
	symlink("loop1", "/loop2")
	symlink("self", "/self")
	symlink(".", "/dot")
	symlink("grow/grow/grow/grow", "/grow")
	// A chain of links: chain0 -> chain1 -> ... -> chainN -> /secret.
	const chain = 45
	for i := range chain {
		symlink(path.Join("/", "chain"+strconv.Itoa(i+1)), "/chain"+strconv.Itoa(i))
	}
	symlink("/secret", "/chain"+strconv.Itoa(chain))
	// A name no directory may hold, stored raw.
	mkdir("/bad")
	bad, err := f.Resolve("/bad", false)
	must(err)
	victim, err := f.Resolve("/secret", false)
	must(err)
	victim.Nlink++
	must(f.putInode(victim))
	must(f.addEntry(bad, "../evil", victim))
	must(f.Sync())

	v := f.IOFS()
	read := func(name string) (string, error) {
		t.Helper()
		done := make(chan struct{})
		var b []byte
		var err error
		go func() {
			defer close(done)
			var fl fs.File
			if fl, err = v.Open(name); err != nil {
				return
			}
			defer fl.Close()
			b, err = io.ReadAll(fl)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("Open(%s) hangs", name)
		}
		return string(b), err
	}
	for name, want := range map[string]string{
		"d/e/up/secret":                    "image root\n",
		"d/e/up/etc/passwd":                "image passwd\n",
		"d/e/upfile":                       "image root\n",
		"d/abs":                            "image passwd\n",
		"d/absup":                          "image passwd\n",
		"d/root/secret":                    "image root\n",
		"d/longup/secret":                  "image root\n",
		"d/e/up/d/e/up/d/e/up/d/abs":       "image passwd\n",
		"chain" + strconv.Itoa(chain-40+1): "image root\n", // 40 links: the limit
	} {
		got, err := read(name)
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
	for _, name := range []string{"loop1", "self", "grow", "chain0", "d/e/up/loop2/x", strings.Repeat("dot/", 41) + "secret"} {
		if _, err := read(name); !errors.Is(err, syscall.ELOOP) {
			t.Errorf("%s: %v, want ELOOP", name, err)
		}
		if _, err := fs.Stat(v, name); !errors.Is(err, syscall.ELOOP) {
			t.Errorf("Stat(%s): %v, want ELOOP", name, err)
		}
	}
	for _, name := range []string{"d/absmissing"} {
		if _, err := read(name); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %v, want ErrNotExist", name, err)
		}
	}
	// Lstat and ReadLink see the links themselves, loops included.
	for name, target := range map[string]string{"loop1": "loop2", "d/abs": "/etc/passwd", "d/e/up": "../../.."} {
		if got, err := fs.ReadLink(v, name); err != nil || got != target {
			t.Errorf("ReadLink(%s) = %q, %v", name, got, err)
		}
		if fi, err := fs.Lstat(v, name); err != nil || fi.Mode().Type() != fs.ModeSymlink {
			t.Errorf("Lstat(%s) = %v, %v", name, fi, err)
		}
	}
	// The up link is the root itself: listing it lists the image root.
	ents, err := fs.ReadDir(v, "d/e/up")
	must(err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !slices.Contains(names, "secret") || !slices.Contains(names, "bad") {
		t.Fatalf("ReadDir(d/e/up) = %q", names)
	}
	// The bad name is corruption: the directory does not list.
	if ents, err := fs.ReadDir(v, "bad"); !errors.Is(err, format.ErrCorrupt) {
		t.Fatalf("ReadDir(bad) = %v, %v; want corruption", ents, err)
	}
	// Walking the whole view (links not followed) terminates and every
	// name is valid.
	err = fs.WalkDir(v, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil && p == "bad" {
			return nil
		}
		if err != nil {
			return err
		}
		if !fs.ValidPath(p) {
			t.Errorf("walk: invalid name %q", p)
		}
		return nil
	})
	must(err)
	if f.tx != nil {
		t.Fatal("reading through the view began a transaction")
	}
}
