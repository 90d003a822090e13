package fsys

import (
	"io"
	"syscall"

	"github.com/ddfs/ddfs/format"
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
