package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestDebianRootfsImport: the host's own Debian tree (/etc, /usr/sbin and
// the set-user-ID programs of /usr/bin, copied with cp -a so it holds
// still) made into ext4 (mke2fs -d) and squashfs (mksquashfs) images,
// each imported with mkfs.ddfs -r: fsck clean, and tar-out of the import
// holds exactly the copied tree (types, modes with set-ID bits, owners,
// mtimes, bytes, symlink targets, hard links).
func TestDebianRootfsImport(t *testing.T) {
	for _, tool := range []string{"mke2fs", "mksquashfs"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: cp -a keeps owners only as root")
	}
	dir := t.TempDir()
	tree := filepath.Join(dir, "rootfs")
	if err := os.MkdirAll(filepath.Join(tree, "usr/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/etc", "/usr/sbin", "/usr/bin/passwd", "/usr/bin/su", "/usr/bin/mount", "/usr/bin/chsh", "/usr/bin/newgrp"} {
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if out, err := exec.Command("cp", "-a", "--parents", p, tree).CombinedOutput(); err != nil {
			t.Fatalf("cp -a %s: %v %s", p, err, out)
		}
	}
	if out, err := exec.Command("mke2fs", "-q", "-F", "-t", "ext4", "-E", "root_owner=0:0", "-d", tree, filepath.Join(dir, "root.ext4"), "96M").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v %s", err, out)
	}
	if out, err := exec.Command("mksquashfs", tree, filepath.Join(dir, "root.sqfs"), "-quiet", "-noappend", "-no-progress").CombinedOutput(); err != nil {
		t.Fatalf("mksquashfs: %v %s", err, out)
	}
	for _, img := range []string{"root.ext4", "root.sqfs"} {
		out := img + ".img"
		must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "256M", "-r", img, out), 0)
		must(t, run(t, dir, "fsck.ddfs", out), 0)
		tarHolds(t, must(t, run(t, dir, "ddfs", "tar-out", out+":/"), 0).stdout, tree)
	}
}
