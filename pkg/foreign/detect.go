package foreign

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"strings"

	"github.com/ddfs/ddfs/format"
)

// Signature places (each format's own spec; offsets in bytes from the
// start of the filesystem).
const (
	extSuperOff   = 1024 // ext2/3/4 superblock
	extMagicOff   = 56   // s_magic within it, 0xEF53
	extMagic      = 0xEF53
	isoPVDOff     = 32768  // ISO 9660 system area is 16 sectors of 2048
	squashMagic   = "hsqs" // little-endian squashfs 4.0
	gptHeaderOff  = 512    // GPT header at LBA 1 (512-byte sectors)
	bootSigOff    = 510    // 0x55 0xAA ends an MBR or a FAT boot sector
	maxProbeBytes = isoPVDOff + 2048
	ddfsMagicOff  = 32 // the magic's offset in a ddfs superblock (format/superblock.go sbMagic)
)

// ext feature bits that make an ext2 image ext3 or ext4 (ext4 spec, "The Super Block").
const (
	extCompatHasJournal     = 0x4
	extIncompatExt2         = 0x2 | 0x4 | 0x8 | 0x10 // filetype, recover, journal_dev, meta_bg
	extRoCompatExt2         = 0x1 | 0x2 | 0x4        // sparse_super, large_file, btree_dir
	extIncompat64Bit        = 0x80
	extRoCompatMetadataCsum = 0x400
)

// Probe names the filesystem or partition table at the start of r (size
// bytes) by signature; ErrUnknown when there is none it knows.
func Probe(r io.ReaderAt, size int64) (Kind, error) {
	if isDDFS(r, size) {
		return "", fmt.Errorf("a ddfs image: %w", ErrUnknown)
	}
	buf := make([]byte, min(size, maxProbeBytes))
	if n, err := r.ReadAt(buf, 0); n < len(buf) {
		return "", fmt.Errorf("read the first %d bytes: %w", len(buf), err)
	}
	switch {
	case len(buf) >= 4 && string(buf[:4]) == squashMagic:
		return Squashfs, nil
	case len(buf) >= extSuperOff+1024 && binary.LittleEndian.Uint16(buf[extSuperOff+extMagicOff:]) == extMagic:
		return extKind(buf[extSuperOff : extSuperOff+1024]), nil
	case len(buf) >= isoPVDOff+7 && string(buf[isoPVDOff+1:isoPVDOff+6]) == "CD001":
		return ISO9660, nil
	}
	if k, ok := fatKind(buf); ok {
		return k, nil
	}
	if len(buf) >= gptHeaderOff+8 && string(buf[gptHeaderOff:gptHeaderOff+8]) == "EFI PART" {
		return GPT, nil
	}
	if len(buf) >= 4096+8 && string(buf[4096:4096+8]) == "EFI PART" {
		return GPT, nil
	}
	if len(buf) >= 512 && buf[bootSigOff] == 0x55 && buf[bootSigOff+1] == 0xAA && mbrHasPartition(buf) {
		return MBR, nil
	}
	return "", ErrUnknown
}

// isDDFS: a ddfs superblock is where format.SuperblockOffsets[0] puts
// it; such an image is ddfs's own, whatever else it holds.
func isDDFS(r io.ReaderAt, size int64) bool {
	off := int64(format.SuperblockOffsets[0]) + ddfsMagicOff
	b := make([]byte, len(format.SuperblockMagic))
	if size < off+int64(len(b)) {
		return false
	}
	n, _ := r.ReadAt(b, off)
	return n == len(b) && string(b) == format.SuperblockMagic
}

func extKind(sb []byte) Kind {
	compat := binary.LittleEndian.Uint32(sb[92:])
	incompat := binary.LittleEndian.Uint32(sb[96:])
	rocompat := binary.LittleEndian.Uint32(sb[100:])
	switch {
	case incompat&^extIncompatExt2 != 0 || rocompat&^extRoCompatExt2 != 0:
		return Ext4
	case compat&extCompatHasJournal != 0:
		return Ext3
	}
	return Ext2
}

