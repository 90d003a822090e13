package format

// The send stream (FORMAT.md §10): a header, then records, each with its
// length, type and a CRC-32C, ending with END, which counts what came
// before it. Decoding bounds every length before it allocates, and
// refuses a record whose checksum, shape or place is wrong.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"strings"
)

// StreamMagic starts a send stream; StreamVersion is the version this
// build writes and reads.
const (
	StreamMagic      = "ddfssend"
	StreamVersion    = 1
	StreamHeaderSize = 16
	// RecordHeaderSize is a record's length (4), type (2), reserved (2)
	// and CRC-32C (4).
	RecordHeaderSize = 12
	// MaxWriteData bounds a WRITE record's data; MaxRecordPayload any
	// record's payload.
	MaxWriteData     = 1 << 20
	MaxRecordPayload = MaxWriteData + 2*MaxStreamPath + 64
	// MaxStreamPath bounds a path in a stream (bytes).
	MaxStreamPath = 4095
	// MaxXattrValue bounds an xattr value in a stream.
	MaxXattrValue = 64 << 10
)

// RecordType says what a record does.
type RecordType uint16

// The record types.
const (
	RecBegin    RecordType = 1  // the snapshot the stream carries; first, once
	RecMkdir    RecordType = 2  // a directory ("" : the root's attributes)
	RecMkfile   RecordType = 3  // an empty regular file
	RecSymlink  RecordType = 4  // a symbolic link
	RecMknod    RecordType = 5  // a device node, fifo or socket
	RecLink     RecordType = 6  // a hard link to a file made before
	RecWrite    RecordType = 7  // bytes of a file
	RecTruncate RecordType = 8  // a file's size
	RecSetXattr RecordType = 9  // an extended attribute
	RecUtimes   RecordType = 10 // times
	RecEnd      RecordType = 11 // the end: counts what came before
	// Incremental streams change the base's tree:
	RecUnlink      RecordType = 12 // remove a name of a non-directory
	RecRmdir       RecordType = 13 // remove an empty directory
	RecSetAttr     RecordType = 14 // mode (07777), owner of an existing entry
	RecRemoveXattr RecordType = 15 // remove an extended attribute
	RecPunch       RecordType = 16 // make a range of a file a hole
	RecRename      RecordType = 17 // move a non-directory to a new name
	RecEncoded     RecordType = 18 // bytes of a file as a compressed extent stores them
)

// Record is one decoded record; which fields mean something depends on
// Type (FORMAT.md §10).
type Record struct {
	Type               RecordType
	Path               string // relative, "/"-separated; "" is the root
	Target             string // RecSymlink: the link's target; RecLink: the existing path; RecRename: the new path
	Mode, UID, GID     uint32
	Rdev               uint64
	Offset             uint64 // RecWrite, RecPunch: file offset; RecTruncate: size
	Length             uint64 // RecPunch: bytes
	Data               []byte // RecWrite: bytes; RecSetXattr: value
	Name               string // RecSetXattr: the attribute; RecBegin: the snapshot
	Atime, Mtime, Ctim Timespec
	UUID, ParentUUID   [16]byte // RecBegin
	Records, Bytes     uint64   // RecEnd: records and stream bytes before it
	// RecEncoded: Data is a compressed extent's frame (FORMAT.md §6.6)
	// of RAMBytes decompressed bytes; the file's Length bytes at Offset
	// are those from RAMOffset.
	Compression         Compression
	RAMBytes, RAMOffset uint64
}

// AppendStreamHeader appends the stream header.
func AppendStreamHeader(b []byte) []byte {
	b = append(b, StreamMagic...)
	b = binary.LittleEndian.AppendUint32(b, StreamVersion)
	return binary.LittleEndian.AppendUint32(b, 0)
}

