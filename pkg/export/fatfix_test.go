package export

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// tinyFAT is a small FAT32 layout (512-byte sectors, one sector a
// cluster, 32 reserved sectors, one FAT of one sector, 20 clusters)
// holding what go-diskfs v1.9.4 writes wrong: a directory SUB in the
// root (cluster 3) whose ".." names the root's cluster 2, an empty file
// E with a chain 4 -> 5, and an FSInfo free count left unknown.
func tinyFAT() []byte {
	const bps, reserved, clusters = 512, 32, 20
	b := make([]byte, (reserved+1+clusters)*bps)
	le16 := func(o, v int) { binary.LittleEndian.PutUint16(b[o:], uint16(v)) }
	le32 := func(o, v int) { binary.LittleEndian.PutUint32(b[o:], uint32(v)) }
	le16(11, bps)
	b[13] = 1 // sectors a cluster
	le16(14, reserved)
	b[16] = 1 // FATs
	le32(32, reserved+1+clusters)
	le32(36, 1) // FAT sectors
	le32(44, 2) // root cluster
	le16(48, 1) // FSInfo sector
	le16(50, 6) // backup boot sector
	le32(bps+0, fsInfoLead)
	le32(bps+484, fsInfoStruct)
	le32(bps+488, 0xFFFFFFFF)
	fat := reserved * bps
	for c, v := range map[int]int{0: 0x0FFFFFF8, 1: 0x0FFFFFFF, 2: 0x0FFFFFFF, 3: 0x0FFFFFFF, 4: 5, 5: 0x0FFFFFFF} {
		le32(fat+4*c, v)
	}
	entry := func(at int, name string, attr byte, cluster, size int) {
		copy(b[at:at+11], name)
		b[at+11] = attr
		le16(at+20, cluster>>16)
		le16(at+26, cluster&0xFFFF)
		le32(at+28, size)
	}
	data := func(c int) int { return (reserved + 1 + c - 2) * bps }
	entry(data(2), "SUB        ", 0x10, 3, 0)
	entry(data(2)+32, "E          ", 0x20, 4, 0)
	entry(data(3), ".          ", 0x10, 3, 0)
	entry(data(3)+32, "..         ", 0x10, 2, 0)
	return b
}

func fixFile(t testing.TB, b []byte) ([]byte, error) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	ferr := fatFix(w)
	w.Close()
	out, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return out, ferr
}

// fatFix mends each of the three faults and nothing else.
func TestFatFixMends(t *testing.T) {
	in := tinyFAT()
	out, err := fixFile(t, in)
	if err != nil {
		t.Fatal(err)
	}
	const bps, fat = 512, 32 * 512
	data := func(c int) int { return (33 + c - 2) * bps }
	u32 := func(o int) uint32 { return binary.LittleEndian.Uint32(out[o:]) }
	u16 := func(o int) uint16 { return binary.LittleEndian.Uint16(out[o:]) }
	if u16(data(3)+32+26) != 0 || u16(data(3)+32+20) != 0 {
		t.Error(`".." of a root child still names a cluster`)
	}
	if u16(data(2)+32+26) != 0 || u32(fat+16)&fatMask != 0 || u32(fat+20)&fatMask != 0 {
		t.Error("the empty file's chain was not freed")
	}
	if u16(data(2)+26) != 3 || u32(fat+12) != 0x0FFFFFFF || u16(data(3)+26) != 3 {
		t.Error("the directory's own entries changed")
	}
	if free := u32(bps + 488); free != 20-2 { // clusters 2 (root) and 3 (SUB) in use
		t.Errorf("FSInfo free count %d, want 18", free)
	}
	if u32(bps+492) != 4 {
		t.Errorf("FSInfo next free %d, want 4", u32(bps+492))
	}
}

// Whatever the bytes, fatFix returns: no panic, no hang.
func FuzzFatFix(f *testing.F) {
	f.Add(tinyFAT())
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 64<<10 {
			return
		}
		fixFile(t, b)
	})
}
