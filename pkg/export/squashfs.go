package export

// A squashfs 4.0 writer of our own. go-diskfs v1.9.4's writer stores a
// directory's place in the directory table as a block number where the
// format wants a byte offset (every directory listed past the table's
// first 8 KiB is unreadable: the Go tree's), puts more than 256 entries
// under one header, writes wrong inode numbers, zstd blocks the kernel
// refuses, and panics on any xattr. This one writes what mksquashfs
// writes, children before their directory so every reference is known
// when it is written: data blocks (gzip, as mksquashfs's default; a
// block of zeros as a hole), no fragments, then the inode, directory and
// id tables. Memory: the tables (compressed) and the listing of each
// directory on the walk's path.

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"path"
	"sort"
	"syscall"
	"time"

	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/zeros"
)

const (
	sqMagic      = 0x73717368
	sqBlockLog   = 17
	sqBlockSize  = 1 << sqBlockLog
	sqSuperSize  = 96
	sqGzip       = 1
	sqNoFrag     = 0x10  // NO_FRAGMENTS
	sqNoXattrs   = 0x200 // NO_XATTRS
	sqExportable = 0x80  // EXPORTABLE: an export table
	sqNone       = ^uint64(0)
	sqMaxName    = 256
	sqMaxIDs     = 1<<16 - 1 // the superblock counts them in 16 bits
	sqBlockRaw   = 1 << 24   // a data block's size word: stored uncompressed
	sqPad        = 4096      // the image is padded to this, as mksquashfs does (loop devices)
)

// Inode types (basic; the extended ones are these + 7).
const (
	sqDir = 1 + iota
	sqFile
	sqSymlink
	sqBlock
	sqChar
	sqFifo
	sqSocket
	sqExtended = 7
)

// sqEntry is a directory entry being written: its child's number,
// reference and basic type.
type sqEntry struct {
	name string
	num  uint32
	ref  uint64
	typ  uint16
}

// sqLink is a file with several names: its number, and its inode's
// reference once written (ok).
type sqLink struct {
	num uint32
	ref uint64
	ok  bool
}

type sqWriter struct {
	f      *fsys.FS
	w      *bufio.Writer
	pos    uint64 // the image offset w writes next
	c      *sqCodec
	inodes sqMeta
	dirs   sqMeta
	ids    map[uint32]uint16
	idList []uint32
	links  map[uint64]*sqLink // files with several names, by ddfs inode
	next   uint32             // the last inode number given
	block  []byte
	mtime  uint32
	xattrs sqXattrs
	refs   []uint64 // each inode's reference, by number - 1: the export table
}

// writeSquashfs writes the tree at src of f as a squashfs image to out.
func writeSquashfs(f *fsys.FS, src string, out *os.File) error {
	root, err := f.Resolve(src, true)
	if err != nil {
		return err
	}
	if !root.IsDir() {
		return &os.PathError{Op: "export", Path: src, Err: syscall.ENOTDIR}
	}
	c := newSQCodec()
	s := &sqWriter{f: f, w: bufio.NewWriterSize(out, 1<<20), pos: sqSuperSize, c: c, inodes: sqMeta{c: c}, dirs: sqMeta{c: c},
		ids: map[uint32]uint16{}, links: map[uint64]*sqLink{}, block: make([]byte, sqBlockSize), mtime: sqTime(time.Now().Unix()),
		xattrs: sqXattrs{kv: sqMeta{c: c}}}
	if sec, ok := sourceDate(); ok {
		s.mtime = sqTime(sec)
	}
	if _, err := out.Seek(sqSuperSize, 0); err != nil {
		return err
	}
	s.next = 1
	rootRef, err := s.dir(src, root, 1, 0, 0)
	if err != nil {
		return err
	}
	sb, err := s.tables(rootRef)
	if err != nil {
		return err
	}
	if err := s.w.Flush(); err != nil {
		return err
	}
	_, err = out.WriteAt(sb, 0)
	return err
}

