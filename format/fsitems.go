package format

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/cespare/xxhash/v2"
)

// This file holds the items of the fs, extent and dedupe trees that file
// data and the namespace need (FORMAT.md §6 "Items"). Decoders validate and
// fail with errors that match ErrCorrupt; encoders trust their input.

// NameHash is the key offset of DIR_ITEM and XATTR_ITEM items: xxhash64
// (seed 0) of the name's bytes (FORMAT.md §6.1 "Hashes").
func NameHash(name []byte) uint64 { return xxhash.Sum64(name) }

// ExtentDataRefHash is the key offset of an EXTENT_DATA_REF item: xxhash64
// of tree, ino and offset as three little-endian u64 (FORMAT.md §6.1).
func ExtentDataRefHash(tree, ino, offset uint64) uint64 {
	var b [24]byte
	binary.LittleEndian.PutUint64(b[0:], tree)
	binary.LittleEndian.PutUint64(b[8:], ino)
	binary.LittleEndian.PutUint64(b[16:], offset)
	return xxhash.Sum64(b[:])
}

// MaxNameLen is the longest file or xattr name, in bytes.
const MaxNameLen = 255

// Limits of file data (FORMAT.md appendix "Limits"). Decoders reject
// larger values, so no reader allocates or loops by a size it has not
// bounded.
const (
	// MaxFileSize is the largest file size and the end of the file offset
	// space: every byte of a file has an offset that fits an int64.
	MaxFileSize = 1<<63 - 1
	// MaxExtentBytes bounds ram_bytes and disk_len of a data extent (and
	// so the memory one extent read needs); writers cut data into extents
	// of at most this size.
	MaxExtentBytes = 8 << 20
	// MaxInlineData is the longest inline extent.
	MaxInlineData = 4096
	// MaxSymlinkTarget is the longest symlink target (PATH_MAX - 1).
	MaxSymlinkTarget = 4095
)

// ValidName reports whether name may be a directory entry: 1..MaxNameLen
// bytes, no '/' or NUL, not "." or "..".
func ValidName(name string) bool { return validName(name) }

func validName[T string | []byte](name T) bool {
	if len(name) == 0 || len(name) > MaxNameLen || string(name) == "." || string(name) == ".." {
		return false
	}
	for i := 0; i < len(name); i++ {
		if name[i] == '/' || name[i] == 0 {
			return false
		}
	}
	return true
}

// validXattrName reports whether name may name an xattr: 1..MaxNameLen
// bytes without NUL.
func validXattrName(name string) bool {
	if len(name) == 0 || len(name) > MaxNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		if name[i] == 0 {
			return false
		}
	}
	return true
}

// sizeError reports an item whose value is not exactly want bytes.
func sizeError(what string, got, want int) error {
	if got < want {
		return corruptf(ErrShort, "%s: %d bytes, want %d", what, got, want)
	}
	return corruptf(nil, "%s: %d bytes, want %d", what, got, want)
}

// FileType is the type of a directory entry's child (FORMAT.md §6.4).
type FileType uint8

const (
	FileTypeRegular  FileType = 1
	FileTypeDir      FileType = 2
	FileTypeCharDev  FileType = 3
	FileTypeBlockDev FileType = 4
	FileTypeFIFO     FileType = 5
	FileTypeSocket   FileType = 6
	FileTypeSymlink  FileType = 7
)

// Unix file type bits of InodeItem.Mode (FORMAT.md §6.2).
const (
	ModeTypeMask uint32 = 0o170000
	ModeFIFO     uint32 = 0o010000
	ModeCharDev  uint32 = 0o020000
	ModeDir      uint32 = 0o040000
	ModeBlockDev uint32 = 0o060000
	ModeRegular  uint32 = 0o100000
	ModeSymlink  uint32 = 0o120000
	ModeSocket   uint32 = 0o140000
	// modeMax: type bits, suid, sgid, sticky and permissions; higher bits are corruption.
	modeMax uint32 = 0o177777
)

var fileTypes = [...]struct {
	mode uint32
	name string
}{
	FileTypeRegular:  {ModeRegular, "reg"},
	FileTypeDir:      {ModeDir, "dir"},
	FileTypeCharDev:  {ModeCharDev, "chrdev"},
	FileTypeBlockDev: {ModeBlockDev, "blkdev"},
	FileTypeFIFO:     {ModeFIFO, "fifo"},
	FileTypeSocket:   {ModeSocket, "sock"},
	FileTypeSymlink:  {ModeSymlink, "symlink"},
}

// Valid reports whether t is one of the seven file types.
func (t FileType) Valid() bool { return t >= FileTypeRegular && t <= FileTypeSymlink }

// Mode returns the Unix type bits of t (0 if t is not valid).
func (t FileType) Mode() uint32 {
	if !t.Valid() {
		return 0
	}
	return fileTypes[t].mode
}

