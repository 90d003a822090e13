package foreign

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
)

// TestOwnExtListing: on an ext4 image without inline data, the listing
// of our own (extdir.go, used for inline-data images) gives every entry
// exactly the Stat go-diskfs's listing gives: an independent oracle for
// its inode decoding (owners, 64-bit sizes, ns times, device numbers,
// slow symlinks) and its directory blocks (several per directory,
// checksum tails).
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
	theirs, err := Open(img)
	must(t, err)
	defer theirs.Close()
	ours, err := Open(img)
	must(t, err)
	defer ours.Close()
	x, err := ours.extInodes()
	must(t, err)
	if x.g.inline {
		t.Fatal("the image has inline data")
	}
	x.g.inline = true // list it as an inline-data image is listed
	n := 0
	var walk func(p string)
	walk = func(p string) {
		want, err := theirs.ReadDir(p)
		must(t, err)
		got, err := ours.ReadDir(p)
		must(t, err)
		if len(got) != len(want) {
			t.Fatalf("%s: %d entries, want %d", p, len(got), len(want))
		}
		for i := range want {
			n++
			if !sameStat(got[i], want[i]) {
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
	if g, w := ours.rootStat(), theirs.rootStat(); !sameStat(g, w) {
		t.Errorf("root:\n got %+v\nwant %+v", *g, *w)
	}
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
