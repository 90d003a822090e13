package foreign

// Squashfs set-user-ID, set-group-ID and sticky bits and link counts,
// read by a reader of our own. go-diskfs v1.9.4's squashfs Mode keeps
// only 0777 (a Debian rootfs's passwd, su and mount lose their
// set-user-ID bit), its link count is always 1 (hard links come in as
// copies), and its entries say an inode's number but not where it lies. mksquashfs
// writes an export table (inode number -> inode reference) unless told
// -no-exports: through it ddfs reads the inode's header, its type and
// its 12 permission bits. Without one, the 0777 bits are what there is.

import (
	"encoding/binary"
	"io"
	"syscall"
)

const sqModeCache = 256 // metadata blocks kept (2 MiB)

// sqMaxListed bounds the block list entries dataBlocks reads of one file
// (a 2 TiB file of 128 KiB blocks), sqMaxKept the compressed ones it
// keeps (16 bytes each: 64 MiB).
const (
	sqMaxListed = 1 << 24
	sqMaxKept   = 1 << 22
)

// sqModes finds inodes' permission bits through the export table.
type sqModes struct {
	t      *sqTable
	inodes uint64   // inode_table_start
	export []uint64 // the export table's metadata block offsets
	count  uint64   // inode_count
	cache  map[uint64]sqBlock
	ref    uint64 // the last inode perm found, and its type as written
	raw    uint16
}

// sqIndex reads the nb metadata block locations (u64 each) of the table
// whose index lies at start.
func sqIndex(r io.ReaderAt, size int64, start, nb uint64, what string) ([]uint64, error) {
	if start > uint64(size) || nb > (uint64(size)-start)/8 {
		return nil, corruptf("%s at %d of %d blocks", what, start, nb)
	}
	idx := make([]byte, nb*8)
	if _, err := r.ReadAt(idx, int64(start)); err != nil {
		return nil, corruptf("%s: %v", what, err)
	}
	out := make([]uint64, nb)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(idx[8*i:])
	}
	return out, nil
}

// sqBlock is a metadata block's bytes and its length on disk.
type sqBlock struct {
	b    []byte
	disk uint64
}

// newSQModes reads squashfs image r's export table index (nil: none).
func newSQModes(r io.ReaderAt, size int64, super []byte) (*sqModes, error) {
	le := binary.LittleEndian
	start, count := le.Uint64(super[88:]), uint64(le.Uint32(super[4:]))
	if start == sqNoTable {
		return nil, nil
	}
	if count == 0 {
		return nil, corruptf("export table at %d for no inodes", start)
	}
	export, err := sqIndex(r, size, start, uint64(sqBlocks(int(min(count, 1<<32))*8)), "export table")
	if err != nil {
		return nil, err
	}
	return &sqModes{t: &sqTable{r: r, size: size, codec: le.Uint16(super[20:]), unbounded: true},
		inodes: le.Uint64(super[64:]), count: count, cache: map[uint64]sqBlock{}, export: export}, nil
}

// block is the metadata block at off, from the cache where it is.
func (m *sqModes) block(off uint64) (sqBlock, error) {
	if c, ok := m.cache[off]; ok {
		return c, nil
	}
	b, disk, err := m.t.block(off)
	if err != nil {
		return sqBlock{}, err
	}
	if len(m.cache) == sqModeCache {
		clear(m.cache)
	}
	m.cache[off] = sqBlock{b, disk}
	return m.cache[off], nil
}

// bytesAt reads n bytes at reference ref of the table at start (they may
// run on into the next metadata block).
func (m *sqModes) bytesAt(start, ref uint64, n int) ([]byte, error) {
	at, off := start+ref>>16, int(ref&0xffff)
	var out []byte
	for len(out) < n {
		c, err := m.block(at)
		if err != nil {
			return nil, err
		}
		if off > len(c.b) {
			return nil, corruptf("reference %#x past its block", ref)
		}
		out = append(out, c.b[off:min(len(c.b), off+n-len(out))]...)
		at, off = at+c.disk, 0
	}
	return out, nil
}

// sqInode is what ddfs reads of a squashfs inode itself.
type sqInode struct {
	perm  uint32 // 07777
	typ   uint16 // basic type: 1 directory ... 7 socket
	nlink uint32 // 0: the inode keeps none (a basic file: 1)
}

// sqNlinkAt is where an inode keeps its link count, by type (1..14).
var sqNlinkAt = [15]int{0, 20, 0, 16, 16, 16, 16, 16, 16, 40, 16, 16, 16, 16, 16}

// inode reads inode ino's header and link count.
func (m *sqModes) inode(ino uint64) (sqInode, error) {
	var out sqInode
	perm, typ, err := m.perm(ino)
	if err != nil {
		return out, err
	}
	out.perm, out.typ = perm, typ
	if at := sqNlinkAt[m.raw]; at > 0 {
		b, err := m.bytesAt(m.inodes, m.ref, at+4)
		if err != nil {
			return out, err
		}
		out.nlink = binary.LittleEndian.Uint32(b[at:])
	}
	return out, nil
}

