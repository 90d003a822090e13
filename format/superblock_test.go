package format

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// richSuperblock fills every field, several system chunks and all backups.
func richSuperblock(c CsumType) *Superblock {
	sb := exampleSuperblock()
	sb.CsumType = c
	sb.Compat = 0
	sb.DevID = 3
	sb.NumDevices = 4
	sb.Bytenr = SuperblockOffsets[1]
	sb.Label = strings.Repeat("L", LabelSize-1)
	sb.Settings.AllocPolicy = AllocTiered
	sb.Settings.Discard = DiscardAsync
	sb.Settings.DiscardMetadataMin = 4 << 20
	sb.Settings.DiscardMaxPerCommit = 1 << 30
	sb.Roots.SetRoot(DiscardTree, RootPtr{Logical: 11 << 20, Generation: 6})
	sb.Settings.SmallDataMax = 64 << 10
	sb.Roots.SetRoot(DedupeTree, RootPtr{Logical: 9 << 20, Generation: 4, Level: 2})
	sb.Roots.SetRoot(FreeSpaceTree, RootPtr{Logical: 10 << 20, Generation: 7, Level: 1})
	for i := range sb.Backups {
		sb.Backups[i] = sb.Roots
		sb.Backups[i].Generation = uint64(6 - i)
		sb.Backups[i].SetRoot(FSTree, RootPtr{Logical: uint64(20+i) << 20, Generation: uint64(6 - i), Level: uint8(i)})
	}
	sb.SysChunks = append(sb.SysChunks,
		SysChunk{Logical: 64 << 20, Chunk: &ChunkItem{Length: 32 << 20, Type: ChunkSystem, Profile: ProfileRaid1, StripeLen: DefaultStripeLen, SubStripes: 1,
			Stripes: []Stripe{{DevID: 1, Offset: 2 << 20}, {DevID: 3, Offset: 5 << 20, DevUUID: [16]byte{3}}}}},
		SysChunk{Logical: 96 << 20, Chunk: &ChunkItem{Length: 4 * DefaultStripeLen * 8, Type: ChunkSystem, Profile: ProfileRaid10, StripeLen: DefaultStripeLen, SubStripes: 2,
			Stripes: []Stripe{{DevID: 1, Offset: 40 << 20}, {DevID: 2, Offset: 40 << 20}, {DevID: 3, Offset: 40 << 20}, {DevID: 4, Offset: 40 << 20}}}},
	)
	return sb
}

func TestSuperblockRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		sb   *Superblock
	}{
		{"example", exampleSuperblock()},
		{"crc32c", richSuperblock(CsumCRC32C)},
		{"xxhash64", richSuperblock(CsumXXHash64)},
		{"sha256", richSuperblock(CsumSHA256)},
		{"blake3", richSuperblock(CsumBLAKE3)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := MarshalSuperblock(tc.sb)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) != SuperblockSize {
				t.Fatalf("encoded %d bytes, want %d", len(b), SuperblockSize)
			}
			got, err := UnmarshalSuperblock(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.sb) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", got, tc.sb)
			}
			// A longer buffer (a whole sector read) decodes the same.
			got, err = UnmarshalSuperblock(append(b, make([]byte, 512)...))
			if err != nil || !reflect.DeepEqual(got, tc.sb) {
				t.Fatalf("with trailing bytes: %v", err)
			}
		})
	}
}

