package mkfs

import (
	"bytes"
	"encoding/binary"
	"strings"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/volume"
	"io"
)

// signature is a known on-disk magic at a fixed offset.
type signature struct {
	name  string
	off   int64
	magic []byte
}

var signatures = []signature{
	{"btrfs", 0x10040, []byte("_BHRfS_M")},
	{"ext2/3/4", 0x438, []byte{0x53, 0xEF}},
	{"xfs", 0, []byte("XFSB")},
	{"LUKS", 0, []byte("LUKS\xba\xbe")},
	{"swap", 4086, []byte("SWAPSPACE2")},
	{"iso9660", 0x8001, []byte("CD001")},
	{"GPT partition table", 512, []byte("EFI PART")},
	{"squashfs", 0, []byte("hsqs")},
	{"erofs", 1024, []byte{0xe2, 0xe1, 0xf5, 0xe0}},
	{"vfat", 82, []byte("FAT32")},
	{"vfat", 54, []byte("FAT1")},
}

// Detect names the filesystem or partition table found on r, or "".
func Detect(r io.ReaderAt, size int64) string {
	buf := make([]byte, format.SuperblockSize)
	for _, off := range volume.SuperOffsets(size) {
		if n, _ := r.ReadAt(buf, int64(off)); n == len(buf) && string(buf[32:40]) == format.SuperblockMagic {
			return "ddfs filesystem"
		}
	}
	for _, s := range signatures {
		b := make([]byte, len(s.magic))
		if s.off+int64(len(b)) > size {
			continue
		}
		if n, _ := r.ReadAt(b, s.off); n == len(b) && bytes.Equal(b, s.magic) {
			if !strings.Contains(s.name, "partition") {
				return s.name + " filesystem"
			}
			return s.name
		}
	}
	// A DOS/MBR partition table: boot signature plus a non-empty entry.
	mbr := make([]byte, 512)
	if n, _ := r.ReadAt(mbr, 0); n == 512 && mbr[510] == 0x55 && mbr[511] == 0xAA {
		for i := 0; i < 4; i++ {
			e := mbr[446+16*i:]
			if e[4] != 0 && binary.LittleEndian.Uint32(e[12:]) != 0 {
				return "MBR partition table"
			}
		}
	}
	return ""
}
