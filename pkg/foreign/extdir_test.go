package foreign

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/diskfs/go-diskfs/filesystem/ext4"
)

// TestOwnExtListing: ddfs's ext listing (extdir.go) gives every entry
// exactly the Stat go-diskfs's own listing gives (its permission bits
// aside: go-diskfs's DirEntry has none): an independent oracle for the
// inode decoding (owners, 64-bit sizes, ns times, device numbers, slow
// symlinks) and the directory blocks (several per directory, checksum
// tails).
func TestOwnExtListing(t *testing.T) {
	needTools(t, "mke2fs")
	f := builders[0]
	src := makeTree(t, f)
	if os.Geteuid() == 0 {
		must(t, syscall.Mknod(filepath.Join(src, "dir/tty"), syscall.S_IFCHR|0o620, int(4<<8|1)))
		must(t, syscall.Mknod(filepath.Join(src, "dir/big-minor"), syscall.S_IFBLK|0o600, int(259<<8|(300&0xff)|(300&^0xff)<<12)))
	}
	must(t, os.Lchown(filepath.Join(src, "dir/sub"), 70000, 80000)) // past 16 bits
	img := filepath.Join(t.TempDir(), "x.img")
	f.build(t, src, img)
	// ns times and an epoch bit (mke2fs -d keeps whole seconds)
	sh(t, "debugfs", "-w", "-R", fmt.Sprintf("sif /dir/hundred mtime_extra %d", 123456789<<2|1), img)
	sh(t, "debugfs", "-w", "-R", fmt.Sprintf("sif /dir/sub crtime_extra %d", 987654321<<2), img)
	im, err := Open(img)
	must(t, err)
	defer im.Close()
	n := 0
	var walk func(p string)
	walk = func(p string) {
		want := diskfsExtListing(t, im, p)
		got, err := im.ReadDir(p)
		must(t, err)
		if len(got) != len(want) {
			t.Fatalf("%s: %d entries, want %d", p, len(got), len(want))
		}
		for i := range want {
			n++
			g := *got[i]
			if g.Mode&syscall.S_IFMT == want[i].Mode&syscall.S_IFMT {
				g.Mode = want[i].Mode
			}
			if !sameStat(&g, want[i]) {
				t.Errorf("%s:\n got %+v\nwant %+v", path.Join(p, want[i].Name), *got[i], *want[i])
			}
			if want[i].IsDir() {
				walk(path.Join(p, want[i].Name))
			}
		}
	}
	walk("/")
	if n < 60 {
		t.Fatalf("compared %d entries", n)
	}
}

// diskfsExtListing is go-diskfs's listing of ext directory p, each entry
// as its ext4.StatT says.
func diskfsExtListing(t *testing.T, im *Image, p string) []*Stat {
	ents, err := im.fs.ReadDir(fsPath(strings.TrimPrefix(p, "/")))
	must(t, err)
	var out []*Stat
	for _, e := range ents {
		fi, err := e.Info()
		must(t, err)
		st, err := statOf(fi, e.Name())
		must(t, err)
		x := fi.Sys().(*ext4.StatT)
		st.UID, st.GID, st.Ino, st.Nlink = x.UID, x.GID, uint64(x.Ino), uint32(x.Nlink)
		st.Atime, st.Ctime, st.Btime, st.Target = x.AccessTime, x.ChangeTime, x.CreateTime, x.LinkTarget
		st.Rdev = uint64(x.Minor&0xff) | uint64(x.Major&0xfff)<<8 | uint64(x.Minor&^0xff)<<12
		if st.IsSymlink() {
			st.Size = int64(len(st.Target))
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// sameStat compares every field, times as instants (go-diskfs's are in
// the local zone).
func sameStat(a, b *Stat) bool {
	x, y := *a, *b
	for _, p := range []*Stat{&x, &y} {
		p.Mtime, p.Atime, p.Ctime, p.Btime = p.Mtime.UTC(), p.Atime.UTC(), p.Ctime.UTC(), p.Btime.UTC()
	}
	return reflect.DeepEqual(x, y)
}

// TestExtHugeSizes: a directory and a slow symlink whose inodes claim
// 4 GiB over one extent of 32767 64 KiB blocks are refused after small
// reads. go-diskfs's listing allocated min(extent, size) before reading
// (2 GiB for each, on every listing of their parent), which is why ddfs
// lists every ext image itself.
func TestExtHugeSizes(t *testing.T) {
	needTools(t, "mke2fs", "debugfs")
	src := filepath.Join(t.TempDir(), "src")
	must(t, os.MkdirAll(filepath.Join(src, "d"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "d/f"), []byte("f"), 0o644))
	must(t, os.Symlink(strings.Repeat("t", 100), filepath.Join(src, "l"))) // past i_block's 60 bytes: a block of its own
	img := filepath.Join(t.TempDir(), "x.img")
	sh(t, "mke2fs", "-q", "-F", "-t", "ext4", "-O", "metadata_csum,^inline_data", "-b", "65536", "-d", src, img, "8M")
	for _, p := range []string{"/d", "/l"} {
		// i_block word 4: the first extent's length (and start_hi 0)
		sh(t, "debugfs", "-w", "-R", "sif "+p+" block[4] 0x7fff", img)
		sh(t, "debugfs", "-w", "-R", "sif "+p+" size 0xffff0000", img)
	}
	im, err := Open(img)
	must(t, err)
	defer im.Close()
	for _, p := range []string{"/", "/d"} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := im.ReadDir(p)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrCorrupt) || after.TotalAlloc-before.TotalAlloc > 64<<20 {
			t.Errorf("%s listed (%v) after allocating %d bytes", p, err, after.TotalAlloc-before.TotalAlloc)
		}
	}
}
