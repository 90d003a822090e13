package format

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// Superblock geometry (FORMAT.md §3 "Superblock").
const (
	SuperblockSize = 4096
	// SuperblockMagic identifies a ddfs superblock at offset 32.
	SuperblockMagic  = "_DDFS_SB"
	LabelSize        = 256
	NumBackupRoots   = 4
	SysChunkArrayMax = 2048
)

// SuperblockOffsets are the byte offsets of the primary and the copies;
// a copy exists when the device holds all of it.
var SuperblockOffsets = [...]uint64{64 << 10, 64 << 20, 256 << 30}

// RootPtr locates the root node of one tree.
type RootPtr struct {
	Logical    uint64 // logical address of the root node; 0 = tree empty/absent
	Generation uint64 // generation the root node was written in
	Level      uint8  // 0 = the root is a leaf
}

// RootSet is the roots of every tree as of one committed generation.
// Roots[i] is the root of tree id i+1.
type RootSet struct {
	Generation uint64
	Roots      [NumTrees]RootPtr
	// Nonce is the commit nonce of this generation, stored outside the
	// 200-byte root set (commit_nonce, backup_nonces; FORMAT.md §3.3): two
	// copies of a set that commit the same generation on their own differ
	// in it even when their allocators chose the same addresses.
	Nonce uint64
}

// Root returns the root pointer of tree t.
func (r *RootSet) Root(t TreeID) RootPtr { return r.Roots[t-1] }

// SetRoot sets the root pointer of tree t.
func (r *RootSet) SetRoot(t TreeID, p RootPtr) { r.Roots[t-1] = p }

const (
	rootPtrSize = 24
	// RootSetSize is the encoded size of a RootSet.
	RootSetSize = 8 + NumTrees*rootPtrSize
)

// SysChunk is one chunk of the bootstrap array: the chunks that hold the
// chunk tree itself, so it can be read before any tree is.
type SysChunk struct {
	Logical uint64
	Chunk   *ChunkItem
}

// Settings are filesystem-wide settings kept in the superblock's settings
// area (FORMAT.md §3.2). Later versions add fields; absent ones are zero.
type Settings struct {
	AllocPolicy AllocPolicy
	// Dedupe turns inband dedupe on for new writes (IncompatDedupe).
	Dedupe bool
	// DedupeBlockLog2 is log2 of the dedupe block size, 12..23 (0: 17, 128 KiB).
	DedupeBlockLog2 uint8
	// DedupeHash is the hash of dedupe blocks: CsumSHA256 (also for 0),
	// CsumBLAKE3 or CsumXXH3 (a writer then byte-compares every match).
	DedupeHash CsumType
	// Compression of new data extents (IncompatCompression) and its level.
	Compression      Compression
	CompressionLevel uint8
	// DedupeHits counts blocks stored as references to existing extents.
	DedupeHits uint64
	// DedupeCDC cuts dedupe blocks by content (gear hash, sizes
	// block/4..block*4) instead of at fixed offsets.
	DedupeCDC bool
	// DedupeVerify byte-compares a block with the extent it matched
	// before sharing it (for weak-hash paranoia; costs a read).
	DedupeVerify bool
	// SmallDataMax: data extents of at most this many bytes go to the
	// metadata tier while it has room (ssd-metadata and tiered policies,
	// like ZFS special_small_blocks); 0 turns it off.
	SmallDataMax uint64
	// Discard is the online discard policy (FORMAT.md §3.2).
	Discard DiscardPolicy
	// DiscardMetadataMin: with async discard, freed metadata is discarded
	// only where it lies in a free range at least this long (0: 1 MiB).
	DiscardMetadataMin uint64
	// DiscardMaxPerCommit bounds the bytes one commit discards with async
	// discard (0: no bound); the rest stays recorded for later.
	DiscardMaxPerCommit uint64
}

// DiscardPolicy says when freed space is discarded (trimmed).
type DiscardPolicy uint8

const (
	DiscardOff   DiscardPolicy = 0 // only trimtool discards
	DiscardSync  DiscardPolicy = 1 // every freed extent, inside its commit
	DiscardAsync DiscardPolicy = 2 // batched after the commit, pending ranges recorded
)