// FileTypeOfMode returns the file type of a Unix mode, or 0 if its type
// bits name none.
func FileTypeOfMode(mode uint32) FileType {
	for t := FileTypeRegular; t <= FileTypeSymlink; t++ {
		if fileTypes[t].mode == mode&ModeTypeMask {
			return t
		}
	}
	return 0
}

func (t FileType) String() string {
	if t.Valid() {
		return fileTypes[t].name
	}
	return fmt.Sprintf("filetype(%d)", uint8(t))
}

// Timespec is a timestamp: seconds since the Unix epoch (may be negative)
// and nanoseconds, 0..999999999 (FORMAT.md §6.2).
type Timespec struct {
	Sec  int64
	Nsec uint32
}

const timespecSize = 12

func putTimespec(b []byte, t Timespec) {
	binary.LittleEndian.PutUint64(b[0:], uint64(t.Sec))
	binary.LittleEndian.PutUint32(b[8:], t.Nsec)
}

func getTimespec(b []byte) Timespec {
	return Timespec{Sec: int64(binary.LittleEndian.Uint64(b[0:])), Nsec: binary.LittleEndian.Uint32(b[8:])}
}

// CompressProp is an inode's compression setting: CompressInherit, or a
// Compression plus one (FORMAT.md §6.2).
type CompressProp uint8

// CompressInherit takes the setting of the parent directory or filesystem.
const CompressInherit CompressProp = 0

// CompressPropOf returns the setting that selects c.
func CompressPropOf(c Compression) CompressProp { return CompressProp(c) + 1 }

// Compression returns the selected compression; ok is false for CompressInherit.
func (p CompressProp) Compression() (c Compression, ok bool) {
	if p == CompressInherit {
		return 0, false
	}
	return Compression(p - 1), true
}

// DedupeProp is an inode's dedupe setting (FORMAT.md §6.2).
type DedupeProp uint8

const (
	DedupeInherit DedupeProp = 0
	DedupeOn      DedupeProp = 1
	DedupeOff     DedupeProp = 2
)

// InodeItem is the value of (ino, INODE_ITEM, 0) in the fs tree (FORMAT.md
// §6.2 "INODE_ITEM").
//
//	off size field
//	  0    8 generation   transaction that created the inode
//	  8    8 size         file size in bytes (symlink: target length)
//	 16    8 nbytes       bytes of extents the file references
//	 24    8 rdev         device number of a char/block device
//	 32    8 flags        bit 0 InodeNoCompress: data did not shrink, skip compression
//	 40    4 nlink
//	 44    4 mode         Unix mode with type bits
//	 48    4 uid
//	 52    4 gid
//	 56    8 seq          directories: next DIR_INDEX sequence number
//	 64   12 atime        sec i64, nsec u32
//	 76   12 mtime
//	 88   12 ctime
//	100   12 btime        creation time
//	112    1 compression  CompressProp
//	113    1 dedupe       DedupeProp
//	114    1 data_tier    0 = inherit, N = tier N
//	115   13 reserved     zero
type InodeItem struct {
	Generation  uint64
	Size        uint64
	NBytes      uint64
	Rdev        uint64
	Flags       uint64
	Nlink       uint32
	Mode        uint32
	UID         uint32
	GID         uint32
	Seq         uint64
	Atime       Timespec
	Mtime       Timespec
	Ctime       Timespec
	Btime       Timespec
	Compression CompressProp
	Dedupe      DedupeProp
	DataTier    uint8
}

// Byte offsets of the InodeItem fields.
const (
	inoGeneration  = 0
	inoSize        = 8
	inoNBytes      = 16
	inoRdev        = 24
	inoFlags       = 32
	inoNlink       = 40
	inoMode        = 44
	inoUID         = 48
	inoGID         = 52
	inoSeq         = 56
	inoAtime       = 64
	inoMtime       = 76
	inoCtime       = 88
	inoBtime       = 100
	inoCompression = 112
	inoDedupe      = 113
	inoDataTier    = 114

	// InodeItemSize is the encoded size of an InodeItem.
	InodeItemSize = 128
)

// FileType is the type named by the inode's mode (0 if invalid).
func (i *InodeItem) FileType() FileType { return FileTypeOfMode(i.Mode) }

// MarshalInodeItem encodes i.
func MarshalInodeItem(i *InodeItem) []byte {
	b := make([]byte, InodeItemSize)
	le := binary.LittleEndian
	le.PutUint64(b[inoGeneration:], i.Generation)
	le.PutUint64(b[inoSize:], i.Size)
	le.PutUint64(b[inoNBytes:], i.NBytes)
	le.PutUint64(b[inoRdev:], i.Rdev)
	le.PutUint64(b[inoFlags:], i.Flags)
	le.PutUint32(b[inoNlink:], i.Nlink)
	le.PutUint32(b[inoMode:], i.Mode)
	le.PutUint32(b[inoUID:], i.UID)
	le.PutUint32(b[inoGID:], i.GID)
	le.PutUint64(b[inoSeq:], i.Seq)
	putTimespec(b[inoAtime:], i.Atime)
	putTimespec(b[inoMtime:], i.Mtime)
	putTimespec(b[inoCtime:], i.Ctime)
	putTimespec(b[inoBtime:], i.Btime)
	b[inoCompression] = byte(i.Compression)
	b[inoDedupe] = byte(i.Dedupe)
	b[inoDataTier] = i.DataTier
	return b
}

