package foreign

// ext directories and inodes, read by a reader of our own. go-diskfs
// v1.9.4 knows nothing of inline data (INCOMPAT_INLINE_DATA): it crashes
// listing a directory that holds an inline symlink or is inline itself,
// and reads an inline file's i_block as an extent tree. And on every
// listing it allocates a directory's or a slow symlink's bytes before
// reading them, sized by an extent and the inode's size (2 GiB for a
// crafted 8 MiB image), and follows hashed-directory index entries with
// no bound. So ddfs lists every ext image's directories and stats their
// entries from the inodes itself; go-diskfs only opens the image. A
// small file, directory or long symlink keeps its bytes in i_block (60
// bytes) and then in the in-inode attribute "system.data". Every number
// is the image's and is bounded before use.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"syscall"
	"time"
)

const (
	extRootIno     = 2
	extMaxDirBytes = 1 << 30 // a directory's size: 1 GiB of entries is ~30M names
)

// extInlineData is the bytes inline file raw keeps: i_block, then the
// system.data attribute's value, at most size of them. A file may be
// longer than its inline bytes (mke2fs -d makes a sparse file so): as
// the kernel reads it, the rest is zeros.
func extInlineData(raw []byte, size int64) ([]byte, error) {
	if size < 0 {
		return nil, fmt.Errorf("%w: inline file of size %d", ErrCorrupt, size)
	}
	data := append([]byte(nil), raw[0x28:0x28+60]...)
	if size > 60 {
		more, err := extSystemData(raw)
		if err != nil {
			return nil, err
		}
		data = append(data, more...)
	}
	return data[:min(int64(len(data)), size)], nil
}

// inlineReader reads an inline file: its bytes, then zeros to its size.
type inlineReader struct {
	data      []byte
	off, size int64
}

func (r *inlineReader) Read(b []byte) (int, error) {
	if r.off >= r.size {
		return 0, io.EOF
	}
	b = b[:min(int64(len(b)), r.size-r.off)]
	n := 0
	if r.off < int64(len(r.data)) {
		n = copy(b, r.data[r.off:])
	}
	clear(b[n:])
	r.off += int64(len(b))
	return len(b), nil
}

func (r *inlineReader) Close() error { return nil }

// extSystemData is the value of inode raw's "system.data" attribute
// (nil: none); it lives in the inode's own attribute area.
func extSystemData(raw []byte) ([]byte, error) {
	le := binary.LittleEndian
	if len(raw) <= 128+4 {
		return nil, nil
	}
	extra := uint64(le.Uint16(raw[128:]))
	start := 128 + extra
	if extra%4 != 0 || start+4 > uint64(len(raw)) || le.Uint32(raw[start:]) != extXattrMagic {
		return nil, nil
	}
	area := raw[start+4:]
	var value []byte
	err := walkExtXattrs(area, area, func(index byte, suffix string, v []byte) error {
		if index == 7 && suffix == "data" {
			value = v
		}
		return nil
	})
	return value, err
}

// extDirent is one entry of an ext directory.
type extDirent struct {
	ino   uint64
	name  string
	ftype byte
}

// extDirents appends the entries in b (a directory block or an inline
// area), skipping "." and "..", empty slots and checksum tails.
func extDirents(b []byte, out []extDirent) ([]extDirent, error) {
	le := binary.LittleEndian
	for at := 0; at+8 <= len(b); {
		ino, rec, nlen := le.Uint32(b[at:]), int(le.Uint16(b[at+4:])), int(b[at+6])
		if rec == 0 || rec == 65535 { // a 64 KiB block's whole-block entry
			rec = len(b) - at
		}
		if rec < 8 || rec%4 != 0 || at+rec > len(b) || ino != 0 && (nlen == 0 || 8+nlen > rec) {
			return nil, fmt.Errorf("%w: directory entry at %d of length %d", ErrCorrupt, at, rec)
		}
		if name := string(b[at+8 : at+8+min(nlen, rec-8)]); ino != 0 && name != "." && name != ".." {
			if len(out) == maxEntries {
				return nil, fmt.Errorf("%w: over %d entries", ErrCorrupt, maxEntries)
			}
			out = append(out, extDirent{uint64(ino), name, b[at+7]})
		}
		at += rec
	}
	return out, nil
}

// extDirentsOf reads the entries of directory inode raw.
func (x *extInodes) direntsOf(ino uint64, raw []byte) ([]extDirent, error) {
	le := binary.LittleEndian
	size := int64(le.Uint32(raw[4:])) | int64(le.Uint32(raw[0x6C:]))<<32
	if size < 0 || size > extMaxDirBytes {
		return nil, fmt.Errorf("%w: directory inode %d of %d bytes", ErrCorrupt, ino, size)
	}
	if le.Uint32(raw[0x20:])&extInlineDataFl != 0 {
		out, err := extDirents(raw[0x28+4:0x28+60], nil) // after the parent's number
		if err != nil {
			return nil, err
		}
		more, err := extSystemData(raw)
		if err != nil {
			return nil, err
		}
		return extDirents(more, out)
	}
	runs, err := extRuns(x.r, x.g, ino, raw, size)
	if err != nil {
		return nil, err
	}
	var out []extDirent
	buf := make([]byte, x.g.bs)
	for _, r := range runs {
		for i := uint64(0); i < r.count && r.pblk != 0; i++ {
			if _, err := x.r.ReadAt(buf, int64((r.pblk+i)*x.g.bs)); err != nil {
				return nil, fmt.Errorf("%w: directory block %d: %v", ErrCorrupt, r.pblk+i, err)
			}
			if out, err = extDirents(buf, out); err != nil {
				return nil, fmt.Errorf("directory inode %d: %w", ino, err)
			}
		}
	}
	return out, nil
}