// DefaultDiscardMetadataMin is the metadata threshold when the setting is 0.
const DefaultDiscardMetadataMin = 1 << 20

func (p DiscardPolicy) String() string {
	switch p {
	case DiscardOff:
		return "off"
	case DiscardSync:
		return "sync"
	case DiscardAsync:
		return "async"
	}
	return fmt.Sprintf("discard(%d)", uint8(p))
}

// ParseDiscardPolicy maps off, sync or async to its value.
func ParseDiscardPolicy(name string) (DiscardPolicy, error) {
	for p := DiscardOff; p <= DiscardAsync; p++ {
		if p.String() == name {
			return p, nil
		}
	}
	return 0, fmt.Errorf("unknown discard policy %q (want off, sync or async)", name)
}

// MetadataMin is the async metadata discard threshold in bytes.
func (s Settings) MetadataMin() uint64 {
	if s.DiscardMetadataMin == 0 {
		return DefaultDiscardMetadataMin
	}
	return s.DiscardMetadataMin
}

// DedupeBlockSize is the dedupe block size in bytes.
func (s Settings) DedupeBlockSize() uint64 {
	if s.DedupeBlockLog2 == 0 {
		return 128 << 10
	}
	return 1 << s.DedupeBlockLog2
}

// AllocPolicy selects how chunks are placed on devices.
type AllocPolicy uint8

const (
	AllocClassic     AllocPolicy = 0
	AllocSSDMetadata AllocPolicy = 1
	AllocTiered      AllocPolicy = 2
)

func (p AllocPolicy) String() string {
	switch p {
	case AllocClassic:
		return "classic"
	case AllocSSDMetadata:
		return "ssd-metadata"
	case AllocTiered:
		return "tiered"
	}
	return fmt.Sprintf("policy(%d)", uint8(p))
}

// ParseAllocPolicy maps a policy name to its value.
func ParseAllocPolicy(name string) (AllocPolicy, error) {
	for p := AllocClassic; p <= AllocTiered; p++ {
		if p.String() == name {
			return p, nil
		}
	}
	return 0, fmt.Errorf("unknown allocation policy %q (want classic, ssd-metadata or tiered)", name)
}

// Superblock is the root of everything on one device (FORMAT.md §3).
type Superblock struct {
	Version  Version
	CsumType CsumType
	Compat   CompatFeatures
	RoCompat RoCompatFeatures
	Incompat IncompatFeatures
	FSID     [16]byte
	// NewFSID is the fsid being changed to while IncompatFSIDChange is set
	// (FORMAT.md §3.8); zero otherwise.
	NewFSID    [16]byte
	DevUUID    [16]byte
	DevID      uint64
	Bytenr     uint64 // the offset this copy lives at
	Generation uint64
	SectorSize uint32
	NodeSize   uint32
	StripeLen  uint32
	NumDevices uint64
	TotalBytes uint64 // sum of the sizes of all devices
	BytesUsed  uint64 // bytes allocated to extents, all types
	Label      string
	Settings   Settings
	// Counters are exact while RoCompat has RoCompatCounters (§3.9).
	Counters  Counters
	Roots     RootSet
	Backups   [NumBackupRoots]RootSet // older generations, best effort
	SysChunks []SysChunk
	// LogRoot is the newest block of the fsync log (§3.10), LogSeq its
	// sequence number; both zero when no log is pending.
	LogRoot uint64
	LogSeq  uint64
}