// UnmarshalInodeItem decodes and validates an inode item.
func UnmarshalInodeItem(b []byte) (*InodeItem, error) {
	i := new(InodeItem)
	if err := DecodeInodeItem(b, i); err != nil {
		return nil, err
	}
	return i, nil
}

// DecodeInodeItem is UnmarshalInodeItem into *i (no allocation: fsck
// decodes every inode). On error *i is undefined.
func DecodeInodeItem(b []byte, i *InodeItem) error {
	if len(b) != InodeItemSize {
		return sizeError("inode item", len(b), InodeItemSize)
	}
	le := binary.LittleEndian
	*i = InodeItem{
		Generation:  le.Uint64(b[inoGeneration:]),
		Size:        le.Uint64(b[inoSize:]),
		NBytes:      le.Uint64(b[inoNBytes:]),
		Rdev:        le.Uint64(b[inoRdev:]),
		Flags:       le.Uint64(b[inoFlags:]),
		Nlink:       le.Uint32(b[inoNlink:]),
		Mode:        le.Uint32(b[inoMode:]),
		UID:         le.Uint32(b[inoUID:]),
		GID:         le.Uint32(b[inoGID:]),
		Seq:         le.Uint64(b[inoSeq:]),
		Atime:       getTimespec(b[inoAtime:]),
		Mtime:       getTimespec(b[inoMtime:]),
		Ctime:       getTimespec(b[inoCtime:]),
		Btime:       getTimespec(b[inoBtime:]),
		Compression: CompressProp(b[inoCompression]),
		Dedupe:      DedupeProp(b[inoDedupe]),
		DataTier:    b[inoDataTier],
	}
	if i.Mode > modeMax || i.FileType() == 0 {
		return corruptf(nil, "inode item: mode 0%o", i.Mode)
	}
	if i.Size > MaxFileSize || (i.FileType() == FileTypeSymlink && i.Size > MaxSymlinkTarget) {
		return corruptf(nil, "inode item: %v of size %d", i.FileType(), i.Size)
	}
	for _, t := range [...]Timespec{i.Atime, i.Mtime, i.Ctime, i.Btime} {
		if t.Nsec >= 1e9 {
			return corruptf(nil, "inode item: timestamp nanoseconds %d", t.Nsec)
		}
	}
	if i.Compression > CompressPropOf(CompressS2) || i.Dedupe > DedupeOff {
		return corruptf(nil, "inode item: compression setting %d dedupe setting %d", i.Compression, i.Dedupe)
	}
	return nil
}

// DirEntry is one name of a directory (FORMAT.md §6.4 "DIR_ITEM and
// DIR_INDEX"). A DIR_ITEM value holds the entries whose names share a
// NameHash; a DIR_INDEX value holds exactly one.
//
//	off size field
//	  0    8 ino       child inode number
//	  8    1 type      FileType of the child
//	  9    2 name_len  1..255
//	 11    n name
type DirEntry struct {
	Ino  uint64
	Type FileType
	Name string
}

const dirEntryHeaderSize = 11

// MarshalDirEntries encodes entries back to back. Names must be valid
// (ValidName).
func MarshalDirEntries(es []DirEntry) []byte {
	return marshalNamed(es, dirEntryHeaderSize, func(e DirEntry) string { return e.Name }, func(b []byte, e DirEntry) {
		binary.LittleEndian.PutUint64(b, e.Ino)
		b[8] = byte(e.Type)
	})
}

// marshalNamed encodes records that end in a name back to back (DIR_ITEM
// entries, INODE_REF names): hdr bytes each, the last two name_len, then
// the name; head writes the fields before name_len.
func marshalNamed[T any](rs []T, hdr int, name func(T) string, head func([]byte, T)) []byte {
	n := 0
	for _, r := range rs {
		n += hdr + len(name(r))
	}
	b := make([]byte, n)
	o := 0
	for _, r := range rs {
		head(b[o:], r)
		nm := name(r)
		binary.LittleEndian.PutUint16(b[o+hdr-2:], uint16(len(nm)))
		o += hdr + copy(b[o+hdr:], nm)
	}
	return b
}

// UnmarshalDirEntries decodes a DIR_ITEM value: one or more entries with
// distinct names.
func UnmarshalDirEntries(b []byte) ([]DirEntry, error) {
	var es []DirEntry
	if err := EachDirEntry(b, func(e DirEntryView) {
		es = append(es, DirEntry{Ino: e.Ino, Type: e.Type, Name: string(e.Name)})
	}); err != nil {
		return nil, err
	}
	return es, nil
}

// DirEntryView is a DirEntry whose name aliases the encoded value.
type DirEntryView struct {
	Ino  uint64
	Type FileType
	Name []byte
}