// number gives in its inode number: a new one, or for a file with
// several names the one its first name got.
func (s *sqWriter) number(in *fsys.Inode) uint32 {
	if in.IsDir() || in.Nlink < 2 {
		s.next++
		return s.next
	}
	if l, ok := s.links[in.Ino]; ok {
		return l.num
	}
	s.next++
	s.links[in.Ino] = &sqLink{num: s.next}
	return s.next
}

// dir writes directory in (at p, number num, its parent's number parent) and
// everything below it; it returns the directory's inode reference.
func (s *sqWriter) dir(p string, in *fsys.Inode, num, parent uint32, depth int) (uint64, error) {
	if depth > 1024 {
		return 0, fmt.Errorf("%s: nested over 1024 deep: %w", p, syscall.ELOOP)
	}
	kids, err := s.f.Children(in)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", p, err)
	}
	sort.Slice(kids, func(i, j int) bool { return kids[i].Entry.Name < kids[j].Entry.Name })
	ents := make([]sqEntry, len(kids))
	for i, k := range kids { // numbered as listed: a directory's children get consecutive numbers
		if len(k.Entry.Name) > sqMaxName {
			return 0, fmt.Errorf("%s: a name of %d bytes (squashfs keeps %d): %w", path.Join(p, k.Entry.Name), len(k.Entry.Name), sqMaxName, syscall.ENAMETOOLONG)
		}
		ents[i] = sqEntry{name: k.Entry.Name, num: s.number(k.Inode)}
	}
	subdirs := uint32(0)
	for i, k := range kids {
		q := path.Join(p, k.Entry.Name)
		if k.Inode.IsDir() {
			subdirs++
			ents[i].typ = sqDir
			if ents[i].ref, err = s.dir(q, k.Inode, ents[i].num, num, depth+1); err != nil {
				return 0, err
			}
			continue
		}
		if ents[i].ref, ents[i].typ, err = s.leaf(q, k.Inode, ents[i].num); err != nil {
			return 0, err
		}
	}
	at := s.dirs.ref()
	size := s.listing(ents)
	if parent == 0 {
		parent = s.next + 1 // the root's, as mksquashfs writes it: one past the last inode
	}
	xi, err := s.xattrIndex(p, in)
	if err != nil {
		return 0, err
	}
	return s.dirInode(in, num, parent, at, size, 2+subdirs, xi)
}

// xattrIndex is the index of in's attribute set (sqNoXattr: none).
func (s *sqWriter) xattrIndex(p string, in *fsys.Inode) (uint32, error) {
	xs, err := s.f.ListXattrs(in)
	if err != nil {
		return 0, fmt.Errorf("%s: xattrs: %w", p, err)
	}
	return s.xattrs.add(p, xs)
}

// listing writes a directory's entries under headers: a new header
// every 256 entries, where the inodes' metadata block changes, or where
// a number is too far from the header's for the entry's 16 bits.
func (s *sqWriter) listing(ents []sqEntry) uint32 {
	le := binary.LittleEndian
	size := uint32(0)
	for i := 0; i < len(ents); {
		block, base := uint32(ents[i].ref>>16), ents[i].num
		j := i
		for j < len(ents) && j-i < 256 && uint32(ents[j].ref>>16) == block && int64(ents[j].num)-int64(base) >= -32768 && int64(ents[j].num)-int64(base) <= 32767 {
			j++
		}
		hdr := le.AppendUint32(le.AppendUint32(le.AppendUint32(nil, uint32(j-i-1)), block), base)
		s.dirs.write(hdr)
		size += uint32(len(hdr))
		for _, e := range ents[i:j] {
			b := le.AppendUint16(nil, uint16(e.ref&0xffff))
			b = le.AppendUint16(b, uint16(int16(int64(e.num)-int64(base))))
			b = le.AppendUint16(le.AppendUint16(b, e.typ), uint16(len(e.name)-1))
			b = append(b, e.name...)
			s.dirs.write(b)
			size += uint32(len(b))
		}
		i = j
	}
	return size
}