// mbrHasPartition: one of the four MBR slots names a partition (a type
// and a size), each slot's boot flag 0x00 or 0x80.
func mbrHasPartition(b []byte) bool {
	any := false
	for i := 0; i < 4; i++ {
		e := b[446+16*i : 446+16*i+16]
		if e[0] != 0 && e[0] != 0x80 {
			return false
		}
		if e[4] != 0 && binary.LittleEndian.Uint32(e[12:]) != 0 {
			any = true
		}
	}
	return any
}

// fatBPB is the BIOS parameter block fields Probe and the FAT checks use
// (Microsoft's FAT specification, "BPB"), at their offsets in sector 0.
type fatBPB struct {
	bytesPerSector    uint32 // 11, u16: 512, 1024, 2048 or 4096
	sectorsPerCluster uint32 // 13, u8: a power of two up to 128
	reserved          uint32 // 14, u16: >= 1
	fats              uint32 // 16, u8: >= 1
	rootEntries       uint32 // 17, u16: 0 on FAT32
	totalSectors      uint64 // 19 u16, or 32 u32 when that is 0
	fatSectors        uint32 // 22 u16, or 36 u32 (FAT32) when that is 0
	clusters          uint32 // data clusters, which decide FAT12/16/32
	kind              Kind
	// fat16Size: a FAT32 boot sector with a 16-bit FAT size too (boundFAT
	// refuses it: go-diskfs reads the 32-bit one, ddfs checked this one).
	fat16Size bool
}

func parseBPB(b []byte) (fatBPB, bool) {
	if len(b) < 512 || b[bootSigOff] != 0x55 || b[bootSigOff+1] != 0xAA || (b[0] != 0xEB && b[0] != 0xE9) {
		return fatBPB{}, false
	}
	p := fatBPB{
		bytesPerSector:    uint32(binary.LittleEndian.Uint16(b[11:])),
		sectorsPerCluster: uint32(b[13]),
		reserved:          uint32(binary.LittleEndian.Uint16(b[14:])),
		fats:              uint32(b[16]),
		rootEntries:       uint32(binary.LittleEndian.Uint16(b[17:])),
		totalSectors:      uint64(binary.LittleEndian.Uint16(b[19:])),
		fatSectors:        uint32(binary.LittleEndian.Uint16(b[22:])),
	}
	if p.totalSectors == 0 {
		p.totalSectors = uint64(binary.LittleEndian.Uint32(b[32:]))
	}
	if p.fatSectors == 0 {
		p.fatSectors = binary.LittleEndian.Uint32(b[36:])
	}
	bps := p.bytesPerSector
	if bps < 512 || bps > 4096 || bits.OnesCount32(bps) != 1 ||
		p.sectorsPerCluster == 0 || bits.OnesCount32(p.sectorsPerCluster) != 1 ||
		p.reserved == 0 || p.fats == 0 || p.fatSectors == 0 || p.totalSectors == 0 {
		return fatBPB{}, false
	}
	rootSectors := (p.rootEntries*32 + bps - 1) / bps
	meta := uint64(p.reserved) + uint64(p.fats)*uint64(p.fatSectors) + uint64(rootSectors)
	if meta >= p.totalSectors {
		return fatBPB{}, false
	}
	p.clusters = uint32(min((p.totalSectors-meta)/uint64(p.sectorsPerCluster), 1<<32-1))
	switch {
	case p.clusters < 4085:
		p.kind = FAT12
	case p.clusters < 65525:
		p.kind = FAT16
	default:
		// FAT32 keeps its FAT size in the 32-bit field only.
		p.kind, p.fat16Size = FAT32, binary.LittleEndian.Uint16(b[22:]) != 0
	}
	return p, true
}

func fatKind(b []byte) (Kind, bool) {
	p, ok := parseBPB(b)
	return p.kind, ok
}

// cstr is a fixed-size label field without its NULs and padding.
func cstr(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return strings.TrimRight(string(b), " ")
}