func TestSuperblockFieldPositions(t *testing.T) {
	sb := exampleSuperblock()
	b, err := MarshalSuperblock(sb)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	checks := []struct {
		name      string
		got, want uint64
	}{
		{"version@40", uint64(le.Uint32(b[40:])), uint64(sb.Version)},
		{"devid@104", le.Uint64(b[104:]), sb.DevID},
		{"bytenr@112", le.Uint64(b[112:]), sb.Bytenr},
		{"generation@120", le.Uint64(b[120:]), sb.Generation},
		{"nodesize@132", uint64(le.Uint32(b[132:])), uint64(sb.NodeSize)},
		{"roots.generation@768", le.Uint64(b[768:]), sb.Roots.Generation},
		{"chunk root@776", le.Uint64(b[776:]), sb.Roots.Root(ChunkTree).Logical},
		{"fs root gen@776+48+8", le.Uint64(b[776+2*24+8:]), sb.Roots.Root(FSTree).Generation},
		{"backup0.generation@968", le.Uint64(b[968:]), sb.Backups[0].Generation},
		{"sys_array_size@1768", uint64(le.Uint32(b[1768:])), KeySize + chunkHeaderSize + stripeSize},
		{"sys key objectid@1776", le.Uint64(b[1776:]), ChunkObjectID},
		{"sys key type@1784", uint64(b[1784]), uint64(ChunkItemKey)},
		{"sys key offset@1785", le.Uint64(b[1785:]), sb.SysChunks[0].Logical},
		{"sys chunk length@1793", le.Uint64(b[1793:]), sb.SysChunks[0].Chunk.Length},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if string(b[32:40]) != SuperblockMagic || string(b[256:263]) != "example" || b[263] != 0 {
		t.Errorf("magic or label not where FORMAT.md §3.1 says")
	}
}

func TestSuperblockMarshalLimits(t *testing.T) {
	sb := exampleSuperblock()
	sb.Label = strings.Repeat("x", LabelSize)
	if _, err := MarshalSuperblock(sb); err == nil {
		t.Error("256-byte label accepted; the label must leave room for its NUL")
	}
	sb = exampleSuperblock()
	one := sb.SysChunks[0]
	for sb.SysChunks = nil; len(sb.SysChunks)*(KeySize+chunkHeaderSize+stripeSize) <= SysChunkArrayMax; {
		sb.SysChunks = append(sb.SysChunks, one)
	}
	if _, err := MarshalSuperblock(sb); err == nil {
		t.Errorf("system chunk array of %d chunks accepted", len(sb.SysChunks))
	}
}

// TestSuperblockByteFlips flips every byte of a marshalled superblock: each
// flip must be caught, and by the check FORMAT.md §3 says comes first.
func TestSuperblockByteFlips(t *testing.T) {
	good, err := MarshalSuperblock(exampleSuperblock())
	if err != nil {
		t.Fatal(err)
	}
	inRange := func(i, off, size int) bool { return i >= off && i < off+size }
	for i := range SuperblockSize {
		for _, mask := range []byte{0x01, 0x80, 0xff} {
			b := bytes.Clone(good)
			b[i] ^= mask
			_, err := UnmarshalSuperblock(b)
			if err == nil {
				t.Fatalf("byte %d ^ %#x: no error", i, mask)
			}
			var want []error
			switch {
			case inRange(i, sbMagic, 8):
				want = []error{ErrBadMagic}
			case inRange(i, sbVersion, 4):
				want = []error{ErrUnsupported}
			case inRange(i, sbIncompat, 8): // known feature bits decode; the checksum catches them
				want = []error{ErrUnsupported, ErrChecksum}
			case inRange(i, sbCsumType, 2): // may still name a valid algorithm
				want = []error{ErrUnsupported, ErrChecksum}
			default:
				want = []error{ErrChecksum}
			}
			matched := false
			for _, w := range want {
				matched = matched || errors.Is(err, w)
			}
			if !matched {
				t.Fatalf("byte %d ^ %#x: %v, want one of %v", i, mask, err, want)
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("byte %d ^ %#x: %v does not match ErrCorrupt", i, mask, err)
			}
		}
	}
}

func TestSuperblockUnsupported(t *testing.T) {
	cases := []struct {
		name   string
		change func(sb *Superblock)
	}{
		{"unknown incompat bit", func(sb *Superblock) { sb.Incompat |= 1 << 40 }},
		{"highest incompat bit", func(sb *Superblock) { sb.Incompat |= 1 << 63 }},
		{"newer version", func(sb *Superblock) { sb.Version = CurrentVersion + 1 }},
		{"version 0", func(sb *Superblock) { sb.Version = 0 }},
		{"unknown checksum type", func(sb *Superblock) { sb.CsumType = 4 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sb := exampleSuperblock()
			tc.change(sb)
			b, err := MarshalSuperblock(sb) // re-checksummed
			if err != nil {
				t.Fatal(err)
			}
			_, err = UnmarshalSuperblock(b)
			if !errors.Is(err, ErrUnsupported) {
				t.Fatalf("got %v, want ErrUnsupported", err)
			}
			t.Logf("message: %v", err)
		})
	}
	// Unknown compat and ro_compat bits do not stop a reader.
	sb := exampleSuperblock()
	sb.Compat, sb.RoCompat = 1<<50, 1<<51
	b, err := MarshalSuperblock(sb)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := UnmarshalSuperblock(b); err != nil {
		t.Fatalf("unknown compat/ro_compat bits: %v", err)
	}
}

func TestCheckFeatures(t *testing.T) {
	cases := []struct {
		name    string
		c       CompatFeatures
		ro      RoCompatFeatures
		in      IncompatFeatures
		write   bool
		wantErr bool
	}{
		{"none read", 0, 0, 0, false, false},
		{"none write", 0, 0, 0, true, false},
		{"unknown compat write", 1 << 9, 0, 0, true, false},
		{"unknown ro_compat read", 0, 1 << 9, 0, false, false},
		{"unknown ro_compat write", 0, 1 << 9, 0, true, true},
		{"unknown incompat read", 0, 0, 1 << 9, false, true},
		{"unknown incompat write", 0, 0, 1 << 9, true, true},
	}
	for _, tc := range cases {
		err := CheckFeatures(tc.c, tc.ro, tc.in, tc.write)
		if tc.wantErr != (err != nil) || (err != nil && !errors.Is(err, ErrUnsupported)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func TestSuperblockFieldRanges(t *testing.T) {
	cases := []struct {
		name   string
		change func(sb *Superblock)
	}{
		{"sector size 0", func(sb *Superblock) { sb.SectorSize = 0 }},
		{"sector size 256", func(sb *Superblock) { sb.SectorSize = 256 }},
		{"sector size not power of two", func(sb *Superblock) { sb.SectorSize = 3000 }},
		{"sector size 128 KiB", func(sb *Superblock) { sb.SectorSize = 128 << 10 }},
		{"node size 2 KiB", func(sb *Superblock) { sb.NodeSize = 2048 }},
		{"node size 128 KiB", func(sb *Superblock) { sb.NodeSize = 128 << 10 }},
		{"node size below sector size", func(sb *Superblock) { sb.SectorSize, sb.NodeSize = 16384, 8192 }},
		{"stripe len 128 KiB", func(sb *Superblock) { sb.StripeLen = 128 << 10 }},
		{"devid 0", func(sb *Superblock) { sb.DevID = 0 }},
		{"no devices", func(sb *Superblock) { sb.NumDevices = 0 }},
		{"too many devices", func(sb *Superblock) { sb.NumDevices = 1<<16 + 1 }},
		{"no chunk root", func(sb *Superblock) { sb.Roots.SetRoot(ChunkTree, RootPtr{}) }},
		{"no extent root", func(sb *Superblock) { sb.Roots.SetRoot(ExtentTree, RootPtr{}) }},
		{"no fs root", func(sb *Superblock) { sb.Roots.SetRoot(FSTree, RootPtr{}) }},
		{"fs root too deep", func(sb *Superblock) { sb.Roots.SetRoot(FSTree, RootPtr{Logical: 1 << 20, Level: MaxLevel}) }},
		{"data chunk in sys array", func(sb *Superblock) { sb.SysChunks[0].Chunk.Type = ChunkData }},
		{"bad chunk in sys array", func(sb *Superblock) { sb.SysChunks[0].Chunk.SubStripes = 2 }},
		{"new_fsid without its flag", func(sb *Superblock) { sb.NewFSID = [16]byte{9} }},
		{"fsid change flag without new_fsid", func(sb *Superblock) { sb.Incompat |= IncompatFSIDChange }},
		{"new_fsid equal to fsid", func(sb *Superblock) { sb.NewFSID, sb.Incompat = sb.FSID, sb.Incompat|IncompatFSIDChange }},
		{"unknown allocation policy", func(sb *Superblock) { sb.Settings.AllocPolicy = AllocTiered + 1 }},
		{"more bytes used than the devices hold", func(sb *Superblock) { sb.BytesUsed = sb.TotalBytes + 1 }},
		{"root set newer than the superblock", func(sb *Superblock) { sb.Roots.Generation = sb.Generation + 1 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sb := exampleSuperblock()
			tc.change(sb)
			b, err := MarshalSuperblock(sb)
			if err != nil {
				t.Fatal(err)
			}
			_, err = UnmarshalSuperblock(b)
			if !errors.Is(err, ErrCorrupt) || errors.Is(err, ErrChecksum) {
				t.Fatalf("got %v, want a field-range ErrCorrupt", err)
			}
		})
	}
}

func TestSuperblockSysArraySurgery(t *testing.T) {
	good, err := MarshalSuperblock(exampleSuperblock())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		cut  func(b []byte)
		want error
	}{
		{"truncated key", func(b []byte) { binary.LittleEndian.PutUint32(b[sbSysSize:], 10) }, ErrShort},
		{"truncated chunk", func(b []byte) { binary.LittleEndian.PutUint32(b[sbSysSize:], KeySize+chunkHeaderSize+stripeSize-1) }, ErrShort},
		{"wrong key type", func(b []byte) { b[sbSysArray+8] = byte(DevItemKey) }, nil},
		{"wrong key objectid", func(b []byte) { b[sbSysArray] = 1 }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := bytes.Clone(good)
			tc.cut(b)
			reseal(b, CsumCRC32C)
			_, err := UnmarshalSuperblock(b)
			if !errors.Is(err, ErrCorrupt) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("got %v, want ErrCorrupt (%v)", err, tc.want)
			}
		})
	}
	if _, err := UnmarshalSuperblock(good[:SuperblockSize-1]); !errors.Is(err, ErrShort) || !errors.Is(err, ErrCorrupt) {
		t.Errorf("short buffer: %v", err)
	}
}

// TestSuperblockGolden pins the encoding of the example superblock byte
// for byte (testdata/superblock.golden, a hexdump -C style dump).
func TestSuperblockGolden(t *testing.T) {
	b, err := MarshalSuperblock(exampleSuperblock())
	if err != nil {
		t.Fatal(err)
	}
	got := hexDump(b)
	path := filepath.Join("testdata", "superblock.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Fatalf("encoding changed; if on purpose, bump the format version and run -update.\ngot:\n%s\nwant:\n%s", got, want)
	}
}

const (
	exampleBegin = "<!-- BEGIN superblock-example: generated by TestFormatMDExample, do not edit -->\n"
	exampleEnd   = "<!-- END superblock-example -->\n"
)

// TestFormatMDExample keeps the annotated dump of FORMAT.md §8 equal to
// the real encoding of the example superblock.
func TestFormatMDExample(t *testing.T) {
	b, err := MarshalSuperblock(exampleSuperblock())
	if err != nil {
		t.Fatal(err)
	}
	block := exampleBegin + "```text\n" + renderRows(b, headRows(b, 256)) + "```\n\nThe root sets and the system chunk array of the same superblock:\n\n```text\n" +
		renderRows(b, tailRows(b)) + "```\n" + exampleEnd
	doc, err := os.ReadFile("FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(doc, []byte(exampleBegin))
	j := bytes.Index(doc, []byte(exampleEnd))
	if i < 0 || j < i {
		t.Fatal("FORMAT.md has no superblock-example markers")
	}
	cur := string(doc[i : j+len(exampleEnd)])
	if cur == block {
		return
	}
	if !*update {
		t.Fatalf("FORMAT.md §8 is stale; run go test ./format/ -run TestFormatMDExample -update\nwant:\n%s", block)
	}
	out := append(append(bytes.Clone(doc[:i]), block...), doc[j+len(exampleEnd):]...)
	if err := os.WriteFile("FORMAT.md", out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSmallDataMaxBytes pins small_data_max at byte 528 and keeps the
// discard settings' bytes 536..559 untouched.
func TestSmallDataMaxBytes(t *testing.T) {
	sb := richSuperblock(CsumCRC32C)
	sb.Settings.SmallDataMax = 0x0102030405060708
	b, err := MarshalSuperblock(sb)
	if err != nil {
		t.Fatal(err)
	}
	if got := binary.LittleEndian.Uint64(b[528:]); got != sb.Settings.SmallDataMax {
		t.Fatalf("u64 at 528 = %#x, want %#x", got, sb.Settings.SmallDataMax)
	}
	if b[536] != byte(sb.Settings.Discard) || binary.LittleEndian.Uint64(b[544:]) != sb.Settings.DiscardMetadataMin {
		t.Fatalf("discard settings moved: %x", b[536:560])
	}
	got, err := UnmarshalSuperblock(b)
	if err != nil || got.Settings.SmallDataMax != sb.Settings.SmallDataMax {
		t.Fatalf("decoded %v, %v", got.Settings.SmallDataMax, err)
	}
}

// TestNewFSIDField pins new_fsid at bytes 168..183, commit_nonce and
// backup_nonces at 184..223, and their round trip (FORMAT.md §3.1, §3.3, §3.8).
func TestNewFSIDField(t *testing.T) {
	sb := exampleSuperblock()
	sb.NewFSID = [16]byte{0xfe, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xef}
	sb.Incompat |= IncompatFSIDChange
	sb.Roots.Nonce = 0x1122334455667788
	sb.Backups[0].Nonce = 0x99
	sb.Backups[3].Nonce = 0xaa
	b, err := MarshalSuperblock(sb)
	if err != nil {
		t.Fatal(err)
	}
	want := append(append([]byte{}, sb.NewFSID[:]...), 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0x99, 0, 0, 0, 0, 0, 0, 0)
	want = append(append(want, make([]byte, 16)...), 0xaa, 0, 0, 0, 0, 0, 0, 0)
	if !bytes.Equal(b[168:224], want) || !bytes.Equal(b[224:256], make([]byte, 32)) {
		t.Fatalf("bytes 168..255: % x", b[168:256])
	}
	got, err := UnmarshalSuperblock(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.NewFSID != sb.NewFSID || got.Incompat&IncompatFSIDChange == 0 || got.Roots != sb.Roots || got.Backups != sb.Backups {
		t.Fatalf("round trip: new_fsid %x incompat %x roots %+v backups %+v", got.NewFSID, got.Incompat, got.Roots, got.Backups)
	}
}
