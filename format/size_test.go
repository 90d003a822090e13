package format

import (
	"reflect"
	"testing"
)

// TestSizes pins every size and limit of the on-disk format (FORMAT.md).
// A change here is a format change: bump the version.
func TestSizes(t *testing.T) {
	cases := []struct {
		name      string
		got, want int
	}{
		{"SuperblockSize", SuperblockSize, 4096},
		{"CsumSize", CsumSize, 32},
		{"LabelSize", LabelSize, 256},
		{"NumBackupRoots", NumBackupRoots, 4},
		{"SysChunkArrayMax", SysChunkArrayMax, 2048},
		{"NumTrees", NumTrees, 8},
		{"rootPtrSize", rootPtrSize, 24},
		{"RootSetSize", RootSetSize, 200},
		{"KeySize", KeySize, 17},
		{"NodeHeaderSize", NodeHeaderSize, 80},
		{"LeafItemSize", LeafItemSize, 25},
		{"KeyPtrSize", KeyPtrSize, 33},
		{"MaxLevel", MaxLevel, 8},
		{"chunkHeaderSize", chunkHeaderSize, 24},
		{"stripeSize", stripeSize, 32},
		{"DefaultStripeLen", DefaultStripeLen, 65536},
		{"MaxStripes", MaxStripes, 256},
		{"devItemFixed", devItemFixed, 66},
		{"MaxPathHint", MaxPathHint, 1024},
		{"BlockGroupItemSize", BlockGroupItemSize, 16},
		{"MetadataItemSize", MetadataItemSize, 24},
		{"ExtentItemSize", ExtentItemSize, 32},
		{"InodeItemSize", InodeItemSize, 128},
		{"timespecSize", timespecSize, 12},
		{"dirEntryHeaderSize", dirEntryHeaderSize, 11},
		{"inodeRefHeaderSize", inodeRefHeaderSize, 10},
		{"xattrHeaderSize", xattrHeaderSize, 6},
		{"MaxNameLen", MaxNameLen, 255},
		{"FileExtentHeaderSize", FileExtentHeaderSize, 16},
		{"FileExtentRegSize", FileExtentRegSize, 56},
		{"ExtentDataRefSize", ExtentDataRefSize, 28},
		{"DedupeItemSize", DedupeItemSize, 17},
		// Encoded sizes agree with the constants.
		{"len(MarshalBlockGroupItem)", len(MarshalBlockGroupItem(&BlockGroupItem{})), BlockGroupItemSize},
		{"len(MarshalMetadataItem)", len(MarshalMetadataItem(&MetadataItem{})), MetadataItemSize},
		{"len(MarshalExtentItem)", len(MarshalExtentItem(&ExtentItem{})), ExtentItemSize},
		{"len(MarshalDevItem)", len(MarshalDevItem(&DevItem{})), devItemFixed},
		{"len(MarshalChunkItem) 1 stripe", len(MarshalChunkItem(&ChunkItem{Stripes: make([]Stripe, 1)})), chunkHeaderSize + stripeSize},
		{"len(MarshalInodeItem)", len(MarshalInodeItem(&InodeItem{})), InodeItemSize},
		{"len(MarshalFileExtentItem) regular", len(MarshalFileExtentItem(&FileExtentItem{Type: FileExtentRegular})), FileExtentRegSize},
		{"len(MarshalExtentDataRef)", len(MarshalExtentDataRef(&ExtentDataRef{})), ExtentDataRefSize},
		{"len(MarshalDedupeItem)", len(MarshalDedupeItem(&DedupeItem{})), DedupeItemSize},
		{"len(MarshalDirEntry) name 1", len(MarshalDirEntry(DirEntry{Name: "x"})), 12},
		{"len(MarshalInodeRefs) name 1", len(MarshalInodeRefs([]InodeRef{{Name: "x"}})), 11},
		{"len(MarshalXattrs) name 1 value 1", len(MarshalXattrs([]Xattr{{Name: "x", Value: []byte{1}}})), 8},
		{"len(MarshalNode)", len(MarshalNode(&Node{}, 16384, CsumCRC32C)), 16384},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if want := [...]uint64{64 << 10, 64 << 20, 256 << 30}; SuperblockOffsets != want {
		t.Errorf("SuperblockOffsets = %v, want %v", SuperblockOffsets, want)
	}
	if SuperblockMagic != "_DDFS_SB" || len(SuperblockMagic) != 8 {
		t.Errorf("magic %q", SuperblockMagic)
	}
}

// TestSuperblockLayout checks that the ranges of FORMAT.md §3.1 tile the
// superblock exactly and agree with the encoder's offsets.
func TestSuperblockLayout(t *testing.T) {
	next := 0
	for _, f := range sbLayout {
		if f.off != next || f.size <= 0 {
			t.Errorf("%s at %d+%d: expected to start at %d (gap or overlap)", f.name, f.off, f.size, next)
		}
		next = f.off + f.size
	}
	if next != SuperblockSize {
		t.Errorf("layout ends at %d, want %d", next, SuperblockSize)
	}
	offsets := []struct {
		name      string
		got, want int
	}{
		{"csum", sbCsum, 0}, {"magic", sbMagic, 32}, {"version", sbVersion, 40}, {"csum_type", sbCsumType, 44},
		{"compat", sbCompat, 48}, {"ro_compat", sbRoCompat, 56}, {"incompat", sbIncompat, 64}, {"fsid", sbFSID, 72},
		{"dev_uuid", sbDevUUID, 88}, {"devid", sbDevID, 104}, {"bytenr", sbBytenr, 112}, {"generation", sbGeneration, 120},
		{"sector_size", sbSectorSize, 128}, {"node_size", sbNodeSize, 132}, {"stripe_len", sbStripeLen, 136},
		{"num_devices", sbNumDevices, 144}, {"total_bytes", sbTotalBytes, 152}, {"bytes_used", sbBytesUsed, 160},
		{"label", sbLabel, 256}, {"settings", sbSettings, 512}, {"alloc_policy", sbAllocPol, 512}, {"small_data_max", sbSmallData, 528}, {"roots", sbRoots, 768},
		{"backup_roots", sbBackups, 968}, {"sys_array_size", sbSysSize, 1768}, {"sys_array", sbSysArray, 1776},
	}
	for _, o := range offsets {
		if o.got != o.want {
			t.Errorf("offset of %s = %d, want %d", o.name, o.got, o.want)
		}
	}
	if sbSysArray+SysChunkArrayMax > SuperblockSize {
		t.Errorf("system chunk array [%d,+%d) does not fit", sbSysArray, SysChunkArrayMax)
	}
	if sbBackups+NumBackupRoots*RootSetSize != sbSysSize {
		t.Error("backup roots overlap sys_array_size")
	}
	if sbSettings+256 != sbRoots || sbLabel+LabelSize != sbSettings {
		t.Error("settings area is not [512, 768)")
	}
}

// TestEnumValues pins the on-disk values of every enum and flag.
func TestEnumValues(t *testing.T) {
	cases := []struct {
		name      string
		got, want uint64
	}{
		{"Version1", uint64(Version1), 1},
		{"MinSupportedVersion", uint64(MinSupportedVersion), 1},
		{"CurrentVersion", uint64(CurrentVersion), 1},
		{"RoCompatFreeSpaceTree", uint64(RoCompatFreeSpaceTree), 1},
		{"IncompatCompression", uint64(IncompatCompression), 1},
		{"IncompatDedupe", uint64(IncompatDedupe), 2},
		{"IncompatRaid56", uint64(IncompatRaid56), 4},
		{"CsumCRC32C", uint64(CsumCRC32C), 0},
		{"CsumXXHash64", uint64(CsumXXHash64), 1},
		{"CsumSHA256", uint64(CsumSHA256), 2},
		{"CsumBLAKE3", uint64(CsumBLAKE3), 3},
		{"ChunkTree", uint64(ChunkTree), 1},
		{"ExtentTree", uint64(ExtentTree), 2},
		{"FSTree", uint64(FSTree), 3},
		{"CsumTree", uint64(CsumTree), 4},
		{"DedupeTree", uint64(DedupeTree), 5},
		{"FreeSpaceTree", uint64(FreeSpaceTree), 6},
		{"InodeItemKey", uint64(InodeItemKey), 1},
		{"InodeRefKey", uint64(InodeRefKey), 12},
		{"XattrItemKey", uint64(XattrItemKey), 24},
		{"DirItemKey", uint64(DirItemKey), 84},
		{"DirIndexKey", uint64(DirIndexKey), 96},
		{"FileExtentKey", uint64(FileExtentKey), 108},
		{"CsumItemKey", uint64(CsumItemKey), 128},
		{"DedupeItemKey", uint64(DedupeItemKey), 140},
		{"ExtentItemKey", uint64(ExtentItemKey), 168},
		{"MetadataItemKey", uint64(MetadataItemKey), 169},
		{"ExtentDataRefKey", uint64(ExtentDataRefKey), 178},
		{"BlockGroupKey", uint64(BlockGroupKey), 192},
		{"FreeSpaceInfoKey", uint64(FreeSpaceInfoKey), 198},
		{"FreeSpaceExtKey", uint64(FreeSpaceExtKey), 199},
		{"DevItemKey", uint64(DevItemKey), 216},
		{"ChunkItemKey", uint64(ChunkItemKey), 228},
		{"PropItemKey", uint64(PropItemKey), 240},
		{"DevItemsObjectID", DevItemsObjectID, 1},
		{"ChunkObjectID", ChunkObjectID, 256},
		{"CsumObjectID", CsumObjectID, 0xFFFFFFFFFFFFFFF6},
		{"RootDirIno", RootDirIno, 256},
		{"FirstFreeIno", FirstFreeIno, 257},
		{"ChunkData", uint64(ChunkData), 1},
		{"ChunkMetadata", uint64(ChunkMetadata), 2},
		{"ChunkSystem", uint64(ChunkSystem), 4},
		{"ProfileSingle", uint64(ProfileSingle), 0},
		{"ProfileDup", uint64(ProfileDup), 1},
		{"ProfileRaid0", uint64(ProfileRaid0), 2},
		{"ProfileRaid1", uint64(ProfileRaid1), 3},
		{"ProfileRaid1C3", uint64(ProfileRaid1C3), 4},
		{"ProfileRaid10", uint64(ProfileRaid10), 5},
		{"ProfileRaid5", uint64(ProfileRaid5), 6},
		{"ProfileRaid6", uint64(ProfileRaid6), 7},
		{"AllocClassic", uint64(AllocClassic), 0},
		{"AllocSSDMetadata", uint64(AllocSSDMetadata), 1},
		{"AllocTiered", uint64(AllocTiered), 2},
		{"CompressNone", uint64(CompressNone), 0},
		{"CompressZstd", uint64(CompressZstd), 1},
		{"CompressS2", uint64(CompressS2), 2},
		{"ExtentFlagDeduped", uint64(ExtentFlagDeduped), 1},
		{"FileExtentInline", uint64(FileExtentInline), 0},
		{"FileExtentRegular", uint64(FileExtentRegular), 1},
		{"FileExtentPrealloc", uint64(FileExtentPrealloc), 2},
		{"CompressInherit", uint64(CompressInherit), 0},
		{"DedupeInherit", uint64(DedupeInherit), 0},
		{"DedupeOn", uint64(DedupeOn), 1},
		{"DedupeOff", uint64(DedupeOff), 2},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	// Profile geometry (FORMAT.md §4.4).
	geo := map[Profile]ProfileInfo{
		ProfileSingle:  {Name: "single", MinDevices: 1, Copies: 1, SubStripes: 1},
		ProfileDup:     {Name: "dup", MinDevices: 1, Copies: 2, SubStripes: 1},
		ProfileRaid0:   {Name: "raid0", MinDevices: 2, Copies: 1, SubStripes: 1, Striped: true},
		ProfileRaid1:   {Name: "raid1", MinDevices: 2, Copies: 2, SubStripes: 1},
		ProfileRaid1C3: {Name: "raid1c3", MinDevices: 3, Copies: 3, SubStripes: 1},
		ProfileRaid10:  {Name: "raid10", MinDevices: 4, Copies: 2, SubStripes: 2, Striped: true},
		ProfileRaid5:   {Name: "raid5", MinDevices: 2, Copies: 1, SubStripes: 1, Striped: true, Parity: 1},
		ProfileRaid6:   {Name: "raid6", MinDevices: 3, Copies: 1, SubStripes: 1, Striped: true, Parity: 2},
	}
	for p, want := range geo {
		got, ok := p.Info()
		if !ok || !reflect.DeepEqual(got, want) || !p.Supported() {
			t.Errorf("%v: %+v", p, got)
		}
		if q, err := ParseProfile(want.Name); err != nil || q != p {
			t.Errorf("ParseProfile(%q) = %v, %v", want.Name, q, err)
		}
	}
	if Profile(8).Supported() {
		t.Error("profile 8 is not defined")
	}
	if _, err := ParseProfile("raid7"); err == nil {
		t.Error("raid7 parsed")
	}
	for p := AllocClassic; p <= AllocTiered; p++ {
		if q, err := ParseAllocPolicy(p.String()); err != nil || q != p {
			t.Errorf("alloc policy %v", p)
		}
	}
}