// EachDirEntry checks b as UnmarshalDirEntries does and, if it is valid,
// calls fn with each entry in order, its name aliasing b: fsck reads every
// name without allocating. With fn nil it only checks.
func EachDirEntry(b []byte, fn func(DirEntryView)) error {
	var small [smallEntries]DirEntryView
	es, err := walkDirEntries(b, small[:0])
	if err != nil || fn == nil {
		return err
	}
	for _, e := range es {
		fn(e)
	}
	return nil
}

// smallEntries is how many names of one item are kept on the stack while
// it is validated (nearly every item has one).
const smallEntries = 4

// walkDirEntries validates b and appends its entries to es: one walk, so
// fsck reads each name once.
func walkDirEntries(b []byte, es []DirEntryView) ([]DirEntryView, error) {
	for n := 0; len(b) > 0; n++ {
		if len(b) < dirEntryHeaderSize {
			return nil, corruptf(ErrShort, "dir entry %d: %d header bytes", n, len(b))
		}
		e := DirEntryView{Ino: binary.LittleEndian.Uint64(b[0:]), Type: FileType(b[8])}
		nl := int(binary.LittleEndian.Uint16(b[9:]))
		if len(b) < dirEntryHeaderSize+nl {
			return nil, corruptf(ErrShort, "dir entry %d: name of %d bytes in %d", n, nl, len(b)-dirEntryHeaderSize)
		}
		e.Name = b[dirEntryHeaderSize : dirEntryHeaderSize+nl : dirEntryHeaderSize+nl]
		b = b[dirEntryHeaderSize+nl:]
		if e.Ino == 0 || !e.Type.Valid() || !validName(e.Name) {
			return nil, corruptf(nil, "dir entry %d: ino %d type %d name %q", n, e.Ino, e.Type, e.Name)
		}
		for _, o := range es {
			if bytes.Equal(o.Name, e.Name) {
				return nil, corruptf(nil, "dir entry %d: name %q twice", n, e.Name)
			}
		}
		es = append(es, e)
	}
	if len(es) == 0 {
		return nil, corruptf(ErrShort, "dir item: no entries")
	}
	return es, nil
}

// MarshalDirEntry encodes the single entry of a DIR_INDEX value.
func MarshalDirEntry(e DirEntry) []byte { return MarshalDirEntries([]DirEntry{e}) }

// UnmarshalDirEntry decodes a DIR_INDEX value: exactly one entry.
func UnmarshalDirEntry(b []byte) (DirEntry, error) {
	e, err := UnmarshalDirEntryView(b)
	if err != nil {
		return DirEntry{}, err
	}
	return DirEntry{Ino: e.Ino, Type: e.Type, Name: string(e.Name)}, nil
}

// UnmarshalDirEntryView is UnmarshalDirEntry with the name aliasing b.
func UnmarshalDirEntryView(b []byte) (DirEntryView, error) {
	var small [smallEntries]DirEntryView
	es, err := walkDirEntries(b, small[:0])
	if err != nil {
		return DirEntryView{}, err
	}
	if len(es) != 1 {
		return DirEntryView{}, corruptf(nil, "dir index: %d entries, want 1", len(es))
	}
	// One entry, validated: it is the whole of b.
	nl := int(binary.LittleEndian.Uint16(b[9:]))
	return DirEntryView{Ino: binary.LittleEndian.Uint64(b[0:]), Type: FileType(b[8]), Name: b[dirEntryHeaderSize : dirEntryHeaderSize+nl : dirEntryHeaderSize+nl]}, nil
}

// InodeRef is one name of an inode in one parent directory: the value of
// (ino, INODE_REF, parent ino) holds one InodeRef per name the inode has
// there (FORMAT.md §6.3 "INODE_REF").
//
//	off size field
//	  0    8 index     DIR_INDEX sequence number of the entry
//	  8    2 name_len  1..255
//	 10    n name
type InodeRef struct {
	Index uint64
	Name  string
}

const inodeRefHeaderSize = 10

// MarshalInodeRefs encodes refs back to back. Names must be valid (ValidName).
func MarshalInodeRefs(rs []InodeRef) []byte {
	return marshalNamed(rs, inodeRefHeaderSize, func(r InodeRef) string { return r.Name }, func(b []byte, r InodeRef) {
		binary.LittleEndian.PutUint64(b, r.Index)
	})
}

// UnmarshalInodeRefs decodes an INODE_REF value: one or more refs with
// distinct names and indexes.
func UnmarshalInodeRefs(b []byte) ([]InodeRef, error) {
	var rs []InodeRef
	if err := EachInodeRef(b, func(r InodeRefView) {
		rs = append(rs, InodeRef{Index: r.Index, Name: string(r.Name)})
	}); err != nil {
		return nil, err
	}
	return rs, nil
}

// InodeRefView is an InodeRef whose name aliases the encoded value.
type InodeRefView struct {
	Index uint64
	Name  []byte
}

