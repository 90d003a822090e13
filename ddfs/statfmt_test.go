package main

import (
	"syscall"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/attrspec"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// TestStatFormat checks GNU stat directives, flags and escapes against
// what GNU stat 9.1 prints for the same inode (values written out by hand).
func TestStatFormat(t *testing.T) {
	sf := &statFormat{acc: &attrspec.Accounts{}, img: "d.img"}
	in := &fsys.Inode{Ino: 258}
	in.Mode = syscall.S_IFREG | 0o4751
	in.Size, in.NBytes, in.Nlink, in.UID, in.GID = 5, 4096, 2, 1000, 100
	in.Mtime = format.Timespec{Sec: 1577934245, Nsec: 123456789}
	in.Ctime = format.Timespec{Sec: 1577934246}
	dev := &fsys.Inode{Ino: 9}
	dev.Mode, dev.Rdev = syscall.S_IFCHR|0o600, 0x10803 // 264, 3: major 0x108 > 255
	link := &fsys.Inode{Ino: 7}
	link.Mode = syscall.S_IFLNK | 0o777
	for _, c := range []struct {
		in      *fsys.Inode
		spec    string
		escapes bool
		want    string
	}{
		{in, "%a %A %s %b %B %h %i %u %g %F", false, "4751 -rwsr-x--x 5 8 512 2 258 1000 100 regular file"},
		{in, "%f|%y|%Y|%Z|%n", false, "89e9|2020-01-02 03:04:05.123456789 +0000|1577934245|1577934246|d.img:/f"},
		{in, "%06a|%-6s|%6s|%.3F|%08i|%%|%q|%", false, "004751|5     |     5|reg|00000258|%|?|%"},
		{in, `%i\t%s\n\x41\101\\\%|\q|\0101|\x4g|\x`, true, "258\t5\nAA\\%|q|\b1|\x04g|x"},
		{in, `%i\t`, false, `258\t`},
		{dev, "%t %T %F", false, "108 3 character special file"},
		{link, "%N", false, "'d.img:/f' -> 'target'"},
		{in, "%N", false, "'d.img:/f'"},
	} {
		if got := sf.expand(c.spec, c.escapes, "/f", c.in, "target"); got != c.want {
			t.Errorf("expand(%q) = %q, want %q", c.spec, got, c.want)
		}
	}
}
