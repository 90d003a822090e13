package export

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// sqModel is what one entry of the tree should read as.
type sqModel struct {
	mode     uint32 // with type bits
	uid, gid uint32
	mtime    int64
	data     []byte // a file's
	target   string // a symlink's
	rdev     uint64
	nlink    uint32 // checked where > 1 (hard links)
	xattrs   map[string]string
}

// sqTree builds, in a ddfs image, the shapes go-diskfs's writer got
// wrong and the format's limits: a root listing past the directory
// table's first 8 KiB, 1000 fifos (headers of at most 256), 300 symlinks, one
// whose listing passes 64 KiB (an extended inode), files of several
// blocks, a sparse one, hard links, devices, owners past 16 bits, set-id
// bits. It returns the model, independent of the writer.
func sqTree(t *testing.T) (*fsys.FS, map[string]sqModel) {
	f := tree(t)
	m := map[string]sqModel{}
	mk := func(p string, a fsys.Attr, data []byte) {
		t.Helper()
		a.HasTimes = true
		a.Mtime = format.Timespec{Sec: 1600000000 + int64(len(m))}
		in, err := f.Create(p, a)
		must(t, err)
		if data != nil {
			must(t, f.WriteAt(in, data, 0))
		}
		m[p] = sqModel{mode: a.Mode, uid: a.UID, gid: a.GID, mtime: a.Mtime.Sec, data: data, rdev: a.Rdev}
	}
	for _, p := range []string{"/d/big", "/d", "/small", "/link"} {
		must(t, f.Remove(p))
	}
	r := rand.New(rand.NewPCG(7, 8))
	rnd := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	for i := range 40 { // 40 x 200-byte names: the root's listing passes 8 KiB
		mk(fmt.Sprintf("/%03d%s", i, strings.Repeat("n", 197)), fsys.Attr{Mode: syscall.S_IFREG | 0o644}, []byte{byte(i)})
	}
	mk("/zdir", fsys.Attr{Mode: syscall.S_IFDIR | 0o755}, nil)
	mk("/zdir/multi", fsys.Attr{Mode: syscall.S_IFREG | 0o640, UID: 70000, GID: 80000}, rnd(3*sqBlockSize+12345))
	mk("/zdir/text", fsys.Attr{Mode: syscall.S_IFREG | 0o4755}, bytes.Repeat([]byte("squash "), 50000))
	sparse := make([]byte, 4*sqBlockSize)
	copy(sparse[2*sqBlockSize+5:], "island")
	mk("/zdir/sparse", fsys.Attr{Mode: syscall.S_IFREG | 0o600}, sparse)
	mk("/zdir/empty", fsys.Attr{Mode: syscall.S_IFREG | 0o644}, nil)
	mk("/zdir/emptydir", fsys.Attr{Mode: syscall.S_IFDIR | 0o1777}, nil)
	mk("/zdir/fifo", fsys.Attr{Mode: syscall.S_IFIFO | 0o644}, nil)
	mk("/zdir/tty", fsys.Attr{Mode: syscall.S_IFCHR | 0o620, Rdev: 4<<8 | 1}, nil)
	mk("/zdir/nvme", fsys.Attr{Mode: syscall.S_IFBLK | 0o660, Rdev: 259<<8 | 300&0xff | (300&^0xff)<<12}, nil)
	must(t, f.Link("/zdir/multi", "/zdir/hard"))
	for _, p := range []string{"/zdir/multi", "/zdir/hard"} {
		e := m["/zdir/multi"]
		e.nlink = 2
		m[p] = e
	}
	mk("/links", fsys.Attr{Mode: syscall.S_IFDIR | 0o755}, nil)
	for i := range 300 { // 300 symlinks: more than one header's 256
		p, target := fmt.Sprintf("/links/l%03d", i), fmt.Sprintf("../zdir/%s/%d", strings.Repeat("t", i%50), i)
		_, err := f.Symlink(target, p, fsys.Attr{})
		must(t, err)
		m[p] = sqModel{mode: syscall.S_IFLNK | 0o777, target: target}
	}
	mk("/fifos", fsys.Attr{Mode: syscall.S_IFDIR | 0o755}, nil)
	for i := range 1000 { // 20-byte inodes: over 256 in one metadata block, one header each 256
		mk(fmt.Sprintf("/fifos/%04d", i), fsys.Attr{Mode: syscall.S_IFIFO | 0o644}, nil)
	}
	mk("/wide", fsys.Attr{Mode: syscall.S_IFDIR | 0o700}, nil)
	for i := range 350 { // 350 x ~210 bytes: a listing past 64 KiB
		mk(fmt.Sprintf("/wide/%s%03d", strings.Repeat("w", 197), i), fsys.Attr{Mode: syscall.S_IFIFO | 0o600}, nil)
	}
	// Attributes of every type on every kind of inode; two files share a set.
	for p, xs := range map[string]map[string]string{
		"/zdir/text":  {"user.a": "1", "trusted.b": strings.Repeat("B", 300), "security.capability": capNetRaw},
		"/zdir/empty": {"user.a": "1", "trusted.b": strings.Repeat("B", 300), "security.capability": capNetRaw},
		"/zdir":       {"user.dir": "d"},
		"/zdir/fifo":  {"trusted.f": ""},
		"/zdir/tty":   {"security.selinux": "system_u:object_r:tty_device_t:s0"},
		"/links/l007": {"trusted.l": "link"},
		"/zdir/multi": {"user.m": "multi"},
	} {
		in, err := f.Resolve(p, false)
		must(t, err)
		for k, v := range xs {
			must(t, f.SetXattr(in, k, []byte(v)))
		}
		e := m[p]
		e.xattrs = xs
		m[p] = e
		if p == "/zdir/multi" {
			e := m["/zdir/hard"]
			e.xattrs = xs
			m["/zdir/hard"] = e
		}
	}
	// Writes and new entries stamp the clock's mtime: the model's last.
	for p, e := range m {
		if e.mode&syscall.S_IFMT != syscall.S_IFLNK {
			must(t, f.Setattr(p, fsys.SetAttr{Mtime: &format.Timespec{Sec: e.mtime}}))
		}
	}
	must(t, f.Sync())
	return f, m
}

