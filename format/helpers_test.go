package format

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"strings"
)

// update rewrites the golden files and the generated section of FORMAT.md:
//
//	go test ./format/ -run 'Golden|FormatMD' -update
var update = flag.Bool("update", false, "rewrite testdata golden files and FORMAT.md §8")

// exampleSuperblock is the fixed superblock of the golden file and of the
// worked example in FORMAT.md §8: one 1 GiB device whose first system
// chunk starts at 1 MiB.
func exampleSuperblock() *Superblock {
	sb := &Superblock{
		Version:    CurrentVersion,
		CsumType:   CsumCRC32C,
		FSID:       [16]byte{0xdd, 0xf5, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d},
		DevUUID:    [16]byte{0xde, 0x71, 0xce, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc},
		DevID:      1,
		Bytenr:     SuperblockOffsets[0],
		Generation: 7,
		SectorSize: 4096,
		NodeSize:   16384,
		StripeLen:  DefaultStripeLen,
		NumDevices: 1,
		TotalBytes: 1 << 30,
		BytesUsed:  6 * 16384,
		Label:      "example",
		SysChunks: []SysChunk{{Logical: 1 << 20, Chunk: &ChunkItem{
			Length: 8 << 20, Type: ChunkSystem, Profile: ProfileSingle, StripeLen: DefaultStripeLen, SubStripes: 1,
			Stripes: []Stripe{{DevID: 1, Offset: 1 << 20, DevUUID: [16]byte{0xde, 0x71, 0xce, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc}}},
		}}},
	}
	sb.Roots.Generation = 7
	sb.Roots.SetRoot(ChunkTree, RootPtr{Logical: 1 << 20, Generation: 7})
	sb.Roots.SetRoot(ExtentTree, RootPtr{Logical: 1<<20 + 16384, Generation: 7})
	sb.Roots.SetRoot(FSTree, RootPtr{Logical: 1<<20 + 2*16384, Generation: 5})
	sb.Roots.SetRoot(CsumTree, RootPtr{Logical: 1<<20 + 3*16384, Generation: 6})
	sb.Backups[0] = sb.Roots
	sb.Backups[0].Generation = 6
	sb.Backups[0].SetRoot(ChunkTree, RootPtr{Logical: 1<<20 + 4*16384, Generation: 6})
	sb.Backups[0].SetRoot(ExtentTree, RootPtr{Logical: 1<<20 + 5*16384, Generation: 6})
	return sb
}

// reseal recomputes the checksum of a marshalled node or superblock after
// a test changed its bytes.
func reseal(b []byte, c CsumType) {
	sum := Checksum(c, b[CsumSize:])
	copy(b[:CsumSize], sum[:])
}

// hexDump formats b like `hexdump -C`: 16 bytes a line, offset, hex, ASCII;
// a run of lines equal to the one before is printed as "*".
func hexDump(b []byte) string {
	var sb strings.Builder
	var prev []byte
	starred := false
	for o := 0; o < len(b); o += 16 {
		line := b[o:min(o+16, len(b))]
		if prev != nil && bytes.Equal(line, prev) {
			if !starred {
				sb.WriteString("*\n")
				starred = true
			}
			continue
		}
		prev, starred = line, false
		fmt.Fprintf(&sb, "%08x  ", o)
		for i := range 16 {
			if i < len(line) {
				fmt.Fprintf(&sb, "%02x ", line[i])
			} else {
				sb.WriteString("   ")
			}
			if i == 7 {
				sb.WriteByte(' ')
			}
		}
		sb.WriteString(" |")
		for _, c := range line {
			if c < 0x20 || c > 0x7e {
				c = '.'
			}
			sb.WriteByte(c)
		}
		sb.WriteString("|\n")
	}
	fmt.Fprintf(&sb, "%08x\n", len(b))
	return sb.String()
}

// sbField is one range of the superblock layout (FORMAT.md §3.1). kind
// says how annotate prints its value; "" is a reserved range.
type sbField struct {
	name      string
	off, size int
	kind      string
}

