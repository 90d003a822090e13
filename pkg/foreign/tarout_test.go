package foreign

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
)

// TestTarOutKeepsTheSource: each builder's image streamed by TarOut
// holds, entry for entry, the source tree the standard tool built it
// from (read back with archive/tar and compared with os.Lstat of the
// source): types, the mode bits, owners and mtimes the format keeps,
// symlink targets, file bytes, and where the format numbers inodes one
// file and a hard link naming it (ISO 9660 counts links but numbers no
// inodes: its hard links come out as copies).
func TestTarOutKeepsTheSource(t *testing.T) {
	for _, f := range builders {
		t.Run(string(f.kind), func(t *testing.T) {
			needTools(t, f.tools...)
			src := makeTree(t, f)
			img := filepath.Join(t.TempDir(), "x.img")
			f.build(t, src, img)
			im, err := Open(img)
			must(t, err)
			defer im.Close()
			var buf bytes.Buffer
			must(t, im.TarOut(&buf, "/", TarOptions{}))
			compareTar(t, &buf, f, src)
		})
	}
}

func compareTar(t *testing.T, r io.Reader, f builder, src string) {
	t.Helper()
	tr := tar.NewReader(r)
	seen, links := map[string]bool{}, 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		must(t, err)
		name := strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")
		if name == "." || name == "lost+found" || strings.HasPrefix(name, "lost+found/") {
			continue
		}
		seen[name] = true
		hp := filepath.Join(src, name)
		hst, err := os.Lstat(hp)
		if err != nil {
			t.Errorf("%s: in the stream, not in the source", name)
			continue
		}
		hs := hst.Sys().(*syscall.Stat_t)
		if h.Typeflag == tar.TypeLink {
			links++
			if !f.hardLinks || !os.SameFile(hst, lstat(t, filepath.Join(src, h.Linkname))) {
				t.Errorf("%s: a hard link to %s", name, h.Linkname)
			}
			continue
		}
		if want := map[uint32]byte{syscall.S_IFREG: tar.TypeReg, syscall.S_IFDIR: tar.TypeDir, syscall.S_IFLNK: tar.TypeSymlink, syscall.S_IFIFO: tar.TypeFifo}[hs.Mode&syscall.S_IFMT]; h.Typeflag != want {
			t.Errorf("%s: type %c, want %c", name, h.Typeflag, want)
			continue
		}
		if uint32(h.Mode)&f.permMask != hs.Mode&f.permMask {
			t.Errorf("%s: mode %o, want %o (mask %o)", name, h.Mode, hs.Mode&0o7777, f.permMask)
		}
		if f.owners && (h.Uid != int(hs.Uid) || h.Gid != int(hs.Gid)) {
			t.Errorf("%s: owner %d:%d, want %d:%d", name, h.Uid, h.Gid, hs.Uid, hs.Gid)
		}
		if f.mtime && h.Typeflag != tar.TypeSymlink && h.ModTime.Unix() != hst.ModTime().Unix() {
			t.Errorf("%s: mtime %v, want %v", name, h.ModTime, hst.ModTime())
		}
		switch h.Typeflag {
		case tar.TypeSymlink:
			if target, _ := os.Readlink(hp); h.Linkname != target {
				t.Errorf("%s: target %q, want %q", name, h.Linkname, target)
			}
		case tar.TypeReg:
			b, err := io.ReadAll(tr)
			if err != nil || sha256.Sum256(b) != sum(t, hp) {
				t.Errorf("%s: %d bytes (%v) differ from the source's %d", name, len(b), err, hst.Size())
			}
		}
	}
	total := 0
	filepath.Walk(src, func(p string, _ os.FileInfo, _ error) error {
		rel, _ := filepath.Rel(src, p)
		if rel != "." && !seen[rel] {
			t.Errorf("%s: in the source, not in the stream", rel)
		}
		total++
		return nil
	})
	if total < 10 || (f.inos && links != 1) {
		t.Errorf("%d source entries, %d hard links in the stream", total, links)
	}
}

func lstat(t *testing.T, p string) os.FileInfo {
	st, err := os.Lstat(p)
	must(t, err)
	return st
}

// TestFSPassesFSTest: the io/fs view of each builder's image passes
// testing/fstest's checks (names, Stat, ReadDir, reads) on a subtree of
// directories and files (fstest opens every entry: a dangling symlink or
// a fifo has nothing to open, on a host directory too).
func TestFSPassesFSTest(t *testing.T) {
	for _, f := range builders {
		t.Run(string(f.kind), func(t *testing.T) {
			needTools(t, f.tools...)
			src := makeTree(t, f)
			img := filepath.Join(t.TempDir(), "x.img")
			f.build(t, src, img)
			im, err := Open(img)
			must(t, err)
			defer im.Close()
			sub, err := fs.Sub(im.FS(), "dir/sub")
			must(t, err)
			if err := fstest.TestFS(sub, "deeper/random.bin", "Mixed.Case.Name"); err != nil {
				t.Fatal(err)
			}
		})
	}
}
