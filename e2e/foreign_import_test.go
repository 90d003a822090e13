package e2e

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// importTree is a host tree with what ext4 keeps: modes with setuid,
// owners, a hard link, symlinks, a fifo, a device node (as root).
func importTree(t *testing.T) string {
	src := filepath.Join(t.TempDir(), "src")
	for p, b := range map[string]string{"a.txt": "alpha\n", "dir/b.bin": strings.Repeat("b", 300000), "dir/sub/c": "", "dir/sp ace": "s\n", "dir/caf\xe9": "latin-1\n"} {
		full := filepath.Join(src, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, err := range []error{
		os.Chmod(filepath.Join(src, "a.txt"), 0o750|os.ModeSetuid),
		os.Lchown(filepath.Join(src, "dir/b.bin"), 1001, 1002),
		os.Link(filepath.Join(src, "a.txt"), filepath.Join(src, "dir/hard")),
		os.Symlink("../a.txt", filepath.Join(src, "dir/link")),
		syscall.Mkfifo(filepath.Join(src, "fifo"), 0o640),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if os.Geteuid() == 0 {
		if err := syscall.Mknod(filepath.Join(src, "dir/null"), syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
			t.Fatal(err)
		}
	}
	return src
}

func mke2fs(t *testing.T, src, img string, features ...string) {
	t.Helper()
	opts := strings.Join(append([]string{"metadata_csum"}, features...), ",")
	if out, err := exec.Command("mke2fs", "-q", "-F", "-t", "ext4", "-O", opts, "-E", "root_owner=0:0", "-d", src, img, "16M").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v %s", err, out)
	}
}

// TestForeignImport: an ext4 image's tree comes into ddfs with what
// ext4 keeps, by mkfs.ddfs -r IMAGE and by cp -a IMAGE:PATH IMG:PATH,
// and tar-out of the ext4 image streams the same tree: each compared,
// entry by entry, with the host tree mke2fs was given (os.Lstat, not
// ddfs's reading). A sparse file comes in with its holes (read through
// its extent tree), and so does an image with inline data; a file that
// does not read fails the mkfs, naming it, and leaves no image.
func TestForeignImport(t *testing.T) {
	if _, err := exec.LookPath("mke2fs"); err != nil {
		t.Skip("mke2fs not installed")
	}
	dir := t.TempDir()
	src := importTree(t)
	mke2fs(t, src, filepath.Join(dir, "root.ext4"))
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "-r", "root.ext4", "a.img"), 0)
	must(t, run(t, dir, "fsck.ddfs", "a.img"), 0)
	// diff reads foreign images: the import is the image, the image the source.
	must(t, run(t, dir, "ddfs", "diff", "root.ext4:/", "a.img:/"), 0)
	must(t, run(t, dir, "ddfs", "diff", "root.ext4:/dir", filepath.Join(src, "dir")), 0)
	if r := must(t, run(t, dir, "ddfs", "du", "-b", "root.ext4:/dir/b.bin"), 0); r.stdout != "300000\troot.ext4:/dir/b.bin\n" {
		t.Fatalf("du -b: %q", r.stdout)
	}
	// find walks it, its expression seeing what ext4 keeps.
	if r := must(t, run(t, dir, "ddfs", "find", "root.ext4:/dir", "-type", "f", "-size", "+1k"), 0); r.stdout != "/dir/b.bin\n" {
		t.Fatalf("find -type f -size +1k: %q", r.stdout)
	}
	if r := must(t, run(t, dir, "ddfs", "find", "root.ext4:/", "-type", "p", "-o", "-empty", "-type", "f"), 0); r.stdout != "/dir/sub/c\n/fifo\n" {
		t.Fatalf("find -type p -o -empty: %q", r.stdout)
	}
	tarHolds(t, must(t, run(t, dir, "ddfs", "tar-out", "a.img:/"), 0).stdout, src)
	tarHolds(t, must(t, run(t, dir, "ddfs", "tar-out", "root.ext4:/"), 0).stdout, src)

	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "b.img"), 0)
	must(t, run(t, dir, "ddfs", "mkdir", "b.img:/x"), 0)
	must(t, run(t, dir, "ddfs", "cp", "-a", "root.ext4:/dir", "b.img:/x"), 0)
	must(t, run(t, dir, "ddfs", "cp", "-a", "root.ext4:/dir/sub", "b.img:/renamed"), 0)
	tarHolds(t, must(t, run(t, dir, "ddfs", "tar-out", "b.img:/x/dir"), 0).stdout, filepath.Join(src, "dir"))
	tarHolds(t, must(t, run(t, dir, "ddfs", "tar-out", "b.img:/renamed"), 0).stdout, filepath.Join(src, "dir/sub"))
	if r := must(t, run(t, dir, "ddfs", "cp", "root.ext4:/dir", "b.img:/y"), 1); !strings.Contains(r.stderr, "root.ext4:/dir: -r not specified") {
		t.Fatalf("cp of a directory without -r: %q", r.stderr)
	}
	must(t, run(t, dir, "fsck.ddfs", "b.img"), 0)

	os.Truncate(filepath.Join(src, "dir/sub/c"), 1<<20) // now sparse
	mke2fs(t, src, filepath.Join(dir, "sparse.ext4"))
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "-r", "sparse.ext4", "c.img"), 0)
	tarHolds(t, must(t, run(t, dir, "ddfs", "tar-out", "c.img:/"), 0).stdout, src)
	// Extended attributes come in (go-diskfs keeps none: ext's are read
	// by pkg/foreign), checked against ddfs's own listing.
	if err := unix.Setxattr(filepath.Join(src, "dir/sub/c"), "user.origin", []byte("ext4"), 0); err == nil {
		mke2fs(t, src, filepath.Join(dir, "xattr.ext4"))
		must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "-r", "xattr.ext4", "x.img"), 0)
		if r := must(t, run(t, dir, "ddfs", "xattr", "get", "x.img:/dir/sub/c", "user.origin"), 0); !strings.Contains(r.stdout, "ext4") {
			t.Fatalf("xattr after import: %q", r.stdout)
		}
		unix.Removexattr(filepath.Join(src, "dir/sub/c"), "user.origin")
	}
	// Inline data (small files, directories and long symlink targets in
	// the inode): go-diskfs cannot list it; pkg/foreign reads it itself.
	mke2fs(t, src, filepath.Join(dir, "inline.ext4"), "inline_data")
	must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "-r", "inline.ext4", "d.img"), 0)
	tarHolds(t, must(t, run(t, dir, "ddfs", "tar-out", "d.img:/"), 0).stdout, src)
	// What does not read (an extent tree's header zeroed) fails the
	// mkfs, naming where, and leaves no image.
	mke2fs(t, src, filepath.Join(dir, "bad.ext4"))
	if out, err := exec.Command("debugfs", "-w", "-R", "sif /dir/b.bin block[0] 0", filepath.Join(dir, "bad.ext4")).CombinedOutput(); err != nil {
		t.Fatalf("debugfs: %v %s", err, out)
	}
	if r := must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "128M", "-r", "bad.ext4", "e.img"), 1); !strings.Contains(r.stderr, "bad.ext4:/dir") || !strings.Contains(r.stderr, "extent") {
		t.Fatalf("mkfs -r of an image with a broken extent tree: %q", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "e.img")); err == nil {
		t.Fatal("the failed mkfs left its image")
	}
}