// EachInodeRef checks b as UnmarshalInodeRefs does and, if it is valid,
// calls fn with each name in order, aliasing b (no allocation). With fn
// nil it only checks.
func EachInodeRef(b []byte, fn func(InodeRefView)) error {
	var small [smallEntries]InodeRefView
	rs, err := walkInodeRefs(b, small[:0])
	if err != nil || fn == nil {
		return err
	}
	for _, r := range rs {
		fn(r)
	}
	return nil
}

// walkInodeRefs validates b and appends its names to rs: one walk, so
// fsck reads each name once.
func walkInodeRefs(b []byte, rs []InodeRefView) ([]InodeRefView, error) {
	for n := 0; len(b) > 0; n++ {
		if len(b) < inodeRefHeaderSize {
			return nil, corruptf(ErrShort, "inode ref %d: %d header bytes", n, len(b))
		}
		r := InodeRefView{Index: binary.LittleEndian.Uint64(b[0:])}
		nl := int(binary.LittleEndian.Uint16(b[8:]))
		if len(b) < inodeRefHeaderSize+nl {
			return nil, corruptf(ErrShort, "inode ref %d: name of %d bytes in %d", n, nl, len(b)-inodeRefHeaderSize)
		}
		r.Name = b[inodeRefHeaderSize : inodeRefHeaderSize+nl : inodeRefHeaderSize+nl]
		b = b[inodeRefHeaderSize+nl:]
		if !validName(r.Name) {
			return nil, corruptf(nil, "inode ref %d: name %q", n, r.Name)
		}
		for _, o := range rs {
			if bytes.Equal(o.Name, r.Name) || o.Index == r.Index {
				return nil, corruptf(nil, "inode ref %d: name %q or index %d twice", n, r.Name, r.Index)
			}
		}
		rs = append(rs, r)
	}
	if len(rs) == 0 {
		return nil, corruptf(ErrShort, "inode ref: no names")
	}
	return rs, nil
}

// Xattr is one extended attribute. The value of (ino, XATTR_ITEM, name
// hash) holds the xattrs whose names share a NameHash (FORMAT.md §6.5
// "XATTR_ITEM").
//
//	off size field
//	  0    2 name_len   1..255
//	  2    4 value_len
//	  6    n name       full name with namespace ("user.foo")
//	6+n    v value
type Xattr struct {
	Name  string
	Value []byte // nil when empty
}

const xattrHeaderSize = 6

// MarshalXattrs encodes xattrs back to back. Names must be 1..255 bytes
// without NUL.
func MarshalXattrs(xs []Xattr) []byte {
	n := 0
	for _, x := range xs {
		n += xattrHeaderSize + len(x.Name) + len(x.Value)
	}
	b := make([]byte, n)
	o := 0
	for _, x := range xs {
		binary.LittleEndian.PutUint16(b[o:], uint16(len(x.Name)))
		binary.LittleEndian.PutUint32(b[o+2:], uint32(len(x.Value)))
		o += xattrHeaderSize
		o += copy(b[o:], x.Name)
		o += copy(b[o:], x.Value)
	}
	return b
}

// UnmarshalXattrs decodes an XATTR_ITEM value: one or more xattrs with
// distinct names.
func UnmarshalXattrs(b []byte) ([]Xattr, error) {
	var xs []Xattr
	for len(b) > 0 {
		if len(b) < xattrHeaderSize {
			return nil, corruptf(ErrShort, "xattr %d: %d header bytes", len(xs), len(b))
		}
		nl := uint64(binary.LittleEndian.Uint16(b[0:]))
		vl := uint64(binary.LittleEndian.Uint32(b[2:]))
		if uint64(len(b)-xattrHeaderSize) < nl+vl {
			return nil, corruptf(ErrShort, "xattr %d: name %d and value %d bytes in %d", len(xs), nl, vl, len(b)-xattrHeaderSize)
		}
		x := Xattr{Name: string(b[xattrHeaderSize : xattrHeaderSize+nl])}
		if vl > 0 {
			x.Value = append([]byte(nil), b[xattrHeaderSize+nl:xattrHeaderSize+nl+vl]...)
		}
		if !validXattrName(x.Name) {
			return nil, corruptf(nil, "xattr %d: name %q", len(xs), x.Name)
		}
		for _, o := range xs {
			if o.Name == x.Name {
				return nil, corruptf(nil, "xattr %d: name %q twice", len(xs), x.Name)
			}
		}
		xs = append(xs, x)
		b = b[xattrHeaderSize+nl+vl:]
	}
	if len(xs) == 0 {
		return nil, corruptf(ErrShort, "xattr item: no xattrs")
	}
	return xs, nil
}

// FileExtentType says where a file extent's bytes are (FORMAT.md §6.6).
type FileExtentType uint8

const (
	// FileExtentInline: the bytes follow the header inside the item.
	FileExtentInline FileExtentType = 0
	// FileExtentRegular: the bytes are in a data extent (or a hole).
	FileExtentRegular FileExtentType = 1
	// FileExtentPrealloc: space is allocated but reads as zeros.
	FileExtentPrealloc FileExtentType = 2
)

