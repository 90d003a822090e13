// Package send writes a snapshot's namespace as a send stream and
// receives one into an image (FORMAT.md §10 the stream, §6.13 the
// receive): path records in a depth-first walk, each checksummed, with
// a trailer that proves the stream complete.
package send

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path"
	"syscall"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// Snapshot is what a stream says of the snapshot it carries.
type Snapshot struct {
	Name  string
	UUID  [16]byte
	Ctime format.Timespec
}

// Stats counts what a send or a receive carried.
type Stats struct {
	Records uint64 `json:"records"`
	Bytes   uint64 `json:"stream_bytes"`
	Files   uint64 `json:"files"`
	Data    uint64 `json:"data_bytes"`
}

// SendOptions change what a stream carries.
type SendOptions struct {
	// CompressedData: data in compressed extents travels as stored
	// (ENCODED records), not decompressed (FORMAT.md §10).
	CompressedData bool
}

// sender writes one stream.
type sender struct {
	o    SendOptions
	f    *fsys.FS
	base *fsys.FS // an incremental stream's base (nil: a full stream)
	// changed: the inodes whose items differ from the base's; dirty:
	// those and every directory above them (incremental streams).
	changed, dirty map[uint64]bool
	names          map[uint64]map[string]bool // a dirty directory's names that lead to dirty inodes
	stash          map[uint64]stashed         // files moved out of the way, by inode number (incremental)
	w              *aheadWriter
	rec            []byte
	data           []byte
	stored         []byte            // an ENCODED record's frame (CompressedData)
	links          map[uint64]string // first path of each file with several links
	st             Stats
}

// Send writes the namespace of f (a snapshot's read-only view) to w as
// a full stream of snapshot s. Memory: one data block, the walk's depth
// and the paths of files with several links.
func Send(f *fsys.FS, w io.Writer, s Snapshot, o SendOptions) (Stats, error) {
	x := &sender{o: o, f: f, w: newAheadWriter(w), links: map[uint64]string{}, data: make([]byte, format.MaxWriteData)}
	defer x.w.Flush() // stops its goroutine on an early return
	if _, err := x.w.Write(format.AppendStreamHeader(nil)); err != nil {
		return x.st, err
	}
	x.st.Bytes = format.StreamHeaderSize
	if err := x.put(&format.Record{Type: format.RecBegin, Name: s.Name, UUID: s.UUID, Ctim: s.Ctime}); err != nil {
		return x.st, err
	}
	root, err := f.Resolve("/", false)
	if err != nil {
		return x.st, err
	}
	if err := x.entry("", root, 0); err != nil {
		return x.st, err
	}
	end := format.Record{Type: format.RecEnd, Records: x.st.Records, Bytes: x.st.Bytes}
	if err := x.put(&end); err != nil {
		return x.st, err
	}
	return x.st, x.w.Flush()
}

func (x *sender) put(r *format.Record) error {
	x.rec = format.AppendRecord(x.rec[:0], r)
	x.st.Records++
	x.st.Bytes += uint64(len(x.rec))
	_, err := x.w.Write(x.rec)
	return err
}

// maxDepth bounds the walk (a hostile image's directories cannot recurse
// it without end).
const maxDepth = 1024

// entry sends inode in at p: made, filled, its xattrs, then its times
// (a directory's after its children, whose making changes them).
func (x *sender) entry(p string, in *fsys.Inode, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%s: directories nested over %d deep: %w", p, maxDepth, format.ErrCorrupt)
	}
	if first, ok := x.links[in.Ino]; ok {
		return x.put(&format.Record{Type: format.RecLink, Path: p, Target: first})
	}
	if st, ok := x.stash[in.Ino]; ok && st.base.Generation == in.Generation {
		return x.unstash(p, st, in, depth)
	}
	if err := x.make(p, in, depth); err != nil {
		return err
	}
	xs, err := x.f.ListXattrs(in)
	if err != nil {
		return fmt.Errorf("%s: xattrs: %w", p, err)
	}
	for _, a := range xs {
		if err := x.put(&format.Record{Type: format.RecSetXattr, Path: p, Name: a.Name, Data: a.Value}); err != nil {
			return err
		}
	}
	return x.put(&format.Record{Type: format.RecUtimes, Path: p, Atime: in.Atime, Mtime: in.Mtime, Ctim: in.Ctime})
}