// sbLayout lists every byte range of the superblock in order; the size test
// checks that it tiles 0..4095 and agrees with the sb* offsets.
var sbLayout = []sbField{
	{"csum", sbCsum, CsumSize, "csum"},
	{"magic", sbMagic, 8, "ascii"},
	{"version", sbVersion, 4, "u32"},
	{"csum_type", sbCsumType, 2, "csumtype"},
	{"reserved", sbCsumType + 2, 2, ""},
	{"compat", sbCompat, 8, "hex64"},
	{"ro_compat", sbRoCompat, 8, "hex64"},
	{"incompat", sbIncompat, 8, "hex64"},
	{"fsid", sbFSID, 16, "uuid"},
	{"dev_uuid", sbDevUUID, 16, "uuid"},
	{"devid", sbDevID, 8, "u64"},
	{"bytenr", sbBytenr, 8, "u64"},
	{"generation", sbGeneration, 8, "u64"},
	{"sector_size", sbSectorSize, 4, "u32"},
	{"node_size", sbNodeSize, 4, "u32"},
	{"stripe_len", sbStripeLen, 4, "u32"},
	{"reserved", sbStripeLen + 4, 4, ""},
	{"num_devices", sbNumDevices, 8, "u64"},
	{"total_bytes", sbTotalBytes, 8, "u64"},
	{"bytes_used", sbBytesUsed, 8, "u64"},
	{"new_fsid", sbNewFSID, 16, "uuid"},
	{"commit_nonce", sbNonce, 8, "hex64"},
	{"backup_nonces", sbBackNonces, 8 * NumBackupRoots, "nonces"},
	{"reserved", sbBackNonces + 8*NumBackupRoots, sbLabel - (sbBackNonces + 8*NumBackupRoots), ""},
	{"label", sbLabel, LabelSize, "ascii"},
	{"alloc_policy", sbAllocPol, 1, "u8"},
	{"reserved (settings)", sbAllocPol + 1, sbRoots - (sbAllocPol + 1), ""},
	{"roots", sbRoots, RootSetSize, "rootset"},
	{"backup_roots", sbBackups, NumBackupRoots * RootSetSize, "rootset"},
	{"sys_array_size", sbSysSize, 4, "u32"},
	{"reserved", sbSysSize + 4, sbSysArray - (sbSysSize + 4), ""},
	{"sys_array", sbSysArray, SysChunkArrayMax, "sys"},
	{"logical_bytes", sbCounters, 8, "u64"},
	{"physical_bytes", sbCounters + 8, 8, "u64"},
	{"dedupe_saved_bytes", sbCounters + 16, 8, "u64"},
	{"compress_saved_bytes", sbCounters + 24, 8, "u64"},
	{"index_entries", sbCounters + 32, 8, "u64"},
	{"index_nodes", sbCounters + 40, 8, "u64"},
	{"reserved", sbCounters + CountersSize, SuperblockSize - (sbCounters + CountersSize), ""},
}

// dumpRow is one line of an annotated dump: size bytes at off (at most
// 16, or a longer all-zero run), the field they hold and its value.
type dumpRow struct {
	off, size    int
	field, value string
}