// Byte offsets of the superblock fields (FORMAT.md §3.1).
const (
	sbCsum       = 0
	sbMagic      = 32
	sbVersion    = 40
	sbCsumType   = 44
	sbCompat     = 48
	sbRoCompat   = 56
	sbIncompat   = 64
	sbFSID       = 72
	sbDevUUID    = 88
	sbDevID      = 104
	sbBytenr     = 112
	sbGeneration = 120
	sbSectorSize = 128
	sbNodeSize   = 132
	sbStripeLen  = 136
	sbNumDevices = 144
	sbTotalBytes = 152
	sbBytesUsed  = 160
	sbNewFSID    = 168
	sbNonce      = 184 // commit_nonce, then backup_nonces (4 x u64)
	sbBackNonces = sbNonce + 8
	sbLogRoot    = 224
	sbLogSeq     = 232
	sbLabel      = 256
	sbSettings   = 512
	sbCounters   = 3824
	sbAllocPol   = sbSettings + 0
	sbDedupe     = sbSettings + 1
	sbDedupeLog2 = sbSettings + 2
	sbDedupeHash = sbSettings + 3
	sbCompress   = sbSettings + 4
	sbCompLevel  = sbSettings + 5
	sbChunking   = sbSettings + 6
	sbVerify     = sbSettings + 7
	sbDedupeHits = sbSettings + 8
	sbSmallData  = sbSettings + 16
	sbDiscard    = sbSettings + 24
	sbDiscardMin = sbSettings + 32
	sbDiscardMax = sbSettings + 40
	sbRoots      = 768
	sbBackups    = sbRoots + RootSetSize
	sbSysSize    = sbBackups + NumBackupRoots*RootSetSize
	sbSysArray   = sbSysSize + 8
)

func putRootSet(b []byte, r *RootSet) {
	binary.LittleEndian.PutUint64(b[0:], r.Generation)
	for i, p := range r.Roots {
		o := 8 + i*rootPtrSize
		binary.LittleEndian.PutUint64(b[o:], p.Logical)
		binary.LittleEndian.PutUint64(b[o+8:], p.Generation)
		b[o+16] = p.Level
	}
}

func getRootSet(b []byte) RootSet {
	var r RootSet
	r.Generation = binary.LittleEndian.Uint64(b[0:])
	for i := range r.Roots {
		o := 8 + i*rootPtrSize
		r.Roots[i] = RootPtr{
			Logical:    binary.LittleEndian.Uint64(b[o:]),
			Generation: binary.LittleEndian.Uint64(b[o+8:]),
			Level:      b[o+16],
		}
	}
	return r
}