// extFileType is st_mode's type for a directory entry's file type.
var extFileType = [8]uint32{0, syscall.S_IFREG, syscall.S_IFDIR, syscall.S_IFCHR, syscall.S_IFBLK, syscall.S_IFIFO, syscall.S_IFSOCK, syscall.S_IFLNK}

// stat describes inode ino, named name, from the inode itself.
func (x *extInodes) stat(ino uint64, name string) (*Stat, error) {
	raw, err := x.inode(ino)
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	st := &Stat{Name: name, Mode: uint32(le.Uint16(raw)), Ino: ino, Nlink: uint32(le.Uint16(raw[0x1A:])),
		UID:  uint32(le.Uint16(raw[2:])) | uint32(le.Uint16(raw[0x78:]))<<16,
		GID:  uint32(le.Uint16(raw[0x18:])) | uint32(le.Uint16(raw[0x7A:]))<<16,
		Size: int64(le.Uint32(raw[4:])) | int64(le.Uint32(raw[0x6C:]))<<32}
	if st.Size < 0 || st.Mode&syscall.S_IFMT == 0 {
		return nil, fmt.Errorf("%w: inode %d (mode %#o, size %d)", ErrCorrupt, ino, st.Mode, st.Size)
	}
	st.Atime, st.Ctime, st.Mtime, st.Btime = extTimes(raw)
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFCHR, syscall.S_IFBLK:
		if old := le.Uint32(raw[0x28:]); old != 0 {
			st.Rdev = uint64(old & 0xffff) // (major << 8) | minor
		} else {
			st.Rdev = uint64(le.Uint32(raw[0x2C:])) // Linux's encoding already
		}
	case syscall.S_IFLNK:
		if st.Target, err = x.target(ino, raw, st.Size); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// target is symlink raw's target: inline data, in i_block (a fast
// symlink) or in its block.
func (x *extInodes) target(ino uint64, raw []byte, size int64) (string, error) {
	if size <= 0 || size > maxName {
		return "", fmt.Errorf("%w: symlink inode %d of %d bytes", ErrCorrupt, ino, size)
	}
	flags := binary.LittleEndian.Uint32(raw[0x20:])
	switch {
	case flags&extInlineDataFl != 0:
		b, err := extInlineData(raw, size)
		if err == nil && int64(len(b)) != size {
			err = fmt.Errorf("%w: symlink inode %d keeps %d of its %d bytes", ErrCorrupt, ino, len(b), size)
		}
		return string(b), err
	case flags&extExtentsFl == 0 && size < 60:
		return string(raw[0x28 : 0x28+size]), nil
	}
	runs, err := extRuns(x.r, x.g, ino, raw, size)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(&extReader{r: x.r, bs: x.g.bs, runs: runs, size: uint64(size)}); err != nil {
		return "", err
	}
	return b.String(), nil
}

// extTimes decodes an inode's times: 32-bit seconds, widened by the
// extra fields' two epoch bits and nanoseconds where the inode has them.
func extTimes(raw []byte) (atime, ctime, mtime, btime time.Time) {
	le := binary.LittleEndian
	extra := 0
	if len(raw) > 128+2 {
		extra = int(le.Uint16(raw[128:]))
	}
	at := func(sec, ext int) time.Time {
		s, e := int64(int32(le.Uint32(raw[sec:]))), uint32(0)
		if ext > 0 && ext+4 <= 128+extra && ext+4 <= len(raw) {
			e = le.Uint32(raw[ext:])
		}
		return time.Unix(s+int64(e&3)<<32, int64(e>>2)).UTC()
	}
	atime, ctime, mtime = at(0x08, 0x8C), at(0x0C, 0x84), at(0x10, 0x88)
	if 0x90+4 <= 128+extra && 0x90+4 <= len(raw) {
		btime = at(0x90, 0x94)
	}
	return
}

// listExt lists directory real (at p) of an inline-data ext image from
// its inodes.
func (im *Image) listExt(p, real string) ([]*Stat, error) {
	x, err := im.extInodes()
	if err != nil {
		return nil, im.pathErr("read directory", p, err)
	}
	ino := uint64(extRootIno)
	if real != "" {
		d, err := im.subdir(p, real)
		if err != nil {
			return nil, err
		}
		ino = d.Ino
	}
	raw, err := x.inode(ino)
	if err != nil {
		return nil, im.pathErr("read directory", p, err)
	}
	dirents, err := x.direntsOf(ino, raw) // each inode read is a buffer of its own
	if err != nil {
		return nil, im.pathErr("read directory", p, err)
	}
	out := make([]*Stat, 0, len(dirents))
	for _, d := range dirents {
		if len(d.name) > maxName || strings.ContainsAny(d.name, "/\x00") {
			return nil, im.pathErr("read directory", p, corruptf("entry named %q", d.name))
		}
		st, err := x.stat(d.ino, d.name)
		if err == nil && d.ftype != 0 && (d.ftype >= 8 || extFileType[d.ftype] != st.Mode&syscall.S_IFMT) {
			err = corruptf("inode %d has type %#o, its entry type %d", d.ino, st.Mode&syscall.S_IFMT, d.ftype)
		}
		if err != nil {
			return nil, im.pathErr("stat", path.Join(p, d.name), err)
		}
		out = append(out, st)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