func (t FileExtentType) String() string {
	switch t {
	case FileExtentInline:
		return "inline"
	case FileExtentRegular:
		return "regular"
	case FileExtentPrealloc:
		return "prealloc"
	}
	return fmt.Sprintf("extent-type(%d)", uint8(t))
}

// FileExtentItem maps file bytes [key offset, key offset + Len()) of inode
// key objectid (FORMAT.md §6.6 "EXTENT_DATA").
//
//	off size field
//	  0    8 generation    transaction that wrote the data
//	  8    1 type          FileExtentType
//	  9    1 compression   Compression (inline: 0)
//	 10    6 reserved      zero
//	inline:
//	 16    n data          the file bytes, uncompressed
//	regular and prealloc:
//	 16    8 disk_logical  logical address of the data extent; 0 = hole
//	 24    8 disk_len      bytes of the data extent on disk
//	 32    8 offset        into the decompressed extent
//	 40    8 num_bytes     file bytes this item covers
//	 48    8 ram_bytes     decompressed size of the whole extent
type FileExtentItem struct {
	Generation  uint64
	Type        FileExtentType
	Compression Compression
	Inline      []byte // FileExtentInline only
	DiskLogical uint64
	DiskLen     uint64
	Offset      uint64
	NumBytes    uint64
	RAMBytes    uint64
}

// Byte offsets of the FileExtentItem fields.
const (
	fxGeneration  = 0
	fxType        = 8
	fxCompression = 9
	fxInline      = 16
	fxDiskLogical = 16
	fxDiskLen     = 24
	fxOffset      = 32
	fxNumBytes    = 40
	fxRAMBytes    = 48

	// FileExtentHeaderSize is the size of the fields every file extent
	// item has; inline data follows them.
	FileExtentHeaderSize = 16
	// FileExtentRegSize is the encoded size of a regular or prealloc item.
	FileExtentRegSize = 56
)

// Len is the number of file bytes the item covers.
func (f *FileExtentItem) Len() uint64 {
	if f.Type == FileExtentInline {
		return uint64(len(f.Inline))
	}
	return f.NumBytes
}

// IsHole reports an explicit hole: a regular extent without disk bytes.
func (f *FileExtentItem) IsHole() bool { return f.Type == FileExtentRegular && f.DiskLogical == 0 }

// MarshalFileExtentItem encodes f.
func MarshalFileExtentItem(f *FileExtentItem) []byte {
	n := FileExtentRegSize
	if f.Type == FileExtentInline {
		n = FileExtentHeaderSize + len(f.Inline)
	}
	b := make([]byte, n)
	le := binary.LittleEndian
	le.PutUint64(b[fxGeneration:], f.Generation)
	b[fxType] = byte(f.Type)
	b[fxCompression] = byte(f.Compression)
	if f.Type == FileExtentInline {
		copy(b[fxInline:], f.Inline)
		return b
	}
	le.PutUint64(b[fxDiskLogical:], f.DiskLogical)
	le.PutUint64(b[fxDiskLen:], f.DiskLen)
	le.PutUint64(b[fxOffset:], f.Offset)
	le.PutUint64(b[fxNumBytes:], f.NumBytes)
	le.PutUint64(b[fxRAMBytes:], f.RAMBytes)
	return b
}

// UnmarshalFileExtentItem decodes and validates a file extent item.
func UnmarshalFileExtentItem(b []byte) (*FileExtentItem, error) {
	f := new(FileExtentItem)
	if err := DecodeFileExtentItem(b, f); err != nil {
		return nil, err
	}
	if f.Inline != nil {
		f.Inline = append([]byte(nil), f.Inline...)
	}
	return f, nil
}

