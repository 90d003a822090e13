package foreign

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// builder is how a test builds one kind of image from a host tree and
// what of the tree that kind keeps.
type builder struct {
	name      string // the subtest's ("": the kind's)
	kind      Kind
	tools     []string
	build     func(t testing.TB, src, img string)
	symlinks  bool   // keeps symlinks
	permMask  uint32 // permission bits it keeps (as go-diskfs reads them)
	owners    bool   // keeps uid/gid
	mtime     bool   // keeps mtime to the second, in UTC
	specials  bool   // keeps fifos
	kernelFS  string // mount -t for the kernel's reading ("" none)
	hardLinks bool   // nlink counts them
	inos      bool   // numbers inodes: a file's hard links are found
}

func sh(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

var builders = []builder{
	{kind: Ext4, tools: []string{"mke2fs"}, symlinks: true, permMask: 0o7777, owners: true, mtime: true, specials: true, kernelFS: "ext4", hardLinks: true, inos: true,
		build: func(t testing.TB, src, img string) {
			sh(t, "mke2fs", "-q", "-F", "-t", "ext4", "-O", "metadata_csum", "-E", "root_owner=0:0", "-d", src, img, "8M")
		}},
	// -no-exports: no inode table index, so go-diskfs's 0777 bits only.
	{name: "squashfs-no-exports", kind: Squashfs, tools: []string{"mksquashfs"}, symlinks: true, permMask: 0o777, owners: true, mtime: true, specials: true,
		build: func(t testing.TB, src, img string) {
			sh(t, "mksquashfs", src, img, "-quiet", "-noappend", "-no-progress", "-no-exports")
		}},
	// Inline data: small files, directories and long symlink targets in
	// the inode, which pkg/foreign reads itself (extdir.go).
	{name: "ext4-inline", kind: Ext4, tools: []string{"mke2fs"}, symlinks: true, permMask: 0o7777, owners: true, mtime: true, specials: true, kernelFS: "ext4", hardLinks: true, inos: true,
		build: func(t testing.TB, src, img string) {
			sh(t, "mke2fs", "-q", "-F", "-t", "ext4", "-O", "metadata_csum,inline_data", "-E", "root_owner=0:0", "-d", src, img, "8M")
		}},
	{kind: Squashfs, tools: []string{"mksquashfs"}, symlinks: true, permMask: 0o7777, owners: true, mtime: true, specials: true, kernelFS: "squashfs", hardLinks: true, inos: true,
		build: func(t testing.TB, src, img string) {
			sh(t, "mksquashfs", src, img, "-quiet", "-noappend", "-no-progress")
		}},
	{kind: ISO9660, tools: []string{"xorriso"}, symlinks: true, permMask: 0o7777, owners: true, mtime: true, specials: true, kernelFS: "iso9660", hardLinks: true,
		build: func(t testing.TB, src, img string) {
			sh(t, "xorriso", "-as", "mkisofs", "-quiet", "-R", "-no-pad", "-o", img, src)
		}},
	{kind: FAT32, tools: []string{"mkfs.vfat", "mcopy"}, kernelFS: "vfat",
		build: func(t testing.TB, src, img string) { buildFAT(t, src, img, "32", "70000") }},
	{kind: FAT16, tools: []string{"mkfs.vfat", "mcopy"}, kernelFS: "vfat",
		build: func(t testing.TB, src, img string) { buildFAT(t, src, img, "16", "20000") }},
	{kind: FAT12, tools: []string{"mkfs.vfat", "mcopy"}, kernelFS: "vfat",
		build: func(t testing.TB, src, img string) { buildFAT(t, src, img, "12", "4000") }},
}

func buildFAT(t testing.TB, src, img, bits, kib string) {
	sh(t, "mkfs.vfat", "-F", bits, "-n", "TESTVOL", "-C", img, kib)
	ents, _ := os.ReadDir(src)
	args := []string{"-s", "-p", "-m", "-i", img}
	for _, e := range ents {
		args = append(args, filepath.Join(src, e.Name()))
	}
	sh(t, "mcopy", append(args, "::/")...)
}

func needTools(t *testing.T, tools ...string) {
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (apt-get install -y squashfs-tools xorriso dosfstools mtools gdisk)", tool)
		}
	}
}

