package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// wantErrno fails unless err carries errno.
func wantErrno(t *testing.T, what string, err error, errno syscall.Errno) {
	t.Helper()
	if !errors.Is(err, errno) {
		t.Fatalf("%s: %v, want %v", what, err, errno)
	}
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMountOperations: every kind of inode and operation through the
// kernel, with the errnos POSIX gives; then unmount, fsck clean, and the
// image holds it all (read back with ddfs, not through the mount).
func TestMountOperations(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "--dedupe", "--compress", "zstd", "a.img"), 0)
	m := mountImage(t, dir, "a.img")
	p := m.path
	writeFile(t, p("f"), "hello")
	if err := os.Mkdir(p("d"), 0o750); err != nil {
		t.Fatal(err)
	}
	writeFile(t, p("d/x"), "x")
	if err := os.Symlink("f", p("s")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(p("f"), p("h")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(p("fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(p("null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(p("null"), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != unix.Mkdev(1, 3) {
		t.Fatalf("char device: %+v %v", st, err)
	}
	if err := unix.Stat(p("h"), &st); err != nil || st.Nlink != 2 {
		t.Fatalf("hard link: nlink %d %v", st.Nlink, err)
	}
	if tgt, err := os.Readlink(p("s")); err != nil || tgt != "f" {
		t.Fatalf("readlink %q %v", tgt, err)
	}
	// xattrs, with create/replace flags and the size query.
	if err := unix.Setxattr(p("f"), "user.k", []byte("v1"), 0); err != nil {
		t.Fatal(err)
	}
	wantErrno(t, "setxattr XATTR_CREATE on an existing name", unix.Setxattr(p("f"), "user.k", []byte("v"), unix.XATTR_CREATE), unix.EEXIST)
	wantErrno(t, "setxattr XATTR_REPLACE of a missing name", unix.Setxattr(p("f"), "user.none", []byte("v"), unix.XATTR_REPLACE), unix.ENODATA)
	if n, err := unix.Getxattr(p("f"), "user.k", nil); err != nil || n != 2 {
		t.Fatalf("getxattr size: %d %v", n, err)
	}
	buf := make([]byte, 64)
	if n, err := unix.Listxattr(p("f"), buf); err != nil || string(buf[:n]) != "user.k\x00" {
		t.Fatalf("listxattr %q %v", buf[:n], err)
	}
	_, err := unix.Getxattr(p("f"), "user.none", buf)
	wantErrno(t, "getxattr of a missing name", err, unix.ENODATA)
	// errnos
	wantErrno(t, "create a 256-byte name", os.WriteFile(p(strings.Repeat("n", 256)), nil, 0o644), unix.ENAMETOOLONG)
	wantErrno(t, "rmdir a non-empty directory", unix.Rmdir(p("d")), unix.ENOTEMPTY)
	wantErrno(t, "unlink a directory", unix.Unlink(p("d")), unix.EISDIR)
	wantErrno(t, "rmdir a file", unix.Rmdir(p("f")), unix.ENOTDIR)
	wantErrno(t, "mkdir over a file", os.Mkdir(p("f"), 0o755), unix.EEXIST)
	wantErrno(t, "rename out of the mount", os.Rename(p("f"), filepath.Join(dir, "out")), unix.EXDEV)
	wantErrno(t, "rename a directory below itself", os.Rename(p("d"), p("d/sub")), unix.EINVAL)
	wantErrno(t, "RENAME_NOREPLACE onto a name", unix.Renameat2(unix.AT_FDCWD, p("f"), unix.AT_FDCWD, p("s"), unix.RENAME_NOREPLACE), unix.EEXIST)
	wantErrno(t, "RENAME_WHITEOUT", unix.Renameat2(unix.AT_FDCWD, p("f"), unix.AT_FDCWD, p("w"), unix.RENAME_WHITEOUT), unix.EINVAL)
	if err := unix.Renameat2(unix.AT_FDCWD, p("f"), unix.AT_FDCWD, p("d"), unix.RENAME_EXCHANGE); err != nil {
		t.Fatalf("RENAME_EXCHANGE: %v", err)
	}
	if b, err := os.ReadFile(p("d")); err != nil || string(b) != "hello" {
		t.Fatalf("after exchange, d holds %q %v", b, err)
	}
	if b, err := os.ReadFile(p("f/x")); err != nil || string(b) != "x" {
		t.Fatalf("after exchange, f/x holds %q %v", b, err)
	}
	// SEEK_DATA/SEEK_HOLE on a sparse file: data at 1 MiB only.
	sf, err := os.Create(p("sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sf.WriteAt(bytes.Repeat([]byte{7}, 8192), 1<<20); err != nil {
		t.Fatal(err)
	}
	if d, err := unix.Seek(int(sf.Fd()), 0, unix.SEEK_DATA); err != nil || d != 1<<20 {
		t.Fatalf("SEEK_DATA: %d %v", d, err)
	}
	if h, err := unix.Seek(int(sf.Fd()), 1<<20, unix.SEEK_HOLE); err != nil || h != 1<<20+8192 {
		t.Fatalf("SEEK_HOLE: %d %v", h, err)
	}
	sf.Close()
	var fs unix.Statfs_t
	if err := unix.Statfs(m.dir, &fs); err != nil || fs.Blocks == 0 || fs.Bfree == 0 || fs.Bfree > fs.Blocks || fs.Namelen != 255 {
		t.Fatalf("statfs %+v %v", fs, err)
	}
	m.unmount()
	fsckClean(t, dir, "a.img")
	ls := must(t, run(t, dir, "ddfs", "ls", "-l", "a.img:/"), 0).stdout
	for _, want := range []string{"crw-r--r--" /* the umask applies to mknod */, "prw-------", "s -> f", " d\n", " f\n", " h\n", " sparse\n"} {
		if !strings.Contains(ls, want) {
			t.Fatalf("ls after unmount lacks %q:\n%s", want, ls)
		}
	}
	if got := must(t, run(t, dir, "ddfs", "cat", "a.img:/d"), 0).stdout; got != "hello" {
		t.Fatalf("committed /d: %q", got)
	}
}

// TestMountReadOnly: -o ro refuses changes with EROFS and takes no writer
// lock (ddfs reads alongside; a second read-only mount works too).
func TestMountReadOnly(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "a.img"), 0)
	must(t, run(t, dir, "ddfs", "mkdir", "a.img:/d"), 0)
	m := mountImage(t, dir, "a.img", "-o", "ro")
	wantErrno(t, "create on a read-only mount", os.WriteFile(m.path("f"), nil, 0o644), unix.EROFS)
	wantErrno(t, "mkdir on a read-only mount", os.Mkdir(m.path("x"), 0o755), unix.EROFS)
	if _, err := os.Stat(m.path("d")); err != nil {
		t.Fatal(err)
	}
	m2 := mountImage(t, dir, "a.img", "-o", "ro")
	if _, err := os.Stat(m2.path("d")); err != nil {
		t.Fatal(err)
	}
	must(t, run(t, dir, "ddfs", "ls", "a.img:/"), 0)
	m2.unmount()
	m.unmount()
}

// TestMountWriterLock: a read-write mount holds the writer lock: another
// writer is refused while it runs.
func TestMountWriterLock(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "a.img"), 0)
	m := mountImage(t, dir, "a.img")
	r := run(t, dir, "ddfs", "mkdir", "a.img:/x")
	if r.code == 0 {
		t.Fatalf("ddfs mkdir beside a read-write mount succeeded")
	}
	m.unmount()
	must(t, run(t, dir, "ddfs", "mkdir", "a.img:/x"), 0)
}

// TestMountDurability: fsync commits before it returns, the timer
// commits within commit=SECONDS, and a kill -9 leaves the image at its
// last commit (fsck clean); unsynced changes are then gone, as promised.
func TestMountDurability(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "a.img"), 0)
	m := mountImage(t, dir, "a.img", "-o", "commit=3600")
	f, err := os.Create(m.path("synced"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("durable")
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	writeFile(t, m.path("unsynced"), "lost")
	m.kill()
	fsckClean(t, dir, "a.img")
	if got := must(t, run(t, dir, "ddfs", "cat", "a.img:/synced"), 0).stdout; got != "durable" {
		t.Fatalf("fsynced file after kill -9: %q", got)
	}
	if r := run(t, dir, "ddfs", "cat", "a.img:/unsynced"); r.code == 0 {
		t.Fatalf("a change neither synced nor timed survived kill -9 (commit=3600)")
	}
	// The timer: commit=1, a change, 2.5 s, kill -9: it is there.
	m = mountImage(t, dir, "a.img", "-o", "commit=1")
	writeFile(t, m.path("timed"), "ticked")
	time.Sleep(2500 * time.Millisecond)
	m.kill()
	fsckClean(t, dir, "a.img")
	if got := must(t, run(t, dir, "ddfs", "cat", "a.img:/timed"), 0).stdout; got != "ticked" {
		t.Fatalf("timer-committed file after kill -9: %q", got)
	}
}

// TestMountSyncfs: what syncfs(2) and sync(2) do on a mount. Kernel
// 6.18 sends FUSE_SYNCFS only to virtiofs (fc->sync_fs), and go-fuse
// v2.12 has no handler for it, so neither reaches the server: after them
// and a kill -9 the change is gone (commit=3600). Should this start to
// fail, syncfs commits: say so in the README and assert the opposite.
// `sync MOUNTPOINT` (fsync of the root directory: FSYNCDIR) does commit
// everything before it returns.
func TestMountSyncfs(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "a.img"), 0)
	m := mountImage(t, dir, "a.img", "-o", "commit=3600")
	writeFile(t, m.path("syncfs"), "kept?")
	f, err := os.Open(m.path("syncfs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		t.Fatalf("syncfs: %v", err)
	}
	f.Close()
	unix.Sync()
	m.kill()
	fsckClean(t, dir, "a.img")
	if r := run(t, dir, "ddfs", "cat", "a.img:/syncfs"); r.code == 0 {
		t.Fatalf("syncfs(2) now commits (the file survived kill -9): update the README's mount section and this test")
	}
	m = mountImage(t, dir, "a.img", "-o", "commit=3600")
	writeFile(t, m.path("syncdir"), "kept")
	if out, err := exec.Command("sync", m.dir).CombinedOutput(); err != nil {
		t.Fatalf("sync %s: %v %s", m.dir, err, out)
	}
	m.kill()
	fsckClean(t, dir, "a.img")
	if got := must(t, run(t, dir, "ddfs", "cat", "a.img:/syncdir"), 0).stdout; got != "kept" {
		t.Fatalf("after sync MOUNTPOINT and kill -9: %q", got)
	}
}