// MarshalSuperblock encodes sb into a SuperblockSize buffer with its
// checksum. It fails only if the label or bootstrap array do not fit.
func MarshalSuperblock(sb *Superblock) ([]byte, error) {
	if len(sb.Label) >= LabelSize {
		return nil, corruptf(nil, "label is %d bytes, at most %d", len(sb.Label), LabelSize-1)
	}
	var sys []byte
	for _, sc := range sb.SysChunks {
		var k [KeySize]byte
		PutKey(k[:], Key{ChunkObjectID, ChunkItemKey, sc.Logical})
		sys = append(sys, k[:]...)
		sys = append(sys, MarshalChunkItem(sc.Chunk)...)
	}
	if len(sys) > SysChunkArrayMax {
		return nil, corruptf(nil, "system chunk array is %d bytes, at most %d", len(sys), SysChunkArrayMax)
	}
	b := make([]byte, SuperblockSize)
	le := binary.LittleEndian
	copy(b[sbMagic:], SuperblockMagic)
	le.PutUint32(b[sbVersion:], uint32(sb.Version))
	le.PutUint16(b[sbCsumType:], uint16(sb.CsumType))
	le.PutUint64(b[sbCompat:], uint64(sb.Compat))
	le.PutUint64(b[sbRoCompat:], uint64(sb.RoCompat))
	le.PutUint64(b[sbIncompat:], uint64(sb.Incompat))
	copy(b[sbFSID:], sb.FSID[:])
	copy(b[sbDevUUID:], sb.DevUUID[:])
	le.PutUint64(b[sbDevID:], sb.DevID)
	le.PutUint64(b[sbBytenr:], sb.Bytenr)
	le.PutUint64(b[sbGeneration:], sb.Generation)
	le.PutUint32(b[sbSectorSize:], sb.SectorSize)
	le.PutUint32(b[sbNodeSize:], sb.NodeSize)
	le.PutUint32(b[sbStripeLen:], sb.StripeLen)
	le.PutUint64(b[sbNumDevices:], sb.NumDevices)
	le.PutUint64(b[sbTotalBytes:], sb.TotalBytes)
	le.PutUint64(b[sbBytesUsed:], sb.BytesUsed)
	copy(b[sbNewFSID:], sb.NewFSID[:])
	le.PutUint64(b[sbNonce:], sb.Roots.Nonce)
	for i := range sb.Backups {
		le.PutUint64(b[sbBackNonces+8*i:], sb.Backups[i].Nonce)
	}
	copy(b[sbLabel:sbLabel+LabelSize], sb.Label)
	b[sbAllocPol] = byte(sb.Settings.AllocPolicy)
	if sb.Settings.Dedupe {
		b[sbDedupe] = 1
	}
	b[sbDedupeLog2] = sb.Settings.DedupeBlockLog2
	b[sbDedupeHash] = byte(sb.Settings.DedupeHash)
	b[sbCompress] = byte(sb.Settings.Compression)
	b[sbCompLevel] = sb.Settings.CompressionLevel
	if sb.Settings.DedupeCDC {
		b[sbChunking] = 1
	}
	if sb.Settings.DedupeVerify {
		b[sbVerify] = 1
	}
	le.PutUint64(b[sbDedupeHits:], sb.Settings.DedupeHits)
	le.PutUint64(b[sbSmallData:], sb.Settings.SmallDataMax)
	b[sbDiscard] = byte(sb.Settings.Discard)
	le.PutUint64(b[sbDiscardMin:], sb.Settings.DiscardMetadataMin)
	le.PutUint64(b[sbDiscardMax:], sb.Settings.DiscardMaxPerCommit)
	putCounters(b[sbCounters:], &sb.Counters)
	putRootSet(b[sbRoots:], &sb.Roots)
	for i := range sb.Backups {
		putRootSet(b[sbBackups+i*RootSetSize:], &sb.Backups[i])
	}
	le.PutUint64(b[sbLogRoot:], sb.LogRoot)
	le.PutUint64(b[sbLogSeq:], sb.LogSeq)
	le.PutUint32(b[sbSysSize:], uint32(len(sys)))
	copy(b[sbSysArray:], sys)
	sum := Checksum(sb.CsumType, b[CsumSize:])
	copy(b[sbCsum:], sum[:])
	return b, nil
}

