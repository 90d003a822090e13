package fsys

import (
	"bytes"
	"fmt"
	"io"
	"syscall"

	"golang.org/x/sync/errgroup"

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
	var few [2]fileExtent // a small read meets one or two extents: no allocation
	xs, err := f.extentsOf(few[:0], in.Ino, off, off+n, true)
	if err != nil {
		return 0, err
	}
	if off == 0 && n == in.Size { // the whole file (cp of a small one)
		if err := checkNBytes(in, xs); err != nil {
			return 0, err
		}
		if err := f.checkNoEntries(in); err != nil {
			return 0, err
		}
	}
	ss := uint64(f.st.Super().SectorSize)
	if err := f.predecompress(xs); err != nil {
		return 0, err
	}
	// Only what no extent fills is zeroed (holes, before and after the
	// extents): clearing all of p first was 15% of tar-out's CPU.
	done := uint64(0) // buf[:done] is filled
	for _, x := range xs {
		s, e := max(x.off, off), min(x.end(), off+n)
		if s >= e {
			continue
		}
		if s-off > done {
			clear(buf[done : s-off])
		}
		filled := done // a hole never zeroes bytes an extent before it filled
		done = max(done, e-off)
		dst := buf[s-off : e-off]
		switch {
		case x.Type == format.FileExtentInline:
			copy(dst, x.Inline[s-x.off:]) // dst ends where the inline bytes do
		case x.Type == format.FileExtentPrealloc || x.DiskLogical == 0:
			clear(buf[max(s-off, filled):done]) // reads as zeros
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
			if aStart == from && aEnd-aStart == e-s { // whole sectors: no bounce buffer
				if err := f.readVerified(x.DiskLogical+from, dst); err != nil {
					return 0, err
				}
				continue
			}
			tmp := rawBuffer(int(aEnd - aStart)) // pooled: reads of small files add up
			err := f.readVerified(x.DiskLogical+aStart, tmp)
			copy(dst, tmp[from-aStart:])
			putBuffer(tmp)
			if err != nil {
				return 0, err
			}
		}
	}
	clear(buf[done:])
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
	if in.Size > format.MaxSymlinkTarget {
		return "", syscall.ENAMETOOLONG
	}
	// As fsck (SYMLINK_TARGET): a target is bytes without NUL, and
	// holes read as NUL; anything else would be served as a shorter or
	// different path.
	if in.Size == 0 {
		return "", fmt.Errorf("empty symlink target: %w", format.ErrCorrupt)
	}
	b := make([]byte, in.Size)
	if n, err := f.ReadAt(in, b, 0); uint64(n) != in.Size {
		return "", fmt.Errorf("symlink target: read %d of %d bytes: %w", n, in.Size, err)
	}
	if bytes.IndexByte(b, 0) >= 0 {
		return "", fmt.Errorf("symlink target holds a NUL byte or a hole: %w", format.ErrCorrupt)
	}
	return string(b), nil
}