// TestMountUnmountCommits: fusermount3 -u, and SIGINT of a foreground
// mount (Ctrl-C), both commit and end the server with status 0.
func TestMountUnmountCommits(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "a.img"), 0)
	m := mountImage(t, dir, "a.img", "-o", "commit=3600")
	writeFile(t, m.path("one"), "1")
	m.unmount()
	m = mountImage(t, dir, "a.img", "-o", "commit=3600")
	writeFile(t, m.path("two"), "2")
	m.cmd.Process.Signal(syscall.SIGINT)
	m.wait(0)
	fsckClean(t, dir, "a.img")
	for name, want := range map[string]string{"one": "1", "two": "2"} {
		if got := must(t, run(t, dir, "ddfs", "cat", "a.img:/"+name), 0).stdout; got != want {
			t.Fatalf("%s: %q", name, got)
		}
	}
}

// TestMountInterruptAtStart: SIGINT the moment the mount appears (as a
// Ctrl-C may come) unmounts, commits and exits 0, as it does later: the
// server catches it from before it mounts. It used to catch it only a
// moment after, and die of it meanwhile, leaving a dead mount.
func TestMountInterruptAtStart(t *testing.T) {
	needFUSE(t)
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "a.img"), 0)
	for i := 0; i < 5; i++ {
		mnt := filepath.Join(dir, fmt.Sprint("mnt", i))
		os.Mkdir(mnt, 0o755)
		cmd := exec.Command(filepath.Join(binDir, "ddfs"), "mount", "--foreground", "a.img", mnt)
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		p := startProc(t, cmd)
		if !p.until(t, "the mount appears", func() bool { return isMountPoint(mnt) }) {
			t.Fatalf("ddfs mount ended before mounting: %v\n%s", p.wait(), stderr.String())
		}
		cmd.Process.Signal(syscall.SIGINT)
		if err := p.wait(); err != nil {
			unix.Unmount(mnt, unix.MNT_FORCE|unix.MNT_DETACH)
			t.Fatalf("SIGINT as the mount appeared (round %d): %v, want exit 0\n%s", i, err, stderr.String())
		}
		if isMountPoint(mnt) {
			t.Fatalf("%s still mounted after the server exited", mnt)
		}
	}
	fsckClean(t, dir, "a.img")
}