// UnmarshalSuperblock decodes and validates a superblock, in the order
// magic, version and incompat features, checksum, field ranges.
func UnmarshalSuperblock(b []byte) (*Superblock, error) {
	if len(b) < SuperblockSize {
		return nil, corruptf(ErrShort, "superblock: %d bytes", len(b))
	}
	b = b[:SuperblockSize]
	le := binary.LittleEndian
	if string(b[sbMagic:sbMagic+8]) != SuperblockMagic {
		return nil, corruptf(ErrBadMagic, "superblock")
	}
	sb := &Superblock{
		Version:  Version(le.Uint32(b[sbVersion:])),
		CsumType: CsumType(le.Uint16(b[sbCsumType:])),
		Compat:   CompatFeatures(le.Uint64(b[sbCompat:])),
		RoCompat: RoCompatFeatures(le.Uint64(b[sbRoCompat:])),
		Incompat: IncompatFeatures(le.Uint64(b[sbIncompat:])),
	}
	if sb.Version < MinSupportedVersion || sb.Version > CurrentVersion {
		return nil, corruptf(ErrUnsupported, "superblock: format version %d (this ddfs reads %d..%d)", sb.Version, MinSupportedVersion, CurrentVersion)
	}
	if err := CheckFeatures(sb.Compat, sb.RoCompat, sb.Incompat, false); err != nil {
		return nil, &CorruptError{Sentinel: err, Msg: "superblock"}
	}
	if !sb.CsumType.Valid() {
		return nil, corruptf(ErrUnsupported, "superblock: checksum type %d", sb.CsumType)
	}
	if sum := Checksum(sb.CsumType, b[CsumSize:]); !bytes.Equal(sum[:], b[sbCsum:sbCsum+CsumSize]) {
		return nil, corruptf(ErrChecksum, "superblock")
	}
	copy(sb.FSID[:], b[sbFSID:])
	copy(sb.DevUUID[:], b[sbDevUUID:])
	sb.DevID = le.Uint64(b[sbDevID:])
	sb.Bytenr = le.Uint64(b[sbBytenr:])
	sb.Generation = le.Uint64(b[sbGeneration:])
	sb.LogRoot = le.Uint64(b[sbLogRoot:])
	sb.LogSeq = le.Uint64(b[sbLogSeq:])
	sb.SectorSize = le.Uint32(b[sbSectorSize:])
	sb.NodeSize = le.Uint32(b[sbNodeSize:])
	sb.StripeLen = le.Uint32(b[sbStripeLen:])
	sb.NumDevices = le.Uint64(b[sbNumDevices:])
	sb.TotalBytes = le.Uint64(b[sbTotalBytes:])
	sb.BytesUsed = le.Uint64(b[sbBytesUsed:])
	copy(sb.NewFSID[:], b[sbNewFSID:])
	label := b[sbLabel : sbLabel+LabelSize]
	i := bytes.IndexByte(label, 0)
	if i < 0 {
		return nil, corruptf(nil, "superblock: label not NUL-terminated")
	}
	label = label[:i]
	sb.Label = string(label)
	sb.Settings.AllocPolicy = AllocPolicy(b[sbAllocPol])
	sb.Settings.Dedupe = b[sbDedupe] != 0
	sb.Settings.DedupeBlockLog2 = b[sbDedupeLog2]
	sb.Settings.DedupeHash = CsumType(b[sbDedupeHash])
	sb.Settings.Compression = Compression(b[sbCompress])
	sb.Settings.CompressionLevel = b[sbCompLevel]
	sb.Settings.DedupeHits = le.Uint64(b[sbDedupeHits:])
	sb.Settings.SmallDataMax = le.Uint64(b[sbSmallData:])
	sb.Settings.DedupeCDC = b[sbChunking] == 1
	sb.Settings.DedupeVerify = b[sbVerify] == 1
	sb.Settings.Discard = DiscardPolicy(b[sbDiscard])
	sb.Settings.DiscardMetadataMin = le.Uint64(b[sbDiscardMin:])
	sb.Settings.DiscardMaxPerCommit = le.Uint64(b[sbDiscardMax:])
	if sb.Settings.AllocPolicy > AllocTiered {
		return nil, corruptf(nil, "superblock: allocation policy %d", b[sbAllocPol])
	}
	if sb.Settings.Discard > DiscardAsync {
		return nil, corruptf(nil, "superblock: discard policy %d", b[sbDiscard])
	}
	if h := sb.Settings.DedupeHash; h != 0 && !h.ValidDedupeHash() {
		return nil, corruptf(nil, "superblock: dedupe hash %d", b[sbDedupeHash]) // §3.2: 0, 2, 3 or 4
	}
	if b[sbChunking] > 1 || b[sbVerify] > 1 {
		return nil, corruptf(nil, "superblock: dedupe chunking %d", b[sbChunking])
	}
	if s := sb.Settings; b[sbDedupe] > 1 || (s.DedupeBlockLog2 != 0 && (s.DedupeBlockLog2 < 12 || s.DedupeBlockLog2 > 23)) || s.Compression > CompressS2 || s.CompressionLevel > 19 {
		return nil, corruptf(nil, "superblock: settings dedupe %d/%d compression %d:%d", b[sbDedupe], s.DedupeBlockLog2, s.Compression, s.CompressionLevel)
	}
	sb.Counters = getCounters(b[sbCounters:])
	sb.Roots = getRootSet(b[sbRoots:])
	sb.Roots.Nonce = le.Uint64(b[sbNonce:])
	for i := range sb.Backups {
		sb.Backups[i] = getRootSet(b[sbBackups+i*RootSetSize:])
		sb.Backups[i].Nonce = le.Uint64(b[sbBackNonces+8*i:])
	}
	if err := sb.validateRanges(); err != nil {
		return nil, err
	}
	sysSize := le.Uint32(b[sbSysSize:])
	if sysSize > SysChunkArrayMax {
		return nil, corruptf(nil, "superblock: system chunk array of %d bytes, at most %d", sysSize, SysChunkArrayMax)
	}
	sys := b[sbSysArray : sbSysArray+int(sysSize)]
	for len(sys) > 0 {
		if len(sys) < KeySize {
			return nil, corruptf(ErrShort, "superblock: system chunk array")
		}
		k := GetKey(sys)
		if k.ObjectID != ChunkObjectID || k.Type != ChunkItemKey {
			return nil, corruptf(nil, "superblock: system chunk array key %v", k)
		}
		c, n, err := UnmarshalChunkItem(sys[KeySize:])
		if err == nil {
			err = CheckChunkAgainst(c, sb)
		}
		if err != nil {
			return nil, err
		}
		if c.Type != ChunkSystem {
			return nil, corruptf(nil, "superblock: %v chunk in system chunk array", c.Type)
		}
		sb.SysChunks = append(sb.SysChunks, SysChunk{Logical: k.Offset, Chunk: c})
		sys = sys[KeySize+n:]
	}
	return sb, nil
}