// make sends the record that makes in, and its contents.
func (x *sender) make(p string, in *fsys.Inode, depth int) error {
	perm := in.Mode & 0o7777
	switch {
	case in.IsDir():
		if err := x.put(&format.Record{Type: format.RecMkdir, Path: p, Mode: perm, UID: in.UID, GID: in.GID}); err != nil {
			return err
		}
		return x.dir(p, in, depth)
	case in.IsRegular():
		if in.Nlink > 1 {
			x.links[in.Ino] = p
		}
		x.st.Files++
		if err := x.put(&format.Record{Type: format.RecMkfile, Path: p, Mode: perm, UID: in.UID, GID: in.GID}); err != nil {
			return err
		}
		return x.file(p, in)
	case in.IsSymlink():
		target, err := x.f.ReadlinkInode(in)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		return x.put(&format.Record{Type: format.RecSymlink, Path: p, Target: target, UID: in.UID, GID: in.GID})
	default:
		if in.Nlink > 1 {
			x.links[in.Ino] = p
		}
		return x.put(&format.Record{Type: format.RecMknod, Path: p, Mode: in.Mode, UID: in.UID, GID: in.GID, Rdev: in.Rdev})
	}
}

func (x *sender) dir(p string, in *fsys.Inode, depth int) error {
	kids, err := x.f.Children(in)
	if err != nil {
		return fmt.Errorf("/%s: %w", p, err) // fsck flags an entry: no complete stream
	}
	for _, k := range kids {
		if err := x.entry(path.Join(p, k.Entry.Name), k.Inode, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// file sends a regular file's data ranges (holes are not sent) and its
// size.
func (x *sender) file(p string, in *fsys.Inode) error {
	ranges, err := x.f.DataRanges(in)
	if err != nil {
		return fmt.Errorf("/%s: %w", p, err)
	}
	for _, r := range ranges {
		if err := x.write(p, in, r); err != nil {
			return err
		}
	}
	return x.put(&format.Record{Type: format.RecTruncate, Path: p, Offset: in.Size})
}

// write sends bytes r of file in: WRITE records, or with CompressedData
// ENCODED ones for its pieces in compressed extents.
func (x *sender) write(p string, in *fsys.Inode, r fsys.Range) error {
	if !x.o.CompressedData {
		return x.writePlain(p, in, r)
	}
	pieces, err := x.f.Pieces(in, r)
	if err != nil {
		return fmt.Errorf("/%s: %w", p, err)
	}
	for _, pc := range pieces {
		sent := false
		if pc.Compression != format.CompressNone {
			if sent, err = x.writeEncoded(p, pc); err != nil {
				return err
			}
		}
		if !sent {
			if err := x.writePlain(p, in, pc.Range); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeEncoded sends compressed piece pc as its extent's frame, unless
// the frame is bigger than the piece or than a record holds.
func (x *sender) writeEncoded(p string, pc fsys.Piece) (bool, error) {
	if pc.DiskLen > format.MaxWriteData {
		return false, nil
	}
	if x.stored == nil {
		x.stored = make([]byte, format.MaxWriteData)
	}
	frame, err := x.f.ReadStored(pc, x.stored)
	if err != nil {
		return false, fmt.Errorf("/%s: extent at %d: %w", p, pc.Extent, err)
	}
	n := 4 + uint64(binary.LittleEndian.Uint32(frame))
	if n > uint64(len(frame)) {
		return false, fmt.Errorf("/%s: extent at %d: frame of %d bytes in %d: %w", p, pc.Extent, n, len(frame), format.ErrCorrupt)
	}
	if n >= pc.Len {
		return false, nil
	}
	x.st.Data += pc.Len
	return true, x.put(&format.Record{Type: format.RecEncoded, Path: p, Offset: pc.Off, Length: pc.Len,
		RAMBytes: pc.RAMBytes, RAMOffset: pc.At, Compression: pc.Compression, Data: frame[:n]})
}

// writePlain sends bytes r of file in, in WRITE records of at most 1 MiB.
func (x *sender) writePlain(p string, in *fsys.Inode, r fsys.Range) error {
	for off := r.Off; off < r.Off+r.Len; {
		n := min(uint64(len(x.data)), r.Off+r.Len-off)
		got, err := x.f.ReadAt(in, x.data[:n], off)
		if err != nil && !errors.Is(err, io.EOF) || uint64(got) != n {
			return fmt.Errorf("/%s: read %d bytes at %d: %w", p, n, off, cmpErr(err, syscall.EIO))
		}
		if err := x.put(&format.Record{Type: format.RecWrite, Path: p, Offset: off, Data: x.data[:n]}); err != nil {
			return err
		}
		x.st.Data += n
		off += n
	}
	return nil
}

func cmpErr(err, alt error) error {
	if err != nil {
		return err
	}
	return alt
}