// header is an inode's common part.
func (s *sqWriter) header(typ uint16, in *fsys.Inode, num uint32) ([]byte, error) {
	uid, err := s.id(in.UID)
	if err != nil {
		return nil, err
	}
	gid, err := s.id(in.GID)
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	b := le.AppendUint16(le.AppendUint16(nil, typ), uint16(in.Mode&0o7777))
	b = le.AppendUint16(le.AppendUint16(b, uid), gid)
	return le.AppendUint32(le.AppendUint32(b, sqTime(in.Mtime.Sec)), num), nil
}

// sqTime is a time as squashfs's unsigned 32 bits of seconds (clamped).
func sqTime(sec int64) uint32 {
	return uint32(max(0, min(sec, 1<<32-1)))
}

func (s *sqWriter) id(v uint32) (uint16, error) {
	if i, ok := s.ids[v]; ok {
		return i, nil
	}
	if len(s.idList) == sqMaxIDs {
		return 0, fmt.Errorf("more than %d owners and groups (squashfs keeps %d): %w", sqMaxIDs, sqMaxIDs, syscall.EOVERFLOW)
	}
	s.ids[v] = uint16(len(s.idList))
	s.idList = append(s.idList, v)
	return s.ids[v], nil
}

// dirInode writes a directory's inode: basic, or extended where its
// listing passes the basic one's 16 bits.
func (s *sqWriter) dirInode(in *fsys.Inode, num, parent uint32, at uint64, size, nlink, xi uint32) (uint64, error) {
	le := binary.LittleEndian
	typ := uint16(sqDir)
	if size+3 > 0xffff || xi != sqNoXattr {
		typ += sqExtended
	}
	b, err := s.header(typ, in, num)
	if err != nil {
		return 0, err
	}
	if typ == sqDir {
		b = le.AppendUint32(le.AppendUint32(b, uint32(at>>16)), nlink)
		b = le.AppendUint16(le.AppendUint16(b, uint16(size+3)), uint16(at&0xffff))
		b = le.AppendUint32(b, parent)
	} else {
		b = le.AppendUint32(le.AppendUint32(le.AppendUint32(b, nlink), size+3), uint32(at>>16))
		b = le.AppendUint16(le.AppendUint16(le.AppendUint32(b, parent), 0), uint16(at&0xffff))
		b = le.AppendUint32(b, xi)
	}
	return s.putInode(b), nil
}

// leaf writes a file, symlink or special file's inode (and a file's
// data), once for a file with several names.
func (s *sqWriter) leaf(p string, in *fsys.Inode, num uint32) (uint64, uint16, error) {
	typ, ok := sqTypes[in.Mode&syscall.S_IFMT]
	if !ok {
		return 0, 0, fmt.Errorf("%s: file type %#o: %w", p, in.Mode&syscall.S_IFMT, syscall.EINVAL)
	}
	l := s.links[in.Ino]
	if in.Nlink > 1 && l != nil && l.ok {
		return l.ref, typ, nil
	}
	xi, err := s.xattrIndex(p, in)
	if err != nil {
		return 0, 0, err
	}
	var ref uint64
	switch typ {
	case sqFile:
		ref, err = s.file(p, in, num, xi)
	case sqSymlink:
		ref, err = s.symlink(p, in, num, xi)
	default:
		ref, err = s.special(typ, in, num, xi)
	}
	if err == nil && in.Nlink > 1 && l != nil {
		l.ref, l.ok = ref, true
	}
	return ref, typ, err
}

var sqTypes = map[uint32]uint16{syscall.S_IFREG: sqFile, syscall.S_IFLNK: sqSymlink, syscall.S_IFBLK: sqBlock,
	syscall.S_IFCHR: sqChar, syscall.S_IFIFO: sqFifo, syscall.S_IFSOCK: sqSocket}

