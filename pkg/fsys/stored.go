package fsys

import (
	"fmt"

	"github.com/ddfs/ddfs/format"
)

// Piece is part of a file's data: plain bytes, or (Compression set) a
// range of a compressed extent as the image stores it, which a send
// stream can carry without decompressing (send --compressed-data).
type Piece struct {
	Range
	Compression format.Compression
	Extent      uint64 // the compressed extent's logical address
	DiskLen     uint64 // its stored (compressed) bytes
	RAMBytes    uint64 // its decompressed bytes
	At          uint64 // where Range starts in the decompressed bytes
}

// Pieces cuts range r of in's data into plain pieces and pieces of
// compressed extents, in order; plain pieces that touch are merged.
func (f *FS) Pieces(in *Inode, r Range) ([]Piece, error) {
	xs, err := f.extents(in.Ino, r.Off, r.Off+r.Len)
	if err != nil {
		return nil, err
	}
	var out []Piece
	plain := func(s, e uint64) {
		if n := len(out); n > 0 && out[n-1].Compression == format.CompressNone && out[n-1].Off+out[n-1].Len == s {
			out[n-1].Len += e - s
			return
		}
		out = append(out, Piece{Range: Range{s, e - s}})
	}
	at := r.Off
	for _, x := range xs {
		s, e := max(x.off, r.Off), min(x.end(), r.Off+r.Len)
		if s >= e {
			continue
		}
		if s > at {
			plain(at, s) // a hole inside the range reads as zeros
		}
		if x.Type == format.FileExtentRegular && x.DiskLogical != 0 && x.Compression != format.CompressNone {
			out = append(out, Piece{Range: Range{s, e - s}, Compression: x.Compression, Extent: x.DiskLogical,
				DiskLen: x.DiskLen, RAMBytes: x.RAMBytes, At: x.Offset + (s - x.off)})
		} else {
			plain(s, e)
		}
		at = max(at, e)
	}
	if end := r.Off + r.Len; at < end {
		plain(at, end)
	}
	return out, nil
}

// ReadStored reads compressed piece p's extent as stored into buf
// (p.DiskLen bytes), checked against its checksums.
func (f *FS) ReadStored(p Piece, buf []byte) ([]byte, error) {
	if p.Compression == format.CompressNone || p.DiskLen > format.MaxExtentBytes || p.DiskLen > uint64(cap(buf)) {
		return nil, fmt.Errorf("stored extent at %d of %d bytes: %w", p.Extent, p.DiskLen, format.ErrCorrupt)
	}
	buf = buf[:p.DiskLen]
	if err := f.readVerified(p.Extent, buf); err != nil {
		return nil, err
	}
	return buf, nil
}