// renderRows prints rows as the annotated dumps of FORMAT.md §8.
func renderRows(b []byte, rows []dumpRow) string {
	var sb strings.Builder
	sb.WriteString("off   bytes                                            field                value\n")
	for _, r := range rows {
		hex := strings.TrimSpace(fmt.Sprintf("% x", b[r.off:r.off+r.size]))
		if r.size > 16 {
			hex = "00 ... 00"
		}
		line := fmt.Sprintf("%04x  %-47s  %-20s %s", r.off, hex, r.field, r.value)
		sb.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	return sb.String()
}

// headRows annotates the first n bytes of a marshalled superblock field by
// field, from sbLayout.
func headRows(b []byte, n int) []dumpRow {
	le := binary.LittleEndian
	var rows []dumpRow
	for _, f := range sbLayout {
		if f.off >= n {
			break
		}
		v := b[f.off : f.off+f.size]
		if f.kind == "" && len(v) > 16 && bytes.Count(v, []byte{0}) == len(v) {
			rows = append(rows, dumpRow{f.off, f.size, f.name, fmt.Sprintf("%d bytes, zero", len(v))})
			continue
		}
		var val string
		switch f.kind {
		case "csum":
			val = fmt.Sprintf("crc32c 0x%08x (LE in bytes 0..3), rest zero", le.Uint32(v))
		case "ascii":
			val = fmt.Sprintf("%q", strings.TrimRight(string(v), "\x00"))
		case "u32":
			val = fmt.Sprint(le.Uint32(v))
		case "u64":
			val = fmt.Sprint(le.Uint64(v))
		case "hex64":
			val = fmt.Sprintf("0x%x", le.Uint64(v))
		case "csumtype":
			val = fmt.Sprintf("%d = %v", le.Uint16(v), CsumType(le.Uint16(v)))
		case "uuid":
			val = "(16 bytes)"
		case "nonces":
			val = "u64 per backup_roots slot"
		case "":
			val = "zero"
		}
		for o := 0; o < len(v); o += 16 {
			r := dumpRow{f.off + o, min(16, len(v)-o), f.name, val}
			if o > 0 {
				r.field, r.value = "", ""
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// rootSetRows annotates a root set at off.
func rootSetRows(b []byte, off int, name string) []dumpRow {
	le := binary.LittleEndian
	rows := []dumpRow{{off, 8, name + ".generation", fmt.Sprint(le.Uint64(b[off:]))}}
	for i := range NumTrees {
		o := off + 8 + i*rootPtrSize
		tree := TreeID(i + 1)
		if bytes.Count(b[o:o+rootPtrSize], []byte{0}) == rootPtrSize {
			rows = append(rows, dumpRow{o, rootPtrSize, fmt.Sprintf("  %v root", tree), "24 bytes, zero: no tree"})
			continue
		}
		rows = append(rows,
			dumpRow{o, 8, fmt.Sprintf("  %v root", tree), fmt.Sprintf("logical %d", le.Uint64(b[o:]))},
			dumpRow{o + 8, 8, "", fmt.Sprintf("generation %d", le.Uint64(b[o+8:]))},
			dumpRow{o + 16, 8, "", fmt.Sprintf("level %d, 7 reserved bytes", b[o+16])},
		)
	}
	return rows
}

// tailRows annotates the root set, the first backup and the system chunk
// array of a marshalled superblock that has one single-stripe system chunk.
func tailRows(b []byte) []dumpRow {
	le := binary.LittleEndian
	rows := rootSetRows(b, sbRoots, "roots")
	rows = append(rows, rootSetRows(b, sbBackups, "backup[0]")...)
	rows = append(rows, dumpRow{sbBackups + RootSetSize, 3 * RootSetSize, "backup[1..3]", "600 bytes, zero: unused"})
	s := sbSysArray
	c := s + KeySize
	st := c + chunkHeaderSize
	return append(rows,
		dumpRow{sbSysSize, 4, "sys_array_size", fmt.Sprint(le.Uint32(b[sbSysSize:]))},
		dumpRow{sbSysSize + 4, 4, "reserved", "zero"},
		dumpRow{s, 8, "key.objectid", fmt.Sprintf("%d (ChunkObjectID)", le.Uint64(b[s:]))},
		dumpRow{s + 8, 1, "key.type", fmt.Sprintf("%d (CHUNK_ITEM)", b[s+8])},
		dumpRow{s + 9, 8, "key.offset", fmt.Sprintf("logical %d", le.Uint64(b[s+9:]))},
		dumpRow{c, 8, "  length", fmt.Sprint(le.Uint64(b[c:]))},
		dumpRow{c + 8, 2, "  type", fmt.Sprintf("%d = %v", le.Uint16(b[c+8:]), ChunkType(le.Uint16(b[c+8:])))},
		dumpRow{c + 10, 2, "  profile", fmt.Sprintf("%d = %v", le.Uint16(b[c+10:]), Profile(le.Uint16(b[c+10:])))},
		dumpRow{c + 12, 4, "  stripe_len", fmt.Sprint(le.Uint32(b[c+12:]))},
		dumpRow{c + 16, 2, "  num_stripes", fmt.Sprint(le.Uint16(b[c+16:]))},
		dumpRow{c + 18, 2, "  sub_stripes", fmt.Sprint(le.Uint16(b[c+18:]))},
		dumpRow{c + 20, 4, "  reserved", "zero"},
		dumpRow{st, 8, "  stripe[0].devid", fmt.Sprint(le.Uint64(b[st:]))},
		dumpRow{st + 8, 8, "  stripe[0].offset", fmt.Sprint(le.Uint64(b[st+8:]))},
		dumpRow{st + 16, 16, "  stripe[0].uuid", "(16 bytes)"},
	)
}