// TestMountBackground: without --foreground, ddfs mount returns once the
// mount is up, and a bad image fails in the caller with the reason.
func TestMountBackground(t *testing.T) {
	needFUSE(t)
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "a.img"), 0)
	mnt := filepath.Join(dir, "mnt")
	os.Mkdir(mnt, 0o755)
	must(t, run(t, dir, "ddfs", "mount", "a.img", mnt), 0)
	if !isMountPoint(mnt) {
		t.Fatalf("ddfs mount returned 0 but %s is no mount point", mnt)
	}
	writeFile(t, filepath.Join(mnt, "bg"), "background")
	if out, err := exec.Command("fusermount3", "-u", mnt).CombinedOutput(); err != nil {
		t.Fatalf("fusermount3 -u: %v %s", err, out)
	}
	// The server commits and exits after the unmount: wait for its lock.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if r := run(t, dir, "ddfs", "mkdir", "a.img:/after"); r.code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the background server kept the writer lock 20 s after the unmount")
		}
	}
	if got := must(t, run(t, dir, "ddfs", "cat", "a.img:/bg"), 0).stdout; got != "background" {
		t.Fatalf("bg: %q", got)
	}
	writeFile(t, filepath.Join(dir, "junk.img"), strings.Repeat("x", 1<<20))
	r := run(t, dir, "ddfs", "mount", "junk.img", mnt)
	if r.code == 0 || !strings.Contains(r.stderr, "junk.img") {
		t.Fatalf("mount of a non-image: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestMountENOSPC: filling the image gives ENOSPC and the mount stays
// usable: files can be removed and written again; fsck clean at the end.
func TestMountENOSPC(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "a.img"), 0)
	m := mountImage(t, dir, "a.img")
	chunk := make([]byte, 1<<20)
	rand.Read(chunk) // zeros would be holes
	var err error
	for i := 0; err == nil && i < 1000; i++ {
		var f *os.File
		if f, err = os.Create(m.path("fill" + string(rune('a'+i%26)) + strings.Repeat("x", i/26))); err != nil {
			break
		}
		for j := 0; err == nil && j < 16; j++ {
			copy(chunk, []byte{byte(i), byte(j)}) // nothing to dedupe either
			_, err = f.Write(chunk)
		}
		f.Close()
	}
	wantErrno(t, "filling the image", err, unix.ENOSPC)
	var before unix.Statfs_t
	unix.Statfs(m.dir, &before)
	// df agrees: what a write could take is less than the 1 MiB refused.
	if avail := before.Bavail * uint64(before.Bsize); avail >= 1<<20 {
		t.Fatalf("statfs after ENOSPC: %d bytes available", avail)
	}
	if err := os.Remove(m.path("filla")); err != nil {
		t.Fatalf("remove after ENOSPC: %v", err)
	}
	// The kernel releases a closed file asynchronously: until then an
	// unlinked file lives on (hidden), and its space returns at the
	// commit after its release.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if err := m.sync(); err != nil {
			t.Fatalf("fsync after ENOSPC: %v", err)
		}
		var now unix.Statfs_t
		unix.Statfs(m.dir, &now)
		if (now.Bfree-before.Bfree)*uint64(now.Bsize) >= 8<<20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("removing 16 MiB freed %d bytes in 10 s", (now.Bfree-before.Bfree)*uint64(now.Bsize))
		}
	}
	writeFile(t, m.path("after"), "still works")
	m.unmount()
	fsckClean(t, dir, "a.img")
	if got := must(t, run(t, dir, "ddfs", "cat", "a.img:/after"), 0).stdout; got != "still works" {
		t.Fatalf("after: %q", got)
	}
}