// makeTree writes the source tree: files of several sizes (empty, one
// byte, a block and a bit, 300 KiB of random bytes), nested
// directories, long names, and where the builder keeps them symlinks
// (relative, absolute, dangling), a hard link, a fifo, odd modes and
// owners.
func makeTree(t *testing.T, f builder) string {
	src := filepath.Join(t.TempDir(), "src")
	rng := rand.New(rand.NewSource(41))
	big := make([]byte, 300<<10)
	rng.Read(big)
	files := map[string][]byte{
		"empty":                                nil,
		"one":                                  []byte("x"),
		"dir/block-and-a-bit":                  bytes.Repeat([]byte("0123456789abcdef"), 260),
		"dir/sub/deeper/random.bin":            big,
		"dir/a long file name with spaces.txt": []byte("long\n"),
		"dir/sub/Mixed.Case.Name":              []byte("case\n"),
		"dir/hundred":                          bytes.Repeat([]byte("h"), 100), // past i_block's 60 bytes
	}
	for i := range 40 { // a directory of several blocks (1 KiB blocks) or of inline data and more
		files[fmt.Sprintf("many/entry-with-a-longer-name-%02d", i)] = []byte{byte(i)}
	}
	for p, b := range files {
		full := filepath.Join(src, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(src, "emptydir"), 0o750); err != nil {
		t.Fatal(err)
	}
	if f.symlinks { // (FAT aside) names with leading and trailing dots, and a pair that differs by one
		for _, p := range []string{".hidden", "dir/h.go", "dir/.h.go", "dir/trail.", "dir/sub/.x."} {
			must(t, os.WriteFile(filepath.Join(src, p), []byte(p), 0o644))
		}
		must(t, os.Symlink("../one", filepath.Join(src, "dir/rel")))
		must(t, os.Symlink("/dir/sub", filepath.Join(src, "abs")))
		must(t, os.Symlink("nowhere", filepath.Join(src, "dangling")))
		must(t, os.Symlink(strings.Repeat("long/", 30)+"target", filepath.Join(src, "dir/longlink"))) // past i_block
		must(t, os.Symlink(strings.Repeat("c", 250)+"/x", filepath.Join(src, "dir/bigpart")))         // a component over one Rock Ridge SL entry
		must(t, os.WriteFile(filepath.Join(src, "caf\xe9"), []byte("latin-1 name"), 0o644))           // not UTF-8: names are bytes
		deep := filepath.Join(src, "deep")
		for i := range 40 {
			deep = filepath.Join(deep, fmt.Sprintf("d%02d", i))
		}
		must(t, os.MkdirAll(deep, 0o755))
		must(t, os.WriteFile(filepath.Join(deep, "leaf"), []byte("40 deep"), 0o644))
	}
	if f.hardLinks {
		must(t, os.Link(filepath.Join(src, "one"), filepath.Join(src, "dir/hard")))
	}
	if f.specials {
		must(t, syscall.Mkfifo(filepath.Join(src, "fifo"), 0o640))
	}
	if f.permMask != 0 {
		must(t, os.Chmod(filepath.Join(src, "one"), 0o755|os.ModeSetuid|os.ModeSetgid))
		must(t, os.Chmod(filepath.Join(src, "dir/block-and-a-bit"), 0o600))
	}
	if f.owners {
		must(t, os.Lchown(filepath.Join(src, "dir/block-and-a-bit"), 1234, 5678))
	}
	return src
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func sum(t *testing.T, p string) [32]byte {
	b, err := os.ReadFile(p)
	must(t, err)
	return sha256.Sum256(b)
}

// compareTree checks every entry under host folder ref against the
// image: the same names in each directory, types, sizes, the bits the
// builder keeps, symlink targets, file bytes.
func compareTree(t *testing.T, im *Image, f builder, ref string) int {
	t.Helper()
	n := 0
	var walk func(host, p string)
	walk = func(host, p string) {
		hostEnts, err := os.ReadDir(host)
		must(t, err)
		ents, err := im.ReadDir(p)
		if err != nil {
			t.Fatalf("ReadDir %s: %v", p, err)
		}
		var want, got []string
		for _, e := range hostEnts {
			if e.Name() != "lost+found" {
				want = append(want, e.Name())
			}
		}
		for _, e := range ents {
			if e.Name != "lost+found" {
				got = append(got, e.Name)
			}
		}
		if !slicesEqual(want, got) {
			t.Errorf("%s: names %q, want %q", p, got, want)
		}
		for _, name := range want {
			hp, ip := filepath.Join(host, name), path.Join(p, name)
			hst, err := os.Lstat(hp)
			must(t, err)
			st, err := im.Lstat(ip)
			if err != nil {
				t.Errorf("Lstat %s: %v", ip, err)
				continue
			}
			n++
			hs := hst.Sys().(*syscall.Stat_t)
			if st.Mode&syscall.S_IFMT != hs.Mode&syscall.S_IFMT {
				t.Errorf("%s: type %o, want %o", ip, st.Mode&syscall.S_IFMT, hs.Mode&syscall.S_IFMT)
				continue
			}
			if st.Mode&f.permMask != hs.Mode&f.permMask {
				t.Errorf("%s: mode %o, want %o (mask %o)", ip, st.Mode&0o7777, hs.Mode&0o7777, f.permMask)
			}
			if f.owners && (st.UID != hs.Uid || st.GID != hs.Gid) {
				t.Errorf("%s: owner %d:%d, want %d:%d", ip, st.UID, st.GID, hs.Uid, hs.Gid)
			}
			if f.mtime && !st.IsSymlink() && st.Mtime.Unix() != hst.ModTime().Unix() {
				t.Errorf("%s: mtime %v, want %v", ip, st.Mtime, hst.ModTime())
			}
			if f.kind == ISO9660 && !st.IsSymlink() && st.Ctime.Unix() != hs.Ctim.Sec { // Rock Ridge TF keeps it
				t.Errorf("%s: ctime %v, want %d", ip, st.Ctime, hs.Ctim.Sec)
			}
			if f.hardLinks && !st.IsDir() && st.Nlink != uint32(hs.Nlink) {
				t.Errorf("%s: nlink %d, want %d", ip, st.Nlink, hs.Nlink)
			}
			switch {
			case st.IsDir():
				walk(hp, ip)
			case st.IsSymlink():
				target, _ := os.Readlink(hp)
				if got, err := im.Readlink(ip); err != nil || got != target {
					t.Errorf("%s: target %q %v, want %q", ip, got, err, target)
				}
			case st.IsRegular():
				if st.Size != hst.Size() {
					t.Errorf("%s: size %d, want %d", ip, st.Size, hst.Size())
				}
				r, err := im.Open(ip)
				if err != nil {
					t.Errorf("Open %s: %v", ip, err)
					continue
				}
				b, err := io.ReadAll(struct{ io.Reader }{r})
				r.Close()
				if err != nil || sha256.Sum256(b) != sum(t, hp) {
					t.Errorf("%s: %d bytes read (%v) differ from the source's %d", ip, len(b), err, hst.Size())
				}
			}
		}
	}
	walk(ref, "/")
	return n
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestReadsLikeTheSource builds each builder from a host tree with its
// standard tool and compares everything go-diskfs reads back with the
// tree, and with the kernel's own reading (mount -o loop,ro) where it
// mounts here; the image's bytes are unchanged afterwards.
func TestReadsLikeTheSource(t *testing.T) {
	for _, f := range builders {
		name := f.name
		if name == "" {
			name = string(f.kind)
		}
		t.Run(name, func(t *testing.T) {
			needTools(t, f.tools...)
			src := makeTree(t, f)
			img := filepath.Join(t.TempDir(), "x.img")
			f.build(t, src, img)
			before := sum(t, img)
			im, err := Open(img)
			if err != nil {
				t.Fatal(err)
			}
			if im.Kind() != f.kind {
				t.Errorf("kind %s, want %s", im.Kind(), f.kind)
			}
			if n := compareTree(t, im, f, src); n < 8 {
				t.Errorf("compared %d entries", n)
			}
			if mnt := kernelMount(t, f, img); mnt != "" {
				compareTree(t, im, f, mnt)
			}
			must(t, im.Close())
			if sum(t, img) != before {
				t.Errorf("the image changed while it was read")
			}
		})
	}
}

// kernelMount mounts img read-only where the kernel and the container
// allow it ("" where not: the source tree is the oracle then).
func kernelMount(t *testing.T, f builder, img string) string {
	if f.kernelFS == "" || os.Geteuid() != 0 {
		return ""
	}
	mnt := t.TempDir()
	opts := "loop,ro"
	if f.kernelFS == "vfat" {
		opts += ",utf8" // long names as mcopy wrote them
	}
	if out, err := exec.Command("mount", "-t", f.kernelFS, "-o", opts, img, mnt).CombinedOutput(); err != nil {
		t.Logf("no kernel mount here (%v: %s): compared with the source tree only", err, bytes.TrimSpace(out))
		return ""
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	return mnt
}

// TestEveryFormatOpensReadOnly: go-diskfs gets a backend that refuses
// write access (and the raw file); the device is opened O_RDONLY.
func TestEveryFormatOpensReadOnly(t *testing.T) {
	b := &roBackend{size: 1}
	if _, err := b.Writable(); !errors.Is(err, errNoWrite) {
		t.Errorf("Writable: %v", err)
	}
	if _, err := b.Sys(); !errors.Is(err, errNoWrite) {
		t.Errorf("Sys: %v", err)
	}
	needTools(t, "mke2fs")
	src := makeTree(t, builders[0])
	img := filepath.Join(t.TempDir(), "x.img")
	builders[0].build(t, src, img)
	must(t, os.Chmod(img, 0o444))
	im, err := Open(img)
	must(t, err)
	defer im.Close()
	fds, _ := os.ReadDir("/proc/self/fd")
	for _, fd := range fds {
		l, _ := os.Readlink("/proc/self/fd/" + fd.Name())
		if l != img {
			continue
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + fd.Name())
		must(t, err)
		var pos, flags int
		var rest string
		if _, err := fmtSscan(string(info), &pos, &flags, &rest); err != nil {
			t.Fatal(err)
		}
		if flags&(syscall.O_WRONLY|syscall.O_RDWR) != 0 {
			t.Errorf("the image is open with flags %o", flags)
		}
		return
	}
	t.Fatal("the image is not open")
}

func fmtSscan(s string, pos, flags *int, rest *string) (int, error) {
	return fmt.Sscanf(s, "pos:\t%d\nflags:\t%o\n%s", pos, flags, rest)
}