// perm is inode ino's permission bits (07777) and its type (squashfs's
// basic type: 1 directory ... 7 socket).
func (m *sqModes) perm(ino uint64) (uint32, uint16, error) {
	if ino == 0 || ino > m.count {
		return 0, 0, corruptf("inode number %d of %d", ino, m.count)
	}
	i := (ino - 1) * 8
	blk := i / sqMeta
	if blk >= uint64(len(m.export)) {
		return 0, 0, corruptf("inode number %d past the export table", ino)
	}
	c, err := m.block(m.export[blk])
	if err != nil {
		return 0, 0, err
	}
	if int(i%sqMeta)+8 > len(c.b) {
		return 0, 0, corruptf("export entry of inode %d past its block", ino)
	}
	ref := binary.LittleEndian.Uint64(c.b[i%sqMeta:])
	h, err := m.bytesAt(m.inodes, ref, 4)
	if err != nil {
		return 0, 0, err
	}
	typ := binary.LittleEndian.Uint16(h)
	if typ == 0 || typ > 14 {
		return 0, 0, corruptf("inode %d of type %d", ino, typ)
	}
	m.ref, m.raw = ref, typ
	if typ > 7 {
		typ -= 7 // an extended inode: its basic type
	}
	return uint32(binary.LittleEndian.Uint16(h[2:])) & 0o7777, typ, nil
}

// sqTypes is st_mode's type for squashfs's basic inode types.
var sqTypes = [8]uint32{0, syscall.S_IFDIR, syscall.S_IFREG, syscall.S_IFLNK, syscall.S_IFBLK, syscall.S_IFCHR, syscall.S_IFIFO, syscall.S_IFSOCK}

// sqPerm adds st's set-ID and sticky bits and link count from its inode;
// the inode the export table names must have the type and 0777 bits
// go-diskfs read.
func (im *Image) sqPerm(st *Stat) error {
	if im.sqm == nil {
		return nil
	}
	in, err := im.sqm.inode(st.Ino)
	if err != nil {
		return err
	}
	if in.typ == 0 || in.typ >= 8 || sqTypes[in.typ] != st.Mode&syscall.S_IFMT || in.perm&0o777 != st.Mode&0o777 {
		return corruptf("inode %d: the export table names one of type %d, mode %#o; its entry says %#o", st.Ino, in.typ, in.perm, st.Mode)
	}
	st.Mode |= in.perm & 0o7000
	if in.nlink > 0 && !st.IsDir() { // go-diskfs says 1: hard links are found by this count
		st.Nlink = in.nlink
	}
	return nil
}

// dataBlocks is where regular file ino's compressed data blocks lie,
// from its inode (a basic or an extended file; blockSize the image's):
// each one's start and size on disk, in file order.
func (m *sqModes) dataBlocks(ino, blockSize uint64) ([]sqCompressed, error) {
	if _, _, err := m.perm(ino); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	var head []byte
	var start, size uint64
	var frag uint32
	switch m.raw {
	case 2: // basic file: blocks_start u32, fragment, offset, file_size u32
		b, err := m.bytesAt(m.inodes, m.ref, 32)
		if err != nil {
			return nil, err
		}
		head, start, frag, size = b, uint64(le.Uint32(b[16:])), le.Uint32(b[20:]), uint64(le.Uint32(b[28:]))
	case 9: // extended file: blocks_start u64, file_size u64, sparse, nlink, fragment, offset, xattr
		b, err := m.bytesAt(m.inodes, m.ref, 56)
		if err != nil {
			return nil, err
		}
		head, start, size, frag = b, le.Uint64(b[16:]), le.Uint64(b[24:]), le.Uint32(b[44:])
	default:
		return nil, corruptf("inode %d of type %d is no regular file", ino, m.raw)
	}
	n := size / blockSize
	if frag == ^uint32(0) && size%blockSize != 0 {
		n++ // no fragment: the tail is a block of its own
	}
	// The list is read a metadata block at a time (it is compressed: a
	// sparse file's may be far longer than the image), up to
	// sqMaxListed entries (sqMaxKept compressed); what lies past that, or
	// past the image, goes unchecked (go-diskfs's reads fail past its end).
	var out []sqCompressed
	at, off := m.inodes+m.ref>>16, int(m.ref&0xffff)+len(head)
	var carry []byte
	for i := uint64(0); i < min(n, sqMaxListed) && start < uint64(m.t.size) && len(out) < sqMaxKept; {
		c, err := m.block(at)
		if err != nil {
			return nil, err
		}
		if off > len(c.b) {
			off -= len(c.b) // the head ran on into the next block
			at += c.disk
			continue
		}
		b := append(carry, c.b[off:]...)
		for ; len(b) >= 4 && i < min(n, sqMaxListed); i, b = i+1, b[4:] {
			w := le.Uint32(b)
			on := uint64(w &^ (1 << 24))
			if w&(1<<24) == 0 && on != 0 {
				out = append(out, sqCompressed{int64(start), uint32(on)})
			}
			start += on
		}
		carry, at, off = append([]byte(nil), b...), at+c.disk, 0
	}
	return out, nil
}