// DecodeFileExtentItem is UnmarshalFileExtentItem into *f, with f.Inline
// aliasing b instead of a copy (no allocation: fsck decodes every
// extent). On error *f is undefined.
func DecodeFileExtentItem(b []byte, f *FileExtentItem) error {
	if len(b) < FileExtentHeaderSize {
		return corruptf(ErrShort, "file extent: %d bytes", len(b))
	}
	le := binary.LittleEndian
	*f = FileExtentItem{
		Generation:  le.Uint64(b[fxGeneration:]),
		Type:        FileExtentType(b[fxType]),
		Compression: Compression(b[fxCompression]),
	}
	switch f.Type {
	case FileExtentInline:
		if f.Compression != CompressNone || len(b) == FileExtentHeaderSize || len(b)-FileExtentHeaderSize > MaxInlineData {
			return corruptf(nil, "file extent: inline with compression %d and %d bytes", f.Compression, len(b)-FileExtentHeaderSize)
		}
		f.Inline = b[fxInline:len(b):len(b)]
		return nil
	case FileExtentRegular, FileExtentPrealloc:
	default:
		return corruptf(nil, "file extent: type %d", b[fxType])
	}
	if len(b) != FileExtentRegSize {
		return sizeError("file extent", len(b), FileExtentRegSize)
	}
	f.DiskLogical = le.Uint64(b[fxDiskLogical:])
	f.DiskLen = le.Uint64(b[fxDiskLen:])
	f.Offset = le.Uint64(b[fxOffset:])
	f.NumBytes = le.Uint64(b[fxNumBytes:])
	f.RAMBytes = le.Uint64(b[fxRAMBytes:])
	switch {
	case f.Compression > CompressS2 || (f.Type == FileExtentPrealloc && f.Compression != CompressNone):
		return corruptf(nil, "file extent: %v with compression %d", f.Type, b[fxCompression])
	case f.NumBytes == 0 || f.Offset > f.RAMBytes || f.NumBytes > f.RAMBytes-f.Offset:
		return corruptf(nil, "file extent: [%d,+%d) of %d decompressed bytes", f.Offset, f.NumBytes, f.RAMBytes)
	case f.DiskLogical == 0 && (f.Type != FileExtentRegular || f.DiskLen != 0 || f.Compression != CompressNone):
		return corruptf(nil, "file extent: hole of type %v, disk length %d, compression %v", f.Type, f.DiskLen, f.Compression)
	case f.DiskLogical != 0 && (f.DiskLen == 0 || f.DiskLogical+f.DiskLen < f.DiskLogical):
		return corruptf(nil, "file extent: disk extent %d+%d", f.DiskLogical, f.DiskLen)
	case f.DiskLogical != 0 && (f.DiskLen > MaxExtentBytes || f.RAMBytes > MaxExtentBytes):
		return corruptf(nil, "file extent: extent of %d disk and %d ram bytes, at most %d", f.DiskLen, f.RAMBytes, MaxExtentBytes)
	case f.NumBytes > MaxFileSize:
		return corruptf(nil, "file extent: %d bytes", f.NumBytes)
	case f.DiskLogical != 0 && f.Compression == CompressNone && f.RAMBytes != f.DiskLen:
		return corruptf(nil, "file extent: uncompressed extent of %d disk bytes and %d ram bytes", f.DiskLen, f.RAMBytes)
	}
	return nil
}

// CheckFileExtentRange checks what a file extent item's key adds: the
// item covers [off, off+Len()) within the file offset space, so readers
// can add offsets without overflow (FORMAT.md §6.6).
func CheckFileExtentRange(off uint64, f *FileExtentItem) error {
	if off > MaxFileSize || f.Len() > MaxFileSize-off {
		return corruptf(nil, "file extent at %d of %d bytes passes the largest file size", off, f.Len())
	}
	return nil
}

// CheckFileExtentKey is what a reader requires of a file extent item at
// file offset off: CheckFileExtentRange, and an inline extent at offset
// 0 only (§6.6; fsck's INLINE_OFFSET): placed further, its bytes would
// read at the wrong offset with zeros before them.
func CheckFileExtentKey(off uint64, f *FileExtentItem) error {
	if f.Type == FileExtentInline && off != 0 {
		return corruptf(nil, "inline file extent at %d: inline extents live at offset 0 only", off)
	}
	return CheckFileExtentRange(off, f)
}

// ExtentDataRef counts the file extent items of one (tree, ino, offset)
// that point at a data extent: the value of (extent logical,
// EXTENT_DATA_REF, ExtentDataRefHash) in the extent tree (FORMAT.md §4.7).
//
//	off size field
//	  0    8 tree    TreeID holding the file extent items
//	  8    8 ino
//	 16    8 offset  file offset of the extent's byte 0 (key offset - item offset)
//	 24    4 count   number of such file extent items, >= 1
type ExtentDataRef struct {
	Tree   TreeID
	Ino    uint64
	Offset uint64
	Count  uint32
}

// ExtentDataRefSize is the encoded size of an ExtentDataRef.
const ExtentDataRefSize = 28

// Hash is the key offset of r's item (before collision probing).
func (r *ExtentDataRef) Hash() uint64 { return ExtentDataRefHash(uint64(r.Tree), r.Ino, r.Offset) }

// MarshalExtentDataRef encodes r.
func MarshalExtentDataRef(r *ExtentDataRef) []byte {
	b := make([]byte, ExtentDataRefSize)
	binary.LittleEndian.PutUint64(b[0:], uint64(r.Tree))
	binary.LittleEndian.PutUint64(b[8:], r.Ino)
	binary.LittleEndian.PutUint64(b[16:], r.Offset)
	binary.LittleEndian.PutUint32(b[24:], r.Count)
	return b
}

// UnmarshalExtentDataRef decodes and validates a data ref.
func UnmarshalExtentDataRef(b []byte) (*ExtentDataRef, error) {
	if len(b) != ExtentDataRefSize {
		return nil, sizeError("extent data ref", len(b), ExtentDataRefSize)
	}
	r := &ExtentDataRef{
		Tree:   TreeID(binary.LittleEndian.Uint64(b[0:])),
		Ino:    binary.LittleEndian.Uint64(b[8:]),
		Offset: binary.LittleEndian.Uint64(b[16:]),
		Count:  binary.LittleEndian.Uint32(b[24:]),
	}
	if r.Tree == 0 || r.Ino == 0 || r.Count == 0 {
		return nil, corruptf(nil, "extent data ref: tree %d ino %d count %d", r.Tree, r.Ino, r.Count)
	}
	return r, nil
}