// decompressed returns the decompressed bytes of a compressed extent,
// keeping the last one: sequential reads meet each extent many times.
func (f *FS) decompressed(x fileExtent) ([]byte, error) {
	if f.lastExtent.logical == x.DiskLogical && f.lastExtent.data != nil {
		return f.lastExtent.data, nil
	}
	if d, ok := f.decomp[x.DiskLogical]; ok {
		delete(f.decomp, x.DiskLogical)
		f.lastExtent.logical, f.lastExtent.data = x.DiskLogical, d
		return d, nil
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

// predecompress decompresses the compressed extents of a big read in
// parallel (reads and checksum checks stay sequential; only the CPU work
// fans out), leaving the results for decompressed to find.
func (f *FS) predecompress(xs []fileExtent) error {
	var todo []fileExtent
	budget := uint64(maxPredecompress)
	for _, x := range xs {
		if x.Type != format.FileExtentInline && x.DiskLogical != 0 && x.Compression != format.CompressNone && f.lastExtent.logical != x.DiskLogical {
			// Many small file ranges may each name a whole extent: past
			// the budget, decompressed reads the rest one at a time.
			if need := x.DiskLen + x.RAMBytes; need <= budget {
				budget -= need
				todo = append(todo, x)
			}
		}
	}
	if len(todo) < 2 {
		return nil
	}
	disks := make([][]byte, len(todo))
	for i, x := range todo {
		disks[i] = make([]byte, x.DiskLen)
		if err := f.readVerified(x.DiskLogical, disks[i]); err != nil {
			return err
		}
	}
	out := make([][]byte, len(todo))
	var g errgroup.Group
	g.SetLimit(cpus())
	for i, x := range todo { // x, not todo[i]: a captured todo went to the heap on every read
		g.Go(func() error {
			var err error
			out[i], err = codec.Decompress(disks[i], x.Compression, x.RAMBytes)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("decompress: %w", err)
	}
	if f.decomp == nil {
		f.decomp = map[uint64][]byte{}
	}
	clear(f.decomp)
	for i, x := range todo {
		f.decomp[x.DiskLogical] = out[i]
	}
	return nil
}

// maxPredecompress bounds the memory predecompress holds for one read
// (compressed and decompressed bytes).
const maxPredecompress = 64 << 20

// Range is a byte range [Off, Off+Len) of a file.
type Range struct{ Off, Len uint64 }

// DataRanges returns the ranges of in that may hold data, in order: its
// inline and regular extents, merged where they touch and cut at the
// size. Holes (implicit, explicit, prealloc) are left out, so walking a
// sparse file costs O(extents), not O(size).
func (f *FS) DataRanges(in *Inode) ([]Range, error) {
	if in.IsDir() {
		return nil, syscall.EISDIR
	}
	var rs []Range
	var nbytes uint64 // as fsck counts them: every extent but holes
	// Decoded in place: nothing of an item outlives the callback, and a
	// run's three walks over every file made this 45 MB of garbage.
	var x format.FileExtentItem
	start, end := extentKey(in.Ino, 0), format.Key{ObjectID: in.Ino, Type: format.FileExtentKey + 1}
	err := f.rtree(format.FSTree).Scan(start, end, func(it format.Item) (bool, error) {
		err := format.DecodeFileExtentItem(it.Data, &x)
		if err == nil {
			err = format.CheckFileExtentKey(it.Key.Offset, &x)
		}
		if err != nil {
			return false, fmt.Errorf("inode %d extent at %d: %w", in.Ino, it.Key.Offset, err)
		}
		if x.Type == format.FileExtentInline || x.DiskLogical != 0 {
			nbytes += x.Len()
		}
		s, e := it.Key.Offset, min(it.Key.Offset+x.Len(), in.Size)
		if s >= in.Size || x.Type == format.FileExtentPrealloc || x.IsHole() {
			return true, nil
		}
		if n := len(rs); n > 0 && s <= rs[n-1].Off+rs[n-1].Len {
			rs[n-1].Len = max(rs[n-1].Len, e-rs[n-1].Off)
		} else {
			rs = append(rs, Range{s, e - s})
		}
		return true, nil
	})
	if err == nil && nbytes != in.NBytes {
		err = nbytesError(in, nbytes)
	}
	if err == nil {
		err = f.checkNoEntries(in)
	}
	return rs, err
}

// ReadData reads the data ranges of in (DataRanges) through buf and calls
// fn with each piece and its offset, in order; holes are skipped.
func (f *FS) ReadData(in *Inode, buf []byte, fn func(p []byte, off uint64) error) error {
	rs, err := f.DataRanges(in)
	if err != nil {
		return err
	}
	for _, r := range rs {
		if err := f.readRange(in, buf, r, fn); err != nil {
			return err
		}
	}
	return nil
}

// readRange reads range r of in through buf, piece by piece.
func (f *FS) readRange(in *Inode, buf []byte, r Range, fn func(p []byte, off uint64) error) error {
	for off, end := r.Off, r.Off+r.Len; off < end; {
		n, err := f.ReadAt(in, buf[:min(uint64(len(buf)), end-off)], off)
		if n > 0 {
			if ferr := fn(buf[:n], off); ferr != nil {
				return ferr
			}
			off += uint64(n)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// ReadChunks reads a whole file through buf and calls fn with each piece
// and its offset, in order (cat uses it). Holes come as zeroed pieces of
// buf without a tree lookup each: the work per extent is bounded, and a
// hole costs only the zeros handed to fn.
func (f *FS) ReadChunks(in *Inode, buf []byte, fn func(p []byte, off uint64) error) error {
	rs, err := f.DataRanges(in)
	if err != nil {
		return err
	}
	var pos uint64
	for _, r := range append(rs, Range{Off: in.Size}) {
		for pos < r.Off {
			p := buf[:min(uint64(len(buf)), r.Off-pos)]
			clear(p)
			if err := fn(p, pos); err != nil {
				return err
			}
			pos += uint64(len(p))
		}
		if err := f.readRange(in, buf, r, fn); err != nil {
			return err
		}
		pos = r.Off + r.Len
	}
	return nil
}