// TestSquashfsWriter: the image our writer makes reads back as the model
// with squashfs-tools' unsquashfs (extracted as root: types, bytes,
// targets, modes, owners, times, devices) and with the kernel's
// squashfs (mount -o loop,ro: the same, and hard links as one inode),
// where they exist here. Export's own read-back (go-diskfs) passes too.
func TestSquashfsWriter(t *testing.T) {
	f, m := sqTree(t)
	dir := t.TempDir()
	img := filepath.Join(dir, "x.sqfs")
	st, err := Export(f, "/", img, Options{Type: "squashfs"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Entries != uint64(len(m)) {
		t.Errorf("%d entries checked, the model has %d", st.Entries, len(m))
	}
	fi, err := os.Stat(img)
	must(t, err)
	if fi.Size()%sqPad != 0 {
		t.Errorf("image of %d bytes, not padded to %d", fi.Size(), sqPad)
	}
	checked := 0
	if _, err := exec.LookPath("unsquashfs"); err == nil && os.Geteuid() == 0 {
		out := filepath.Join(dir, "out")
		if b, err := exec.Command("unsquashfs", "-q", "-n", "-d", out, img).CombinedOutput(); err != nil {
			t.Fatalf("unsquashfs: %v\n%s", err, b)
		}
		sqCompare(t, "unsquashfs", out, m, false)
		checked++
	}
	if mnt := sqMount(t, img); mnt != "" {
		sqCompare(t, "kernel", mnt, m, true)
		checked++
	}
	if checked == 0 {
		t.Skip("neither unsquashfs as root nor a squashfs mount here")
	}
}

func sqMount(t *testing.T, img string) string {
	if os.Geteuid() != 0 {
		return ""
	}
	mnt := t.TempDir()
	if b, err := exec.Command("mount", "-t", "squashfs", "-o", "loop,ro", img, mnt).CombinedOutput(); err != nil {
		t.Logf("no squashfs mount here: %v %s", err, bytes.TrimSpace(b))
		return ""
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	return mnt
}

// sqCompare checks the host tree at root against the model, both ways.
func sqCompare(t *testing.T, who, root string, m map[string]sqModel, links bool) {
	t.Helper()
	seen := 0
	err := filepath.Walk(root, func(hp string, fi os.FileInfo, err error) error {
		if err != nil || hp == root {
			return err
		}
		p := "/" + filepath.ToSlash(strings.TrimPrefix(hp, root+"/"))
		want, ok := m[p]
		if !ok {
			t.Errorf("%s: %s is not in the tree", who, p)
			return nil
		}
		seen++
		s := fi.Sys().(*syscall.Stat_t)
		if s.Mode != want.mode || s.Uid != want.uid || s.Gid != want.gid {
			t.Errorf("%s: %s: mode %#o %d:%d, want %#o %d:%d", who, p, s.Mode, s.Uid, s.Gid, want.mode, want.uid, want.gid)
		}
		if want.mode&syscall.S_IFMT != syscall.S_IFLNK && s.Mtim.Sec != want.mtime {
			t.Errorf("%s: %s: mtime %d, want %d", who, p, s.Mtim.Sec, want.mtime)
		}
		if got := hostXattrs(t, hp); fmt.Sprint(got) != fmt.Sprint(want.xattrs) && (len(got) > 0 || len(want.xattrs) > 0) {
			t.Errorf("%s: %s: xattrs %q, want %q", who, p, got, want.xattrs)
		}
		switch want.mode & syscall.S_IFMT {
		case syscall.S_IFREG:
			if b, err := os.ReadFile(hp); err != nil || !bytes.Equal(b, want.data) {
				t.Errorf("%s: %s: %d bytes read (%v), want %d", who, p, len(b), err, len(want.data))
			}
			if links && want.nlink > 1 && uint32(s.Nlink) != want.nlink {
				t.Errorf("%s: %s: nlink %d, want %d", who, p, s.Nlink, want.nlink)
			}
		case syscall.S_IFLNK:
			if got, err := os.Readlink(hp); err != nil || got != want.target {
				t.Errorf("%s: %s: target %q (%v), want %q", who, p, got, err, want.target)
			}
		case syscall.S_IFCHR, syscall.S_IFBLK:
			if uint64(s.Rdev) != want.rdev {
				t.Errorf("%s: %s: rdev %#x, want %#x", who, p, s.Rdev, want.rdev)
			}
		}
		return nil
	})
	must(t, err)
	if seen != len(m) {
		t.Errorf("%s: %d entries, the model has %d", who, seen, len(m))
	}
	if links {
		a, _ := os.Stat(filepath.Join(root, "zdir/multi"))
		b, _ := os.Stat(filepath.Join(root, "zdir/hard"))
		if a == nil || b == nil || !os.SameFile(a, b) {
			t.Errorf("%s: zdir/multi and zdir/hard are not one inode", who)
		}
	}
}

// hostXattrs lists a host file's attributes (not following a symlink).
func hostXattrs(t *testing.T, p string) map[string]string {
	buf := make([]byte, 64<<10)
	n, err := unix.Llistxattr(p, buf)
	if err != nil {
		t.Fatalf("llistxattr %s: %v", p, err)
	}
	out := map[string]string{}
	for _, name := range strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		v := make([]byte, 64<<10)
		k, err := unix.Lgetxattr(p, name, v)
		if err != nil {
			t.Fatalf("lgetxattr %s %s: %v", p, name, err)
		}
		out[name] = string(v[:k])
	}
	return out
}

// capNetRaw is a valid file capability (VFS_CAP_REVISION_2, effective,
// CAP_NET_RAW permitted), as ping carries: the kernel checks the form.
const capNetRaw = "\x01\x00\x00\x02\x00\x20\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"

// TestSquashfsRefusesACL: squashfs keeps no system.* attribute; a tree
// with an ACL is refused naming the file and the attribute, leaving no
// OUT (mksquashfs would drop it with a warning).
func TestSquashfsRefusesACL(t *testing.T) {
	f := tree(t)
	in, err := f.Resolve("/small", false)
	must(t, err)
	must(t, f.SetXattr(in, "system.posix_acl_access", []byte{2, 0, 0, 0, 1, 0, 6, 0, 0xff, 0xff, 0xff, 0xff}))
	out := filepath.Join(t.TempDir(), "x.sqfs")
	_, err = Export(f, "/", out, Options{Type: "squashfs"})
	if !errors.Is(err, syscall.EOPNOTSUPP) || !strings.Contains(err.Error(), "/small") || !strings.Contains(err.Error(), "system.posix_acl_access") {
		t.Fatalf("export of a tree with an ACL: %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatalf("a refused export left %s", out)
	}
}
