package e2e

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMountCpPreserve: `cp -a` onto a mount keeps every mode, type, size
// and owner. coreutils sets a POSIX ACL (system.posix_acl_access) to set
// the mode and falls back to chmod only when that is EOPNOTSUPP; stored
// as a plain xattr it left files 0600 and directories 0700. The mount
// refuses both ACL names and reports neither, even one already stored;
// ddfs xattr set refuses them too.
func TestMountCpPreserve(t *testing.T) {
	const src = "/usr/share/doc"
	if _, err := os.Stat(src); err != nil {
		t.Skipf("no %s to copy: %v", src, err)
	}
	dir := t.TempDir()
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "1G", "-m", "single", "a.img"), 0)
	m := mountImage(t, dir, "a.img")
	if out, err := exec.Command("cp", "-a", src, m.path("doc")).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v\n%s", err, out)
	}
	sameLstat(t, src, m.path("doc"))

	f := m.path("doc/acl") // a directory: a default ACL is for one only
	if err := os.Mkdir(f, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"system.posix_acl_access", "system.posix_acl_default"} {
		wantErrno(t, "setxattr "+name, unix.Setxattr(f, name, posixACL, 0), unix.EOPNOTSUPP)
		_, err := unix.Getxattr(f, name, make([]byte, 64))
		wantErrno(t, "getxattr "+name, err, unix.ENODATA)
	}
	m.unmount()

	r := must(t, run(t, dir, "ddfs", "xattr", "set", "a.img:/doc/acl", "system.posix_acl_access", "0x02000000"), 1)
	if want := "ddfs: xattr: a.img:/doc/acl: system.posix_acl_access: POSIX ACLs are not supported (chmod sets the mode): Operation not supported\n"; r.stderr != want {
		t.Errorf("xattr set of an ACL: %q, want %q", r.stderr, want)
	}
	// An ACL in the image (ddfs cp -a of a host file that has one, or an
	// older mount) is neither listed nor read on the mount.
	h := filepath.Join(dir, "h")
	writeFile(t, h, "x")
	if err := unix.Setxattr(h, "system.posix_acl_access", posixACL, 0); err != nil {
		t.Logf("no ACL on the host file (%v): the stored-ACL case is not run", err)
		fsckClean(t, dir, "a.img")
		return
	}
	unix.Setxattr(h, "user.k", []byte("v"), 0)
	must(t, run(t, dir, "ddfs", "cp", "-a", "h", "a.img:/h"), 0)
	if r := must(t, run(t, dir, "ddfs", "xattr", "list", "a.img:/h"), 0); !strings.Contains(r.stdout, "system.posix_acl_access=") {
		t.Fatalf("the ACL was not copied in: %q", r.stdout)
	}
	m = mountImage(t, dir, "a.img")
	buf := make([]byte, 256)
	if n, err := unix.Listxattr(m.path("h"), buf); err != nil || string(buf[:n]) != "user.k\x00" {
		t.Errorf("listxattr: %q %v", buf[:n], err)
	}
	_, err := unix.Getxattr(m.path("h"), "system.posix_acl_access", buf)
	wantErrno(t, "getxattr of a stored ACL", err, unix.ENODATA)
	m.unmount()
	fsckClean(t, dir, "a.img")
}

// posixACL is a POSIX ACL xattr value that no mode can stand for (a host
// filesystem keeps it): version 2, then (tag, perm, id) entries user::rw-
// user:1000:r-- group::r-- mask::r-- other::r-- (no id: 2^32-1).
var posixACL = []byte{2, 0, 0, 0,
	1, 0, 6, 0, 255, 255, 255, 255, 2, 0, 4, 0, 0xe8, 3, 0, 0, 4, 0, 4, 0, 255, 255, 255, 255,
	0x10, 0, 4, 0, 255, 255, 255, 255, 0x20, 0, 4, 0, 255, 255, 255, 255}

// sameLstat walks a and wants b to hold the same paths with the same
// lstat type, mode, size (regular files and symlinks), owner and link
// target. As non-root cp -a cannot keep owners: then the caller's.
func sameLstat(t *testing.T, a, b string) {
	t.Helper()
	n, bad := 0, 0
	err := filepath.WalkDir(a, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(p, a)
		var sa, sb syscall.Stat_t
		if err := syscall.Lstat(p, &sa); err != nil {
			return err
		}
		if err := syscall.Lstat(b+rel, &sb); err != nil {
			t.Errorf("%s: %v", rel, err)
			return nil
		}
		n++
		uid, gid := sa.Uid, sa.Gid
		if os.Geteuid() != 0 {
			uid, gid = uint32(os.Geteuid()), uint32(os.Getegid())
		}
		size := sa.Size
		if sa.Mode&syscall.S_IFMT == syscall.S_IFDIR {
			size = sb.Size // a directory's size is the filesystem's own
		}
		if sb.Mode != sa.Mode || sb.Size != size || sb.Uid != uid || sb.Gid != gid {
			if bad++; bad > 10 {
				return nil // counted below
			}
			t.Errorf("%s: mode %o size %d owner %d:%d, source mode %o size %d owner %d:%d", rel, sb.Mode, sb.Size, sb.Uid, sb.Gid, sa.Mode, sa.Size, uid, gid)
		}
		if sa.Mode&syscall.S_IFMT == syscall.S_IFLNK {
			la, _ := os.Readlink(p)
			if lb, err := os.Readlink(b + rel); err != nil || lb != la {
				t.Errorf("%s: link %q %v, source %q", rel, lb, err, la)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 2 || bad > 0 {
		t.Fatalf("%d of %d paths differ", bad, n)
	}
}