// CheckStreamHeader checks a stream's first StreamHeaderSize bytes.
func CheckStreamHeader(b []byte) error {
	if len(b) < StreamHeaderSize || string(b[:8]) != StreamMagic {
		return corruptf(nil, "send stream: no %q header", StreamMagic)
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != StreamVersion {
		return corruptf(ErrUnsupported, "send stream version %d (this build reads %d)", v, StreamVersion)
	}
	if binary.LittleEndian.Uint32(b[12:]) != 0 {
		return corruptf(nil, "send stream: reserved header bytes not zero")
	}
	return nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// AppendRecord appends r, encoded with its header.
func AppendRecord(b []byte, r *Record) []byte {
	start := len(b)
	b = append(b, make([]byte, RecordHeaderSize)...)
	b = r.appendPayload(b)
	n := len(b) - start - RecordHeaderSize
	h := b[start:]
	binary.LittleEndian.PutUint32(h[0:], uint32(n))
	binary.LittleEndian.PutUint16(h[4:], uint16(r.Type))
	crc := crc32.Update(crc32.Checksum(h[:8], castagnoli), castagnoli, b[start+RecordHeaderSize:])
	binary.LittleEndian.PutUint32(h[8:], crc)
	return b
}

func appendStr(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func appendTime(b []byte, t Timespec) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(t.Sec))
	return binary.LittleEndian.AppendUint32(b, t.Nsec)
}

func (r *Record) appendPayload(b []byte) []byte {
	le := binary.LittleEndian
	switch r.Type {
	case RecBegin:
		b = append(append(b, r.UUID[:]...), r.ParentUUID[:]...)
		return appendStr(appendTime(b, r.Ctim), r.Name)
	case RecEnd:
		return le.AppendUint64(le.AppendUint64(b, r.Records), r.Bytes)
	}
	b = appendStr(b, r.Path)
	switch r.Type {
	case RecMkdir, RecMkfile, RecSetAttr:
		b = le.AppendUint32(le.AppendUint32(le.AppendUint32(b, r.Mode), r.UID), r.GID)
	case RecRemoveXattr:
		b = appendStr(b, r.Name)
	case RecPunch:
		b = le.AppendUint64(le.AppendUint64(b, r.Offset), r.Length)
	case RecSymlink:
		b = appendStr(le.AppendUint32(le.AppendUint32(b, r.UID), r.GID), r.Target)
	case RecMknod:
		b = le.AppendUint64(le.AppendUint32(le.AppendUint32(le.AppendUint32(b, r.Mode), r.UID), r.GID), r.Rdev)
	case RecLink, RecRename:
		b = appendStr(b, r.Target)
	case RecWrite:
		b = append(le.AppendUint64(b, r.Offset), r.Data...)
	case RecEncoded:
		b = le.AppendUint64(le.AppendUint64(le.AppendUint64(le.AppendUint64(b, r.Offset), r.Length), r.RAMBytes), r.RAMOffset)
		b = append(le.AppendUint32(b, uint32(r.Compression)), r.Data...)
	case RecTruncate:
		b = le.AppendUint64(b, r.Offset)
	case RecSetXattr:
		b = append(le.AppendUint32(appendStr(b, r.Name), uint32(len(r.Data))), r.Data...)
	case RecUtimes:
		b = appendTime(appendTime(appendTime(b, r.Atime), r.Mtime), r.Ctim)
	}
	return b
}

// ReadRecord reads and decodes the next record of a stream from r into
// rec (its Data aliases buf, grown as needed, up to MaxRecordPayload);
// it returns the bytes the record took.
func ReadRecord(r io.Reader, rec *Record, buf *[]byte) (int, error) {
	var h [RecordHeaderSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF // END ends a stream, not its bytes
		}
		return 0, corruptf(err, "send stream: record header")
	}
	n := binary.LittleEndian.Uint32(h[0:])
	if n > MaxRecordPayload || binary.LittleEndian.Uint16(h[6:]) != 0 {
		return 0, corruptf(nil, "send stream: record of %d bytes (at most %d), reserved %#x", n, MaxRecordPayload, binary.LittleEndian.Uint16(h[6:]))
	}
	if cap(*buf) < int(n) {
		*buf = make([]byte, n)
	}
	p := (*buf)[:n]
	if _, err := io.ReadFull(r, p); err != nil {
		return 0, corruptf(io.ErrUnexpectedEOF, "send stream: a record of %d bytes ends early", n)
	}
	if crc := crc32.Update(crc32.Checksum(h[:8], castagnoli), castagnoli, p); crc != binary.LittleEndian.Uint32(h[8:]) {
		return 0, corruptf(nil, "send stream: record checksum %#x, computed %#x", binary.LittleEndian.Uint32(h[8:]), crc)
	}
	*rec = Record{Type: RecordType(binary.LittleEndian.Uint16(h[4:]))}
	if err := rec.decode(p); err != nil {
		return 0, err
	}
	return RecordHeaderSize + int(n), nil
}

