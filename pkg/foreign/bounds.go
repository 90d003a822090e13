package foreign

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
)

// identity is what Info reports of a filesystem besides its kind.
type identity struct{ label, uuid string }

// bound checks, before go-diskfs reads a byte of it, the superblock
// fields that size its allocations and loops against the image's size,
// and reads the label and UUID. An image that claims more than it holds
// is ErrCorrupt (a truncated copy is refused, not half read).
func bound(k Kind, r io.ReaderAt, size int64) (identity, error) {
	switch k {
	case Ext2, Ext3, Ext4:
		return boundExt(r, size)
	case Squashfs:
		return identity{}, boundSquashfs(r, size)
	case ISO9660:
		return boundISO(r, size)
	case FAT12, FAT16, FAT32:
		return boundFAT(r, size)
	}
	return identity{}, fmt.Errorf("%s: %w", k, ErrUnsupported)
}

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}

func readExact(r io.ReaderAt, n int, off int64) ([]byte, error) {
	b := make([]byte, n)
	if m, err := r.ReadAt(b, off); m < n {
		return nil, corruptf("short read of %d bytes at %d: %v", n, off, err)
	}
	return b, nil
}

func boundExt(r io.ReaderAt, size int64) (identity, error) {
	sb, err := readExact(r, 1024, extSuperOff)
	if err != nil {
		return identity{}, err
	}
	le := binary.LittleEndian
	logBlock := le.Uint32(sb[24:])
	if logBlock > 6 { // 1 KiB << 6 = 64 KiB, the largest ext4 block
		return identity{}, corruptf("ext block size 1024<<%d", logBlock)
	}
	if le.Uint32(sb[100:])&extRoCompatMetadataCsum == 0 {
		// go-diskfs v1.9.4 refuses a superblock without checksums
		// ("invalid checksum type 0"): ext2, ext3, and ext4 made
		// without metadata_csum.
		return identity{}, fmt.Errorf("ext without metadata_csum (go-diskfs v1.9.4 reads only checksummed ext4): %w", ErrUnsupported)
	}
	bs := uint64(1024) << logBlock
	blocks := uint64(le.Uint32(sb[4:]))
	if le.Uint32(sb[96:])&extIncompat64Bit != 0 {
		blocks |= uint64(le.Uint32(sb[0x150:])) << 32
		if ds := le.Uint16(sb[0xFE:]); ds < 32 || ds > 1024 || bits.OnesCount16(ds) != 1 {
			return identity{}, corruptf("ext group descriptor size %d", ds)
		}
	}
	if blocks == 0 || blocks > uint64(size)/bs {
		return identity{}, corruptf("ext filesystem of %d blocks of %d bytes, image of %d bytes", blocks, bs, size)
	}
	bpg, ipg := uint64(le.Uint32(sb[32:])), uint64(le.Uint32(sb[40:]))
	if bpg < 8 || bpg > bs*8 || ipg == 0 || ipg > bs*8 {
		return identity{}, corruptf("ext groups of %d blocks, %d inodes", bpg, ipg)
	}
	if le.Uint32(sb[76:]) >= 1 { // dynamic revision: inode size in the superblock
		if is := uint64(le.Uint16(sb[88:])); is < 128 || is > bs || bits.OnesCount64(is) != 1 {
			return identity{}, corruptf("ext inode size %d", is)
		}
	}
	return identity{label: cstr(sb[120:136]), uuid: uuidString(sb[104:120])}, nil
}

