package format

import (
	"bytes"
	"encoding/binary"
)

// The fsync log (FORMAT.md §3.10): blocks of LogBlockSize bytes in metadata
// chunks, chained backwards from the superblock's log_root, each holding
// the records of one fsync.

// LogMagic opens every log block.
const LogMagic = "_DDFSLOG"

// MaxLogBlocks bounds a log: a writer commits instead of writing block
// MaxLogBlocks, so a replay holds at most this many blocks.
const MaxLogBlocks = 256

// LogBlockSize is the size and alignment of the log blocks of a set:
// 4 KiB, or the sector size when larger. Not node_size: an fsync writes
// one block to every copy, and at 16 KiB nodes a block was most of what
// an fsync of 4 KiB wrote.
func LogBlockSize(sb *Superblock) uint32 { return max(sb.SectorSize, 4096) }

// LogHeaderSize is the size of a log block's header; the payload follows.
const LogHeaderSize = 88

// LogBlock is one block of the fsync log.
type LogBlock struct {
	FSID       [16]byte
	Generation uint64 // the superblock generation the log extends
	Seq        uint64 // 0 for the oldest block
	Prev       uint64 // logical address of block Seq-1; 0 when Seq is 0
	Payload    []byte // the records (LogRecord encodings, back to back)
}

// MarshalLogBlock encodes b into a node-size block with its checksum.
func MarshalLogBlock(b *LogBlock, size uint32, csum CsumType) ([]byte, error) {
	if len(b.Payload) > int(size)-LogHeaderSize {
		return nil, corruptf(nil, "log block: %d bytes of records, at most %d", len(b.Payload), int(size)-LogHeaderSize)
	}
	out := make([]byte, size)
	le := binary.LittleEndian
	copy(out[32:], LogMagic)
	copy(out[40:], b.FSID[:])
	le.PutUint64(out[56:], b.Generation)
	le.PutUint64(out[64:], b.Seq)
	le.PutUint64(out[72:], b.Prev)
	le.PutUint32(out[80:], uint32(len(b.Payload)))
	copy(out[LogHeaderSize:], b.Payload)
	sum := Checksum(csum, out[CsumSize:])
	copy(out, sum[:])
	return out, nil
}

// UnmarshalLogBlock decodes and checks a log block: checksum, magic, and
// the header fields against what the chain expects.
func UnmarshalLogBlock(raw []byte, csum CsumType, fsid [16]byte, gen, seq uint64) (*LogBlock, error) {
	if len(raw) < LogHeaderSize {
		return nil, corruptf(ErrShort, "log block: %d bytes", len(raw))
	}
	if sum := Checksum(csum, raw[CsumSize:]); !bytes.Equal(sum[:], raw[:CsumSize]) {
		return nil, corruptf(ErrChecksum, "log block %d", seq)
	}
	if string(raw[32:40]) != LogMagic {
		return nil, corruptf(ErrBadMagic, "log block %d", seq)
	}
	le := binary.LittleEndian
	b := &LogBlock{Generation: le.Uint64(raw[56:]), Seq: le.Uint64(raw[64:]), Prev: le.Uint64(raw[72:])}
	copy(b.FSID[:], raw[40:56])
	n := le.Uint32(raw[80:])
	switch {
	case b.FSID != fsid:
		return nil, corruptf(nil, "log block %d: fsid %x, not the set's", seq, b.FSID)
	case b.Generation != gen || b.Seq != seq:
		return nil, corruptf(nil, "log block: generation %d seq %d, expected %d and %d", b.Generation, b.Seq, gen, seq)
	case (b.Prev == 0) != (seq == 0):
		return nil, corruptf(nil, "log block %d: previous block %d", seq, b.Prev)
	case uint64(n) > uint64(len(raw)-LogHeaderSize) || le.Uint32(raw[84:]) != 0:
		return nil, corruptf(nil, "log block %d: %d bytes of records in a %d-byte block", seq, n, len(raw))
	}
	b.Payload = raw[LogHeaderSize : LogHeaderSize+int(n)]
	return b, nil
}