// sync fsyncs the mount's root directory (a commit).
func (m *mounted) sync() error {
	d, err := os.Open(m.dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// TestMountCorruptFile: a file whose data fails its checksum reads as
// EIO, logged on stderr; the rest of the tree stays readable and writable.
func TestMountCorruptFile(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "a.img"), 0)
	bad := make([]byte, 64<<10)
	rand.Read(bad)
	if err := os.WriteFile(filepath.Join(dir, "bad"), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "good"), strings.Repeat("good ", 4000))
	must(t, run(t, dir, "ddfs", "cp", "bad", "good", "a.img:/"), 0)
	img, err := os.ReadFile(filepath.Join(dir, "a.img"))
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(img, bad[8192:8192+512])
	if at < 0 {
		t.Fatal("the file's data is not in the image")
	}
	img[at+100] ^= 0xff
	if err := os.WriteFile(filepath.Join(dir, "a.img"), img, 0o644); err != nil {
		t.Fatal(err)
	}
	m := mountImage(t, dir, "a.img")
	_, err = os.ReadFile(m.path("bad"))
	wantErrno(t, "reading a corrupt file", err, unix.EIO)
	if b, err := os.ReadFile(m.path("good")); err != nil || len(b) != 20000 {
		t.Fatalf("good file beside a corrupt one: %d bytes, %v", len(b), err)
	}
	writeFile(t, m.path("new"), "still writable")
	m.unmount()
	if !strings.Contains(m.stderr.String(), "ddfs: mount: a.img: read: ") {
		t.Fatalf("the EIO was not logged: %q", m.stderr)
	}
	if got := must(t, run(t, dir, "ddfs", "cat", "a.img:/new"), 0).stdout; got != "still writable" {
		t.Fatalf("new: %q", got)
	}
}