// extended is typ's extended form where the inode has attributes.
func extended(typ uint16, xi uint32) uint16 {
	if xi != sqNoXattr {
		return typ + sqExtended
	}
	return typ
}

func (s *sqWriter) symlink(p string, in *fsys.Inode, num, xi uint32) (uint64, error) {
	target, err := s.f.ReadlinkInode(in)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", p, err)
	}
	b, err := s.header(extended(sqSymlink, xi), in, num)
	if err != nil {
		return 0, err
	}
	le := binary.LittleEndian
	b = append(le.AppendUint32(le.AppendUint32(b, in.Nlink), uint32(len(target))), target...)
	if xi != sqNoXattr {
		b = le.AppendUint32(b, xi)
	}
	return s.putInode(b), nil
}

func (s *sqWriter) special(typ uint16, in *fsys.Inode, num, xi uint32) (uint64, error) {
	b, err := s.header(extended(typ, xi), in, num)
	if err != nil {
		return 0, err
	}
	b = binary.LittleEndian.AppendUint32(b, in.Nlink)
	if typ == sqBlock || typ == sqChar {
		if in.Rdev > 0xffffffff {
			return 0, fmt.Errorf("device number %#x (squashfs keeps 32 bits): %w", in.Rdev, syscall.EOVERFLOW)
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(in.Rdev)) // Linux's encoding, as squashfs's
	}
	if xi != sqNoXattr {
		b = binary.LittleEndian.AppendUint32(b, xi)
	}
	return s.putInode(b), nil
}

func (s *sqWriter) putInode(b []byte) uint64 {
	ref := s.inodes.ref()
	s.inodes.write(b)
	num := binary.LittleEndian.Uint32(b[12:]) // the header's inode number
	for uint32(len(s.refs)) < num {
		s.refs = append(s.refs, 0)
	}
	s.refs[num-1] = ref
	return ref
}

// file writes a regular file's data blocks, then its inode: basic, or
// extended where it is big, far into the image, sparse or has several
// names.
func (s *sqWriter) file(p string, in *fsys.Inode, num, xi uint32) (uint64, error) {
	start := s.pos
	var sizes []uint32
	sparse := uint64(0)
	for off := uint64(0); off < in.Size; off += sqBlockSize {
		n := min(uint64(sqBlockSize), in.Size-off)
		b := s.block[:n]
		got, err := s.f.ReadAt(in, b, off)
		if uint64(got) != n {
			return 0, fmt.Errorf("%s: read %d bytes at %d: %w", p, n, off, cmpErr(err, syscall.EIO))
		}
		if zeros.Is(b) { // a hole: readers give zeros for a block of size 0
			sizes = append(sizes, 0)
			sparse += n
			continue
		}
		word := uint32(0)
		out := s.c.compress(b)
		if out == nil {
			out, word = b, sqBlockRaw
		}
		if _, err := s.w.Write(out); err != nil {
			return 0, err
		}
		s.pos += uint64(len(out))
		sizes = append(sizes, word|uint32(len(out)))
	}
	le := binary.LittleEndian
	ext := in.Size > 0xffffffff || start > 0xffffffff || in.Nlink > 1 || sparse > 0 || xi != sqNoXattr
	typ := uint16(sqFile)
	if ext {
		typ += sqExtended
	}
	b, err := s.header(typ, in, num)
	if err != nil {
		return 0, err
	}
	if ext {
		b = le.AppendUint64(le.AppendUint64(le.AppendUint64(b, start), in.Size), sparse)
		b = le.AppendUint32(le.AppendUint32(le.AppendUint32(le.AppendUint32(b, in.Nlink), 0xffffffff), 0), xi)
	} else {
		b = le.AppendUint32(le.AppendUint32(le.AppendUint32(le.AppendUint32(b, uint32(start)), 0xffffffff), 0), uint32(in.Size))
	}
	for _, sz := range sizes {
		b = le.AppendUint32(b, sz)
	}
	return s.putInode(b), nil
}