// LogRange is a byte range [Start, End) of a file that a record rewrites.
type LogRange struct{ Start, End uint64 }

// LogExtent is one EXTENT_DATA item a record puts into the file.
type LogExtent struct {
	Off  uint64
	Item FileExtentItem
}

// LogData is a data extent the committed trees do not have: its
// EXTENT_ITEM (refs and dedupe fields are the replay's) and checksums.
type LogData struct {
	Logical, DiskLen uint64
	Item             ExtentItem
	Csums            []byte
}

// LogRecord is what one fsync of one file logs: the file's inode item,
// the ranges it rewrote, the extents now in them and the new data they
// reference.
type LogRecord struct {
	Ino     uint64
	Inode   InodeItem
	Ranges  []LogRange
	Extents []LogExtent
	New     []LogData
}

// MarshalLogRecord appends the encoding of r to out.
func MarshalLogRecord(out []byte, r *LogRecord) []byte {
	le := binary.LittleEndian
	out = le.AppendUint64(out, r.Ino)
	in := MarshalInodeItem(&r.Inode)
	out = le.AppendUint16(out, uint16(len(in)))
	out = append(out, in...)
	out = le.AppendUint16(out, uint16(len(r.Ranges)))
	for _, g := range r.Ranges {
		out = le.AppendUint64(le.AppendUint64(out, g.Start), g.End)
	}
	out = le.AppendUint16(out, uint16(len(r.Extents)))
	for i := range r.Extents {
		x := MarshalFileExtentItem(&r.Extents[i].Item)
		out = le.AppendUint16(le.AppendUint64(out, r.Extents[i].Off), uint16(len(x)))
		out = append(out, x...)
	}
	out = le.AppendUint16(out, uint16(len(r.New)))
	for i := range r.New {
		d := &r.New[i]
		e := MarshalExtentItem(&d.Item)
		out = le.AppendUint16(le.AppendUint64(le.AppendUint64(out, d.Logical), d.DiskLen), uint16(len(e)))
		out = append(out, e...)
		out = le.AppendUint32(out, uint32(len(d.Csums)))
		out = append(out, d.Csums...)
	}
	return out
}

// logCursor reads a payload, every length checked against what is left.
type logCursor struct {
	b   []byte
	err error
}

func (c *logCursor) take(n int) []byte {
	if c.err != nil || n > len(c.b) {
		if c.err == nil {
			c.err = corruptf(ErrShort, "log record: %d bytes wanted, %d left", n, len(c.b))
		}
		return nil
	}
	v := c.b[:n]
	c.b = c.b[n:]
	return v
}

func (c *logCursor) u64() uint64 {
	if v := c.take(8); v != nil {
		return binary.LittleEndian.Uint64(v)
	}
	return 0
}

func (c *logCursor) u16() int {
	if v := c.take(2); v != nil {
		return int(binary.LittleEndian.Uint16(v))
	}
	return 0
}

func (c *logCursor) u32() int {
	if v := c.take(4); v != nil {
		return int(binary.LittleEndian.Uint32(v))
	}
	return 0
}