// tarHolds requires tar stream s to hold exactly the host tree src
// (ext4's lost+found aside): types, modes, owners, mtimes to the second,
// bytes, symlink targets, device numbers, and hard links as links to a
// name of the same file.
func tarHolds(t *testing.T, s, src string) {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader([]byte(s)))
	seen, links := map[string]bool{}, 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")
		if name == "." || name == "" || strings.HasPrefix(name, "lost+found") {
			continue
		}
		seen[name] = true
		hst, err := os.Lstat(filepath.Join(src, name))
		if err != nil {
			t.Errorf("%s: in the stream, not in the source", name)
			continue
		}
		hs := hst.Sys().(*syscall.Stat_t)
		if h.Typeflag == tar.TypeLink {
			links++
			if other, err := os.Lstat(filepath.Join(src, h.Linkname)); err != nil || !os.SameFile(hst, other) {
				t.Errorf("%s: a hard link to %s", name, h.Linkname)
			}
			continue
		}
		want := map[uint32]byte{syscall.S_IFREG: tar.TypeReg, syscall.S_IFDIR: tar.TypeDir, syscall.S_IFLNK: tar.TypeSymlink,
			syscall.S_IFIFO: tar.TypeFifo, syscall.S_IFCHR: tar.TypeChar}[hs.Mode&syscall.S_IFMT]
		switch {
		case h.Typeflag != want:
			t.Errorf("%s: type %c, want %c", name, h.Typeflag, want)
		case uint32(h.Mode)&0o7777 != hs.Mode&0o7777 && h.Typeflag != tar.TypeSymlink:
			t.Errorf("%s: mode %o, want %o", name, h.Mode, hs.Mode&0o7777)
		case h.Uid != int(hs.Uid) || h.Gid != int(hs.Gid):
			t.Errorf("%s: owner %d:%d, want %d:%d", name, h.Uid, h.Gid, hs.Uid, hs.Gid)
		case h.Typeflag != tar.TypeSymlink && h.ModTime.Unix() != hst.ModTime().Unix():
			t.Errorf("%s: mtime %v, want %v", name, h.ModTime, hst.ModTime())
		case h.Typeflag == tar.TypeChar && (h.Devmajor != 1 || h.Devminor != 3):
			t.Errorf("%s: device %d,%d, want 1,3", name, h.Devmajor, h.Devminor)
		case h.Typeflag == tar.TypeSymlink:
			if target, _ := os.Readlink(filepath.Join(src, name)); h.Linkname != target {
				t.Errorf("%s: target %q, want %q", name, h.Linkname, target)
			}
		case h.Typeflag == tar.TypeReg:
			b, _ := io.ReadAll(tr)
			if want, _ := os.ReadFile(filepath.Join(src, name)); !bytes.Equal(b, want) {
				t.Errorf("%s: %d bytes differ from the source's %d", name, len(b), len(want))
			}
		}
	}
	names := map[uint64]int{}
	filepath.Walk(src, func(p string, fi os.FileInfo, _ error) error {
		if rel, _ := filepath.Rel(src, p); rel != "." && !seen[rel] {
			t.Errorf("%s: in the source, not in the stream", rel)
		}
		names[fi.Sys().(*syscall.Stat_t).Ino]++
		return nil
	})
	want := 0
	for _, n := range names {
		want += n - 1
	}
	if links != want {
		t.Errorf("%d hard links in the stream, the source has %d", links, want)
	}
}