func uuidString(u []byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// squashfs 4.0 superblock offsets (squashfs-tools' squashfs_fs.h).
const (
	sqBlockSize  = 12
	sqFragments  = 16
	sqBlockLog   = 22
	sqMajor      = 28
	sqBytesUsed  = 40
	sqFirstTable = 48 // id, xattr id, inode, directory, fragment, export table starts
	sqLastTable  = 88
)

func boundSquashfs(r io.ReaderAt, size int64) error {
	sb, err := readExact(r, 96, 0)
	if err != nil {
		return err
	}
	le := binary.LittleEndian
	if v := le.Uint16(sb[sqMajor:]); v != 4 {
		return fmt.Errorf("squashfs version %d: %w", v, ErrUnsupported)
	}
	bsz := le.Uint32(sb[sqBlockSize:])
	if bsz < 4096 || bsz > 1<<20 || bits.OnesCount32(bsz) != 1 || uint32(1)<<le.Uint16(sb[sqBlockLog:]) != bsz {
		return corruptf("squashfs block size %d (log %d)", bsz, le.Uint16(sb[sqBlockLog:]))
	}
	used := le.Uint64(sb[sqBytesUsed:])
	if used < 96 || used > uint64(size) {
		return corruptf("squashfs of %d bytes, image of %d", used, size)
	}
	if f := uint64(le.Uint32(sb[sqFragments:])); f > used/16 {
		return corruptf("squashfs claims %d fragments in %d bytes", f, used)
	}
	for off := sqFirstTable; off <= sqLastTable; off += 8 {
		if t := le.Uint64(sb[off:]); t != ^uint64(0) && t >= used {
			return corruptf("squashfs table at %d past its end %d", t, used)
		}
	}
	return nil
}

// ISO 9660 primary volume descriptor fields (ECMA-119 8.4).
const (
	isoVolumeID       = 40  // 32 bytes, d-characters
	isoSpaceSize      = 80  // u32 LE: logical blocks in the volume
	isoBlockSize      = 128 // u16 LE: logical block size
	isoCreateDate     = 813 // 17 bytes: YYYYMMDDHHMMSScc + zone
	isoPathTableSize  = 132 // u32 LE: bytes of the path table
	isoRootRecord     = 156 // the root directory's record; its data length at +10 (u32 LE)
	maxISODescriptors = 64  // volume descriptors read before the terminator
)

func boundISO(r io.ReaderAt, size int64) (identity, error) {
	pvd, err := readExact(r, 2048, isoPVDOff)
	if err != nil {
		return identity{}, err
	}
	if pvd[0] != 1 {
		return identity{}, fmt.Errorf("ISO 9660 without a primary volume descriptor first: %w", ErrUnsupported)
	}
	if bs := binary.LittleEndian.Uint16(pvd[isoBlockSize:]); bs != 2048 {
		return identity{}, fmt.Errorf("ISO 9660 logical block size %d: %w", bs, ErrUnsupported)
	}
	if n := int64(binary.LittleEndian.Uint32(pvd[isoSpaceSize:])); n*2048 > size {
		return identity{}, corruptf("ISO 9660 volume of %d blocks, image of %d bytes", n, size)
	}
	// go-diskfs allocates each volume descriptor's path table and root
	// directory at their recorded sizes (u32): bounded by the image.
	for i := int64(0); i < maxISODescriptors; i++ {
		vd, err := readExact(r, 2048, isoPVDOff+i*2048)
		if err != nil {
			return identity{}, err
		}
		if vd[0] == 255 { // set terminator
			break
		}
		if vd[0] != 1 && vd[0] != 2 {
			continue
		}
		pt := int64(binary.LittleEndian.Uint32(vd[isoPathTableSize:]))
		root := int64(binary.LittleEndian.Uint32(vd[isoRootRecord+10:]))
		if pt > size || root > size {
			return identity{}, corruptf("ISO 9660 descriptor %d: path table of %d bytes, root directory of %d, image of %d", i, pt, root, size)
		}
	}
	// blkid's UUID of an ISO: its creation date as YYYY-MM-DD-HH-MM-SS-cc.
	d := pvd[isoCreateDate : isoCreateDate+16]
	uuid := ""
	if d[0] >= '0' && d[0] <= '9' {
		uuid = fmt.Sprintf("%s-%s-%s-%s-%s-%s-%s", d[0:4], d[4:6], d[6:8], d[8:10], d[10:12], d[12:14], d[14:16])
	}
	return identity{label: cstr(pvd[isoVolumeID : isoVolumeID+32]), uuid: uuid}, nil
}