// UnmarshalLogRecords decodes and checks every record of a payload
// (§3.10): a reader replays only records that pass.
func UnmarshalLogRecords(payload []byte, sectorSize uint32, csum CsumType) ([]LogRecord, error) {
	c := &logCursor{b: payload}
	var out []LogRecord
	for len(c.b) > 0 && c.err == nil {
		r, err := c.record(uint64(sectorSize), csum)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, c.err
}

func (c *logCursor) record(ss uint64, csum CsumType) (LogRecord, error) {
	r := LogRecord{Ino: c.u64()}
	in, err := UnmarshalInodeItem(c.take(c.u16()))
	if c.err != nil {
		return r, c.err
	}
	if err != nil {
		return r, err
	}
	if r.Ino < FirstFreeIno || in.FileType() != FileTypeRegular {
		return r, corruptf(nil, "log record: inode %d of type %d (only regular files are logged)", r.Ino, in.FileType())
	}
	r.Inode = *in
	if err := c.ranges(&r); err != nil {
		return r, err
	}
	if err := c.extents(&r); err != nil {
		return r, err
	}
	return r, c.newData(&r, ss, csum)
}

func (c *logCursor) ranges(r *LogRecord) error {
	n := c.u16()
	last := uint64(0)
	for i := 0; i < n && c.err == nil; i++ {
		g := LogRange{Start: c.u64(), End: c.u64()}
		if c.err == nil && (g.Start >= g.End || g.End > MaxFileSize || g.Start < last) {
			return corruptf(nil, "log record of inode %d: range [%d,%d) after %d", r.Ino, g.Start, g.End, last)
		}
		last = g.End
		r.Ranges = append(r.Ranges, g)
	}
	return c.err
}

func (c *logCursor) extents(r *LogRecord) error {
	n := c.u16()
	last, g := uint64(0), 0
	for i := 0; i < n && c.err == nil; i++ {
		x := LogExtent{Off: c.u64()}
		b := c.take(c.u16())
		if c.err != nil {
			break
		}
		if err := DecodeFileExtentItem(b, &x.Item); err != nil {
			return err
		}
		x.Item.Inline = bytes.Clone(x.Item.Inline)
		if err := CheckFileExtentKey(x.Off, &x.Item); err != nil {
			return err
		}
		for g < len(r.Ranges) && r.Ranges[g].End <= x.Off {
			g++
		}
		if x.Item.Type == FileExtentInline || x.Off < last || g == len(r.Ranges) ||
			x.Off < r.Ranges[g].Start || x.Off+x.Item.Len() > r.Ranges[g].End {
			return corruptf(nil, "log record of inode %d: extent at %d (+%d, type %d) outside its ranges or out of order", r.Ino, x.Off, x.Item.Len(), x.Item.Type)
		}
		last = x.Off + x.Item.Len()
		r.Extents = append(r.Extents, x)
	}
	return c.err
}

func (c *logCursor) newData(r *LogRecord, ss uint64, csum CsumType) error {
	n := c.u16()
	for i := 0; i < n && c.err == nil; i++ {
		d := LogData{Logical: c.u64(), DiskLen: c.u64()}
		e, err := UnmarshalExtentItem(c.take(c.u16()))
		sums := c.take(c.u32())
		if c.err != nil {
			break
		}
		if err != nil {
			return err
		}
		if d.DiskLen == 0 || d.DiskLen%ss != 0 || d.Logical%ss != 0 || d.Logical == 0 ||
			d.Logical+d.DiskLen < d.Logical || d.DiskLen > MaxExtentBytes ||
			e.Flags != 0 || uint64(len(sums)) != d.DiskLen/ss*uint64(csum.Len()) {
			return corruptf(nil, "log record of inode %d: new data extent %d+%d (flags %d, %d checksum bytes)", r.Ino, d.Logical, d.DiskLen, e.Flags, len(sums))
		}
		d.Item, d.Csums = *e, bytes.Clone(sums)
		r.New = append(r.New, d)
	}
	return c.err
}

// NewerSuper reports whether a supersedes b when choosing a superblock
// (§3.7): the higher generation, then, within one generation, the longer
// fsync log (an fsync rewrites the superblocks without a commit, and a
// crash between copies leaves some a log block behind).
func NewerSuper(a, b *Superblock) bool {
	if a.Generation != b.Generation {
		return a.Generation > b.Generation
	}
	return logRank(a) > logRank(b)
}

func logRank(sb *Superblock) uint64 {
	if sb.LogRoot == 0 {
		return 0
	}
	return sb.LogSeq + 1
}

// WithoutLog is sb with the fsync log fields cleared: they are not
// set-wide (§3.7 step 5 compares copies without them).
func WithoutLog(sb Superblock) Superblock {
	sb.LogRoot, sb.LogSeq = 0, 0
	sb.Incompat &^= IncompatFsyncLog
	return sb
}