// payload is a cursor over a record's payload; a read past its end sets
// short.
type payload struct {
	b     []byte
	short bool
}

func (p *payload) take(n int) []byte {
	if n > len(p.b) {
		p.short, p.b = true, nil
		return make([]byte, n)
	}
	v := p.b[:n]
	p.b = p.b[n:]
	return v
}

func (p *payload) u32() uint32 { return binary.LittleEndian.Uint32(p.take(4)) }
func (p *payload) u64() uint64 { return binary.LittleEndian.Uint64(p.take(8)) }
func (p *payload) str() string { return string(p.take(int(binary.LittleEndian.Uint16(p.take(2))))) }
func (p *payload) time() Timespec {
	return Timespec{Sec: int64(p.u64()), Nsec: p.u32()}
}

func (r *Record) decode(b []byte) error {
	p := &payload{b: b}
	switch r.Type {
	case RecBegin:
		copy(r.UUID[:], p.take(16))
		copy(r.ParentUUID[:], p.take(16))
		r.Ctim, r.Name = p.time(), p.str()
	case RecEnd:
		r.Records, r.Bytes = p.u64(), p.u64()
	case RecMkdir, RecMkfile, RecSymlink, RecMknod, RecLink, RecWrite, RecTruncate, RecSetXattr, RecUtimes,
		RecUnlink, RecRmdir, RecSetAttr, RecRemoveXattr, RecPunch, RecRename, RecEncoded:
		r.Path = p.str()
		r.decodeBody(p)
	default:
		return corruptf(nil, "send stream: record type %d", r.Type)
	}
	if p.short || len(p.b) != 0 && r.Type != RecWrite && r.Type != RecEncoded {
		return corruptf(nil, "send stream: record type %d of %d bytes: wrong length", r.Type, len(b))
	}
	return r.validate()
}

func (r *Record) decodeBody(p *payload) {
	switch r.Type {
	case RecMkdir, RecMkfile, RecSetAttr:
		r.Mode, r.UID, r.GID = p.u32(), p.u32(), p.u32()
	case RecRemoveXattr:
		r.Name = p.str()
	case RecPunch:
		r.Offset, r.Length = p.u64(), p.u64()
	case RecSymlink:
		r.UID, r.GID, r.Target = p.u32(), p.u32(), p.str()
	case RecMknod:
		r.Mode, r.UID, r.GID, r.Rdev = p.u32(), p.u32(), p.u32(), p.u64()
	case RecLink, RecRename:
		r.Target = p.str()
	case RecWrite:
		r.Offset = p.u64()
		r.Data, p.b = p.b, nil
	case RecEncoded:
		r.Offset, r.Length, r.RAMBytes, r.RAMOffset = p.u64(), p.u64(), p.u64(), p.u64()
		r.Compression = Compression(p.u32())
		r.Data, p.b = p.b, nil
	case RecTruncate:
		r.Offset = p.u64()
	case RecSetXattr:
		r.Name = p.str()
		r.Data = p.take(int(p.u32()))
	case RecUtimes:
		r.Atime, r.Mtime, r.Ctim = p.time(), p.time(), p.time()
	}
}