// TestMountUnlinkedOpen: an unlinked file stays readable and writable
// through an open descriptor until its last close (POSIX), with nlink 0
// and no name; its space goes at the close. A kill -9 meanwhile leaves
// it under the root's hidden .ddfs-unlinked (fsck clean), and the next
// mount deletes it.
func TestMountUnlinkedOpen(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "a.img"), 0)
	m := mountImage(t, dir, "a.img")
	f, err := os.Create(m.path("tmp"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("before ")
	if err := os.Remove(m.path("tmp")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("after"); err != nil {
		t.Fatalf("write after unlink: %v", err)
	}
	b := make([]byte, 64)
	if n, err := f.ReadAt(b, 0); string(b[:n]) != "before after" {
		t.Fatalf("read after unlink: %q %v", b[:n], err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil || st.Nlink != 0 {
		t.Fatalf("fstat after unlink: nlink %d %v", st.Nlink, err)
	}
	if ents, _ := os.ReadDir(m.dir); len(ents) != 0 {
		t.Fatalf("root lists %v after the unlink", ents)
	}
	writeFile(t, m.path("other"), "x")
	if err := os.Rename(m.path("other"), m.path("tmp2")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	m.unmount()
	fsckClean(t, dir, "a.img")
	if ls := must(t, run(t, dir, "ddfs", "ls", "-a", "a.img:/"), 0).stdout; strings.Contains(ls, "ddfs-unlinked") {
		t.Fatalf("hidden directory left after a clean unmount:\n%s", ls)
	}
	// kill -9 with an unlinked file open: fsck clean, hidden until the next mount.
	m = mountImage(t, dir, "a.img")
	f, err = os.Create(m.path("held"))
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("held")
	os.Remove(m.path("held"))
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	m.kill()
	f.Close()
	fsckClean(t, dir, "a.img")
	if ls := must(t, run(t, dir, "ddfs", "ls", "-a", "a.img:/"), 0).stdout; !strings.Contains(ls, ".ddfs-unlinked") {
		t.Fatalf("no hidden directory after kill -9 with an unlinked file open:\n%s", ls)
	}
	m = mountImage(t, dir, "a.img")
	m.unmount()
	if ls := must(t, run(t, dir, "ddfs", "ls", "-a", "a.img:/"), 0).stdout; strings.Contains(ls, "ddfs-unlinked") {
		t.Fatalf("the next mount kept the hidden directory:\n%s", ls)
	}
	fsckClean(t, dir, "a.img")
}

// TestMountExchangeAcrossDirs: RENAME_EXCHANGE of a directory and a file
// in two directories moves the ".." link count with the directory (fsck
// checks every count), and refuses to swap a directory below itself.
func TestMountExchangeAcrossDirs(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "a.img"), 0)
	m := mountImage(t, dir, "a.img")
	for _, d := range []string{"a", "a/x", "a/x/deep", "b"} {
		if err := os.Mkdir(m.path(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, m.path("b/y"), "file")
	wantErrno(t, "exchanging a directory with a file below it", unix.Renameat2(unix.AT_FDCWD, m.path("a"), unix.AT_FDCWD, m.path("a/x/deep"), unix.RENAME_EXCHANGE), unix.EINVAL)
	if err := unix.Renameat2(unix.AT_FDCWD, m.path("a/x"), unix.AT_FDCWD, m.path("b/y"), unix.RENAME_EXCHANGE); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	for p, want := range map[string]uint64{"a": 2, "b": 3, "b/y": 3} {
		if err := unix.Stat(m.path(p), &st); err != nil || st.Nlink != want {
			t.Fatalf("%s: nlink %d, want %d (%v)", p, st.Nlink, want, err)
		}
	}
	if b, err := os.ReadFile(m.path("a/x")); err != nil || string(b) != "file" {
		t.Fatalf("a/x: %q %v", b, err)
	}
	if _, err := os.Stat(m.path("b/y/deep")); err != nil {
		t.Fatal(err)
	}
	m.unmount()
	fsckClean(t, dir, "a.img")
}

// TestMountCorruptNode: a metadata leaf (single copy, so nothing heals
// it) that fails its checksum makes the files whose items it holds EIO,
// logged; files in other leaves still read and the mount still writes.
func TestMountCorruptNode(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "-m", "single", "a.img"), 0)
	for _, d := range []string{"src/aaa", "src/zzz"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
		for i := 0; i < 300; i++ {
			writeFile(t, filepath.Join(dir, d, "f"+strings.Repeat("0", 3-len(itoa(i)))+itoa(i)), itoa(i))
		}
	}
	must(t, run(t, dir, "ddfs", "cp", "-r", "src/aaa", "src/zzz", "a.img:/"), 0)
	ino := inodeOf(t, dir, "a.img:/aaa/f150")
	// The leaf holding that inode's item, and where it lies on the device.
	var leaf uint64
	for _, l := range strings.Split(must(t, run(t, dir, "ddfs", "inspect", "dump-tree", "--json", "--tree", "fs", "a.img"), 0).stdout, "\n") {
		var n struct {
			Logical uint64
			Level   int
			Items   []struct {
				Key struct{ ObjectID, Type uint64 }
			}
		}
		if json.Unmarshal([]byte(l), &n) != nil || n.Level != 0 {
			continue
		}
		for _, it := range n.Items {
			if it.Key.ObjectID == ino && it.Key.Type == 1 {
				leaf = n.Logical
			}
		}
	}
	var mp struct{ Copies []struct{ Offset int64 } }
	json.Unmarshal([]byte(must(t, run(t, dir, "ddfs", "inspect", "map", "--json", "a.img", itoa(int(leaf))), 0).stdout), &mp)
	if leaf == 0 || len(mp.Copies) != 1 {
		t.Fatalf("leaf of inode %d: %d, copies %+v", ino, leaf, mp.Copies)
	}
	f, err := os.OpenFile(filepath.Join(dir, "a.img"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(bytes.Repeat([]byte{0xA5}, 64), mp.Copies[0].Offset+200)
	f.Close()
	m := mountImage(t, dir, "a.img")
	_, err = os.ReadFile(m.path("aaa/f150"))
	wantErrno(t, "reading a file whose leaf is corrupt", err, unix.EIO)
	if b, err := os.ReadFile(m.path("zzz/f299")); err != nil || string(b) != "299" {
		t.Fatalf("a file in another leaf: %q %v", b, err)
	}
	writeFile(t, m.path("new"), "still writable")
	m.unmount()
	if !strings.Contains(m.stderr.String(), "ddfs: mount: a.img: lookup f150: ") {
		t.Fatalf("the EIO was not logged: %q", m.stderr)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// inodeOf returns the inode number ddfs stat shows for an IMAGE:PATH.
func inodeOf(t *testing.T, dir, op string) uint64 {
	t.Helper()
	out := must(t, run(t, dir, "ddfs", "stat", op), 0).stdout
	i := strings.Index(out, "Inode: ")
	if i < 0 {
		t.Fatalf("no inode in %q", out)
	}
	n, err := strconv.ParseUint(strings.Fields(out[i+7:])[0], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMountDedupeCompress: data written through the mount is deduped and
// compressed by the image's settings as ddfs cp does: two copies of 8 MiB
// of random data are stored once, counted text shrinks.
func TestMountDedupeCompress(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "1G", "--dedupe", "--compress", "zstd", "a.img"), 0)
	m := mountImage(t, dir, "a.img")
	r := make([]byte, 8<<20)
	rand.Read(r)
	writeFile(t, m.path("a"), string(r))
	writeFile(t, m.path("b"), string(r))
	var text strings.Builder
	for i := 0; text.Len() < 8<<20; i++ {
		text.WriteString("line " + itoa(i) + " of some text that compresses well\n")
	}
	writeFile(t, m.path("c"), text.String())
	m.unmount()
	var df struct {
		Data struct {
			Logical       uint64 `json:"logical_bytes"`
			Physical      uint64 `json:"physical_bytes"`
			DedupeSaved   uint64 `json:"dedupe_saved_bytes"`
			CompressSaved uint64 `json:"compress_saved_bytes"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(must(t, run(t, dir, "ddfs", "df", "--json", "a.img"), 0).stdout), &df); err != nil {
		t.Fatal(err)
	}
	if d := df.Data; d.DedupeSaved < 8<<20 || d.CompressSaved < 4<<20 || d.Physical > 12<<20 {
		t.Fatalf("through the mount: %+v (want 8 MiB deduped, text compressed)", d)
	}
	fsckClean(t, dir, "a.img")
}

// TestMountDegraded: a raid1 set with a device file deleted does not
// mount (the error names --degraded); with --degraded it mounts, reads
// the surviving copies and takes new files.
func TestMountDegraded(t *testing.T) {
	needFUSE(t)
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "-d", "raid1", "-m", "raid1", "d0.img", "d1.img"), 0)
	writeFile(t, filepath.Join(dir, "f"), "mirrored")
	must(t, run(t, dir, "ddfs", "cp", "f", "d0.img:/"), 0)
	os.Remove(filepath.Join(dir, "d1.img"))
	mnt := filepath.Join(dir, "mnt")
	os.Mkdir(mnt, 0o755)
	if r := run(t, dir, "ddfs", "mount", "--foreground", "d0.img", mnt); r.code == 0 || !strings.Contains(r.stderr, "--degraded") {
		t.Fatalf("mount with a device missing: exit %d, %q", r.code, r.stderr)
	}
	m := mountImage(t, dir, "d0.img", "--degraded")
	if b, err := os.ReadFile(m.path("f")); err != nil || string(b) != "mirrored" {
		t.Fatalf("degraded read: %q %v", b, err)
	}
	writeFile(t, m.path("g"), "written degraded")
	m.unmount()
	if got := must(t, run(t, dir, "ddfs", "cat", "--degraded", "d0.img:/g"), 0).stdout; got != "written degraded" {
		t.Fatalf("g: %q", got)
	}
}

// TestMountOptions: -o allow_other reaches the kernel's mount; a bad
// option or commit value is a usage error (exit 2) naming it.
func TestMountOptions(t *testing.T) {
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "a.img"), 0)
	for _, o := range []string{"bogus", "commit=soon", "ro,commit=-1", "readahead=0", "readahead=lots"} {
		if r := run(t, dir, "ddfs", "mount", "-o", o, "a.img", dir); r.code != 2 || !strings.Contains(r.stderr, strings.TrimPrefix(o, "ro,")) {
			t.Fatalf("-o %s: exit %d, %q", o, r.code, r.stderr)
		}
	}
	m := mountImage(t, dir, "a.img", "-o", "rw,allow_other,commit=2")
	b, _ := os.ReadFile("/proc/self/mountinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, " "+m.dir+" ") && !strings.Contains(l, "allow_other") {
			t.Fatalf("allow_other not in the mount: %s", l)
		}
	}
	if ra := readAheadKB(t, m.dir, "4096"); os.Geteuid() == 0 && ra != "4096" {
		t.Errorf("read_ahead_kb of the mount %s, want the default 4096", ra)
	}
	m.unmount()
	m = mountImage(t, dir, "a.img", "-o", "readahead=512")
	if ra := readAheadKB(t, m.dir, "512"); os.Geteuid() == 0 && ra != "512" {
		t.Errorf("read_ahead_kb of the mount %s, want 512 (-o readahead=512)", ra)
	}
	m.unmount()
}

// readAheadKB reads the kernel's read-ahead window of the mount at dir,
// waiting up to 5 s for want: the mount shows in mountinfo before the
// server has set it.
func readAheadKB(t *testing.T, dir, want string) string {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/sys/class/bdi/%d:%d/read_ahead_kb", unix.Major(st.Dev), unix.Minor(st.Dev)))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(b)); got == want || time.Now().After(deadline) {
			return got
		}
	}
}

// TestMountKillSuid: writes, truncates and chowns clear set-user-ID and
// set-group-ID bits on the mount exactly as on the host's own filesystem
// (the model: the same steps in a host directory). The server does the
// clearing (CAP_HANDLE_KILLPRIV_V2); the unprivileged steps run as nobody
// on an allow_other mount.
func TestMountKillSuid(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: other users' writes, chown")
	}
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "a.img"), 0)
	m := mountImage(t, dir, "a.img", "-o", "allow_other")
	host := t.TempDir()
	// nobody must reach both directories (t.TempDir makes them 0700).
	for _, d := range []string{filepath.Dir(host), host, dir} {
		os.Chmod(d, 0o755)
	}
	asNobody := func(name string, args ...string) error {
		c := exec.Command(name, args...)
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := c.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}
	type step struct {
		name string
		mode os.FileMode
		dir  bool
		do   func(p string) error
	}
	steps := []step{
		{"nobody-append", 0o6777, false, func(p string) error { return asNobody("sh", "-c", "echo x >> "+p) }},
		{"nobody-append-sgid-nogx", 0o6767, false, func(p string) error { return asNobody("sh", "-c", "echo x >> "+p) }},
		{"nobody-truncate", 0o6777, false, func(p string) error { return asNobody("truncate", "-s", "1", p) }},
		{"root-append", 0o6755, false, func(p string) error { return exec.Command("sh", "-c", "echo x >> "+p).Run() }},
		{"root-chown", 0o6755, false, func(p string) error { return os.Chown(p, 1, 1) }},
		{"root-chown-dir", 0o2755, true, func(p string) error { return os.Chown(p, 1, 1) }},
	}
	for _, s := range steps {
		var modes [2]os.FileMode
		for i, base := range []string{host, m.dir} {
			p := filepath.Join(base, s.name)
			var err error
			if s.dir {
				err = os.Mkdir(p, 0o755)
			} else {
				err = os.WriteFile(p, []byte("data\n"), 0o644)
			}
			if err == nil {
				err = syscall.Chmod(p, uint32(s.mode))
			}
			if err == nil {
				err = s.do(p)
			}
			if err != nil {
				t.Fatalf("%s in %s: %v", s.name, base, err)
			}
			var st syscall.Stat_t
			if err := syscall.Stat(p, &st); err != nil {
				t.Fatal(err)
			}
			modes[i] = os.FileMode(st.Mode & 0o7777)
		}
		if modes[0] == os.FileMode(s.mode) && s.name == "nobody-append" {
			t.Fatalf("the host kept %o after an unprivileged append: the model is off", modes[0])
		}
		if modes[1] != modes[0] {
			t.Errorf("%s from %o: mode %o on the mount, %o on the host", s.name, s.mode, modes[1], modes[0])
		}
	}
	m.unmount()
	fsckClean(t, dir, "a.img")
}
