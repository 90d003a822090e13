package fsys

import (
	"fmt"
	"io"
	"syscall"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/codec"
)

// ReadAt reads file bytes at off into p; it returns io.EOF at the end of
// the file, as io.ReaderAt does.
func (f *FS) ReadAt(in *Inode, p []byte, off uint64) (int, error) {
	if in.IsDir() {
		return 0, syscall.EISDIR
	}
	if off >= in.Size {
		return 0, io.EOF
	}
	n := min(uint64(len(p)), in.Size-off)
	buf := p[:n]
	clear(buf)
	xs, err := f.extents(in.Ino, off, off+n)
	if err != nil {
		return 0, err
	}
	ss := uint64(f.st.Super().SectorSize)
	for _, x := range xs {
		s, e := max(x.off, off), min(x.end(), off+n)
		if s >= e {
			continue
		}
		dst := buf[s-off : e-off]
		switch {
		case x.Type == format.FileExtentInline:
			copy(dst, x.Inline[s-x.off:])
		case x.Type == format.FileExtentPrealloc || x.DiskLogical == 0:
			// reads as zeros
		case x.Compression != format.CompressNone:
			data, err := f.decompressed(x)
			if err != nil {
				return 0, err
			}
			from := x.Offset + (s - x.off)
			if from+(e-s) > uint64(len(data)) {
				return 0, fmt.Errorf("inode %d: extent at %d reaches past its data: %w", in.Ino, x.off, format.ErrCorrupt)
			}
			copy(dst, data[from:])
		default:
			// Read whole sectors so each can be checked.
			from := x.Offset + (s - x.off)
			aStart := from / ss * ss
			aEnd := (from + (e - s) + ss - 1) / ss * ss
			tmp := make([]byte, aEnd-aStart)
			if err := f.readVerified(x.DiskLogical+aStart, tmp); err != nil {
				return 0, err
			}
			copy(dst, tmp[from-aStart:])
		}
	}
	if n < uint64(len(p)) {
		return int(n), io.EOF
	}
	return int(n), nil
}

// readlinkIno returns a symlink's target.
func (f *FS) readlinkIno(in *Inode) (string, error) {
	if !in.IsSymlink() {
		return "", syscall.EINVAL
	}
	if in.Size > maxSymlink {
		return "", syscall.ENAMETOOLONG
	}
	b := make([]byte, in.Size)
	if _, err := f.ReadAt(in, b, 0); err != nil && err != io.EOF {
		return "", err
	}
	return string(b), nil
}

// maxSymlink is the longest symlink target (PATH_MAX - 1).
const maxSymlink = 4095

// decompressed returns the decompressed bytes of a compressed extent,
// keeping the last one: sequential reads meet each extent many times.
func (f *FS) decompressed(x fileExtent) ([]byte, error) {
	if f.lastExtent.logical == x.DiskLogical && f.lastExtent.data != nil {
		return f.lastExtent.data, nil
	}
	disk := make([]byte, x.DiskLen)
	if err := f.readVerified(x.DiskLogical, disk); err != nil {
		return nil, err
	}
	data, err := codec.Decompress(disk, x.Compression, x.RAMBytes)
	if err != nil {
		return nil, fmt.Errorf("extent %d: %w", x.DiskLogical, err)
	}
	f.lastExtent.logical, f.lastExtent.data = x.DiskLogical, data
	return data, nil
}