// validate holds a decoded record to §10's rules.
func (r *Record) validate() error {
	bad := func(what string) error { return corruptf(nil, "send stream: record type %d: %s", r.Type, what) }
	switch {
	case r.Type != RecBegin && r.Type != RecEnd && !ValidStreamPath(r.Path, rootAllowed[r.Type]):
		return bad("path " + quote(r.Path))
	case r.Type == RecBegin && (!validName(r.Name) || r.UUID == [16]byte{}):
		return bad("snapshot name or uuid")
	case (r.Type == RecLink || r.Type == RecRename) && !ValidStreamPath(r.Target, false):
		return bad("link or rename target " + quote(r.Target))
	case r.Type == RecSymlink && (r.Target == "" || len(r.Target) > MaxStreamPath || strings.IndexByte(r.Target, 0) >= 0):
		return bad("symlink target")
	case r.Type == RecWrite && (len(r.Data) == 0 || len(r.Data) > MaxWriteData || r.Offset+uint64(len(r.Data)) > MaxFileSize || r.Offset+uint64(len(r.Data)) < r.Offset):
		return bad("write range")
	case r.Type == RecEncoded && !validEncoded(r):
		return bad("encoded write")
	case r.Type == RecTruncate && r.Offset > MaxFileSize:
		return bad("size")
	case (r.Type == RecSetXattr || r.Type == RecRemoveXattr) && (r.Name == "" || len(r.Name) > 255 || strings.IndexByte(r.Name, 0) >= 0 || len(r.Data) > MaxXattrValue):
		return bad("xattr")
	case r.Type == RecPunch && (r.Length == 0 || r.Offset+r.Length > MaxFileSize || r.Offset+r.Length < r.Offset):
		return bad("punch range")
	case (r.Type == RecMkdir || r.Type == RecMkfile || r.Type == RecSetAttr) && r.Mode&^0o7777 != 0,
		r.Type == RecMknod && !specialMode(r.Mode, r.Rdev):
		return bad("mode")
	case r.Type == RecUtimes && (r.Atime.Nsec >= 1e9 || r.Mtime.Nsec >= 1e9 || r.Ctim.Nsec >= 1e9),
		r.Type == RecBegin && r.Ctim.Nsec >= 1e9:
		return bad("time")
	}
	return nil
}

// validEncoded checks an ENCODED record's ranges: the file range within
// the file size limit, the piece within the decompressed extent, the
// extent and its frame within their limits.
func validEncoded(r *Record) bool {
	return (r.Compression == CompressZstd || r.Compression == CompressS2) &&
		r.Length > 0 && r.Offset+r.Length <= MaxFileSize && r.Offset+r.Length > r.Offset &&
		r.RAMBytes <= MaxExtentBytes && r.RAMOffset < r.RAMBytes && r.Length <= r.RAMBytes-r.RAMOffset &&
		len(r.Data) >= 4 && len(r.Data) <= MaxWriteData
}

// rootAllowed are the record types whose path may be "", the root.
var rootAllowed = map[RecordType]bool{RecMkdir: true, RecUtimes: true, RecSetXattr: true, RecSetAttr: true, RecRemoveXattr: true}

// ValidStreamPath reports whether p is a stream path: at most
// MaxStreamPath bytes of valid entry names joined by "/" ("" only where
// root is allowed).
func ValidStreamPath(p string, root bool) bool {
	if p == "" {
		return root
	}
	if len(p) > MaxStreamPath {
		return false
	}
	for _, c := range strings.Split(p, "/") {
		if !validName(c) {
			return false
		}
	}
	return true
}

func quote(s string) string {
	var b bytes.Buffer
	b.WriteByte('"')
	for _, c := range []byte(s) {
		if c < 0x20 || c == '"' || c >= 0x7f {
			b.WriteString("?")
			continue
		}
		b.WriteByte(c)
	}
	b.WriteByte('"')
	return b.String()
}

// specialMode reports whether m is a device node's, fifo's or socket's
// st_mode (one of those types and permission bits), with a device number
// only for a device node.
func specialMode(m uint32, rdev uint64) bool {
	switch m & 0o170000 {
	case 0o020000, 0o060000:
		return m&^0o177777 == 0
	case 0o010000, 0o140000:
		return m&^0o177777 == 0 && rdev == 0
	}
	return false
}