func isPow2(v uint32) bool { return v != 0 && v&(v-1) == 0 }

func (sb *Superblock) validateRanges() error {
	switch {
	case !isPow2(sb.SectorSize) || sb.SectorSize < 512 || sb.SectorSize > 64<<10:
		return corruptf(nil, "superblock: sector size %d", sb.SectorSize)
	case !isPow2(sb.NodeSize) || sb.NodeSize < 4096 || sb.NodeSize > 64<<10 || sb.NodeSize < sb.SectorSize:
		return corruptf(nil, "superblock: node size %d", sb.NodeSize)
	case sb.StripeLen != DefaultStripeLen:
		return corruptf(nil, "superblock: stripe length %d", sb.StripeLen)
	case sb.DevID == 0 || sb.NumDevices == 0 || sb.NumDevices > 1<<16:
		return corruptf(nil, "superblock: devid %d of %d devices", sb.DevID, sb.NumDevices)
	case (sb.NewFSID != [16]byte{}) != (sb.Incompat&IncompatFSIDChange != 0):
		return corruptf(nil, "superblock: new_fsid %x with incompat 0x%x (§3.8: non-zero exactly while a fsid change is in progress)", sb.NewFSID, uint64(sb.Incompat))
	case (sb.LogRoot != 0) != (sb.Incompat&IncompatFsyncLog != 0) || sb.LogRoot == 0 && sb.LogSeq != 0:
		return corruptf(nil, "superblock: log_root %d, log_seq %d with incompat 0x%x (§3.10: a log root exactly while IncompatFsyncLog is set)", sb.LogRoot, sb.LogSeq, uint64(sb.Incompat))
	case sb.LogSeq >= MaxLogBlocks:
		return corruptf(nil, "superblock: log_seq %d, at most %d", sb.LogSeq, MaxLogBlocks-1)
	case sb.NewFSID != [16]byte{} && sb.NewFSID == sb.FSID:
		return corruptf(nil, "superblock: new_fsid equals fsid")
	case sb.BytesUsed > sb.TotalBytes:
		return corruptf(nil, "superblock: %d bytes used of %d", sb.BytesUsed, sb.TotalBytes)
	case sb.Roots.Generation > sb.Generation:
		// Less only after fsck restored a backup root set (§3.3).
		return corruptf(nil, "superblock: root set of generation %d in a superblock of generation %d", sb.Roots.Generation, sb.Generation)
	}
	if r := sb.Roots.Root(SnapshotTree); r.Logical != 0 && sb.Incompat&IncompatSnapshots == 0 {
		return corruptf(nil, "superblock: a snapshot tree root without IncompatSnapshots (§3.3)")
	}
	for _, t := range []TreeID{ChunkTree, ExtentTree, FSTree} {
		if r := sb.Roots.Root(t); r.Logical == 0 || r.Level >= MaxLevel {
			return corruptf(nil, "superblock: %v tree root %d level %d", t, r.Logical, r.Level)
		}
	}
	return nil
}