func cmpErr(err, alt error) error {
	if err != nil {
		return err
	}
	return alt
}

// tables writes the inode, directory and id tables after the data, pads
// the image and returns its superblock.
func (s *sqWriter) tables(rootRef uint64) ([]byte, error) {
	le := binary.LittleEndian
	inodeStart := s.pos
	n, err := s.inodes.writeTo(s.w)
	if err != nil {
		return nil, err
	}
	dirStart := inodeStart + uint64(n)
	if n, err = s.dirs.writeTo(s.w); err != nil {
		return nil, err
	}
	// No fragment table: its start says where it would be, as for an
	// empty one. Then the export table (inode number -> reference, which
	// NFS and readers that find an inode by number use) and the id table,
	// each as metadata blocks of fixed-size entries and the array of
	// their offsets the superblock points at.
	fragStart := dirStart + uint64(n)
	var refs []byte
	for _, r := range s.refs {
		refs = le.AppendUint64(refs, r)
	}
	exportStart, n2, err := s.table(fragStart, refs, 8, nil)
	if err != nil {
		return nil, err
	}
	var ids []byte
	for _, v := range s.idList {
		ids = le.AppendUint32(ids, v)
	}
	idStart, n3, err := s.table(fragStart+n2, ids, 4, nil)
	if err != nil {
		return nil, err
	}
	used := fragStart + n2 + n3
	xattrStart, flags := sqNone, uint16(sqNoFrag|sqNoXattrs|sqExportable)
	if len(s.xattrs.index) > 0 { // after the id table, as the kernel wants them
		start, n, err := s.xattrs.writeTo(s, used)
		if err != nil {
			return nil, err
		}
		xattrStart, flags, used = start, flags&^sqNoXattrs, used+n
	}
	if pad := (sqPad - used%sqPad) % sqPad; pad > 0 {
		if _, err := s.w.Write(make([]byte, pad)); err != nil {
			return nil, err
		}
	}
	sb := le.AppendUint32(nil, sqMagic)
	sb = le.AppendUint32(le.AppendUint32(le.AppendUint32(le.AppendUint32(sb, s.next), s.mtime), sqBlockSize), 0)
	sb = le.AppendUint16(le.AppendUint16(le.AppendUint16(sb, sqGzip), sqBlockLog), flags)
	sb = le.AppendUint16(le.AppendUint16(le.AppendUint16(sb, uint16(len(s.idList))), 4), 0)
	sb = le.AppendUint64(le.AppendUint64(le.AppendUint64(le.AppendUint64(sb, rootRef), used), idStart), xattrStart)
	sb = le.AppendUint64(le.AppendUint64(le.AppendUint64(le.AppendUint64(sb, inodeStart), dirStart), fragStart), exportStart)
	return sb, nil
}

// table writes entries (of size bytes each, none split across blocks)
// at image offset at as metadata blocks, then head (the xattr table's
// header; nil for the others) and the array of the blocks' offsets; it
// returns where head starts, which the superblock names, and the bytes
// written.
func (s *sqWriter) table(at uint64, entries []byte, size int, head []byte) (start, n uint64, err error) {
	le := binary.LittleEndian
	m := sqMeta{c: s.c}
	var index []byte
	for i := 0; i < len(entries); i += size {
		if i%sqMetaBlock == 0 {
			m.flush()
			index = le.AppendUint64(index, at+uint64(m.done.Len()))
		}
		m.write(entries[i : i+size])
	}
	blocks, err := m.writeTo(s.w)
	if err != nil {
		return 0, 0, err
	}
	if _, err := s.w.Write(append(head, index...)); err != nil {
		return 0, 0, err
	}
	return at + uint64(blocks), uint64(blocks) + uint64(len(head)+len(index)), nil
}