// DedupeItem indexes one data extent by the hash of its contents: the
// value of (DedupeHashPrefix(hash), DEDUPE_ITEM, extent logical) in the
// dedupe tree (FORMAT.md §6.8 "DEDUPE_ITEM"). The index keeps the first
// DedupeHashLen bytes of the hash (160 bits): the first 8 in the key, the
// next 12 here, so an entry costs about 60 bytes on disk.
//
//	off size field
//	  0   12 hash_rest  hash bytes 8..19
//	 12    4 length     bytes of the block the hash covers (≤ 8 MiB)
//	 16    1 hash_algo  CsumType (sha256, blake3 or xxh3)
//	 17   20 strong     xxh3 entries only, optional: BLAKE3 bytes 0..19
//
// An xxh3 entry with the strong tail lets a writer share a block whose
// BLAKE3 matches without reading the extent back (§6.8).
type DedupeItem struct {
	Hash     [CsumSize]byte // DedupeHashLen bytes, the rest zero
	Length   uint64
	HashAlgo CsumType
	Strong   *[DedupeHashLen]byte `json:",omitempty"` // the strong tail, or nil
}

// DedupeItemSize is the encoded size of a DedupeItem (DedupeItemStrongSize
// with the strong tail); DedupeHashLen the bytes of hash an entry keeps.
const (
	DedupeItemSize       = 17
	DedupeItemStrongSize = DedupeItemSize + DedupeHashLen
	DedupeHashLen        = 20
	maxDedupeBlock       = 8 << 20
)

// StrongDedupeHash is the strong tail of an xxh3 entry for block p.
func StrongDedupeHash(p []byte) [DedupeHashLen]byte {
	h := Checksum(CsumBLAKE3, p)
	return [DedupeHashLen]byte(h[:DedupeHashLen])
}

// DedupeHash cuts a full hash to what the index keeps.
func DedupeHash(sum [CsumSize]byte) [CsumSize]byte {
	clear(sum[DedupeHashLen:])
	return sum
}

// DedupeHashPrefix is the key objectid of a dedupe item: the first 8 hash
// bytes as a little-endian u64.
func DedupeHashPrefix(hash [CsumSize]byte) uint64 { return binary.LittleEndian.Uint64(hash[:8]) }

// MarshalDedupeItem encodes d (its hash's first 8 bytes go in the key).
func MarshalDedupeItem(d *DedupeItem) []byte {
	n := DedupeItemSize
	if d.Strong != nil {
		n = DedupeItemStrongSize
	}
	b := make([]byte, n)
	copy(b[0:12], d.Hash[8:DedupeHashLen])
	binary.LittleEndian.PutUint32(b[12:], uint32(d.Length))
	b[16] = byte(d.HashAlgo)
	if d.Strong != nil {
		copy(b[DedupeItemSize:], d.Strong[:])
	}
	return b
}

// UnmarshalDedupeItem decodes and validates a dedupe item; prefix is its
// key's objectid.
func UnmarshalDedupeItem(prefix uint64, b []byte) (*DedupeItem, error) {
	if len(b) != DedupeItemSize && len(b) != DedupeItemStrongSize {
		return nil, sizeError("dedupe item", len(b), DedupeItemSize)
	}
	d := &DedupeItem{Length: uint64(binary.LittleEndian.Uint32(b[12:])), HashAlgo: CsumType(b[16])}
	if len(b) == DedupeItemStrongSize {
		if d.HashAlgo != CsumXXH3 {
			return nil, corruptf(nil, "dedupe item: a strong tail on a %v entry (xxh3 only)", d.HashAlgo)
		}
		strong := [DedupeHashLen]byte(b[DedupeItemSize:])
		d.Strong = &strong
	}
	binary.LittleEndian.PutUint64(d.Hash[:8], prefix)
	copy(d.Hash[8:DedupeHashLen], b[0:12])
	if !d.HashAlgo.ValidDedupeHash() || d.Length == 0 || d.Length > maxDedupeBlock {
		return nil, corruptf(nil, "dedupe item: hash %d length %d", b[16], d.Length)
	}
	// An xxh3 hash has 16 bytes: the entry's last 4 hash bytes are zero.
	if d.HashAlgo == CsumXXH3 && [4]byte(d.Hash[16:DedupeHashLen]) != [4]byte{} {
		return nil, corruptf(nil, "dedupe item: xxh3 hash with bytes past its 16")
	}
	return d, nil
}

// InodeNoCompress marks a file whose data did not compress: later writes
// skip compression (as btrfs does).
const InodeNoCompress uint64 = 1

// KnownInodeFlags are the flags this version defines.
const KnownInodeFlags = InodeNoCompress
