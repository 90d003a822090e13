package transfer

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ddfs/ddfs/pkg/fsys"
)

// Sparse files travel in the PAX form of GNU sparse format 1.0, as `tar
// -S` writes them: a PAX header with GNU.sparse.major=1, minor=0, name and
// realsize; a ustar header named GNUSparseFile.0/NAME whose data starts
// with the sparse map ("count\n" then "offset\nlength\n" per data
// fragment, NUL-padded to a block) followed by the fragments back to back.
// archive/tar reads this form but cannot write it, nor hand out the map,
// so both directions are done here.

const (
	blockSize     = 512
	sparseMajor   = "GNU.sparse.major"
	sparseMinor   = "GNU.sparse.minor"
	sparseName    = "GNU.sparse.name"
	sparseSize    = "GNU.sparse.realsize"
	maxOctal11    = 1<<33 - 1 // largest value of an 11-digit octal field
	maxOctal7     = 1<<21 - 1
	maxSparseMeta = 1 << 20 // as archive/tar's bound on the map
)

// maxLegacySparse bounds the size of an old GNU or PAX 0.x sparse entry,
// whose holes archive/tar hands out as zeros (streamed at memory speed:
// seconds; stored as holes again).
var maxLegacySparse int64 = 16 << 30

// legacySparse reports an old GNU ('S') or PAX GNU sparse 0.0/0.1 entry.
func legacySparse(h *tar.Header) bool {
	if h.Typeflag == tar.TypeGNUSparse {
		return true
	}
	for k := range h.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") && !isSparse1(h) {
			return true
		}
	}
	return false
}

// isSparse1 reports a header of a GNU sparse 1.0 entry.
func isSparse1(h *tar.Header) bool {
	return h.PAXRecords[sparseMajor] == "1" && h.PAXRecords[sparseMinor] == "0"
}

// holes reports whether data ranges rs leave part of a file of size
// bytes as holes.
func holes(rs []fsys.Range, size uint64) bool {
	var n uint64
	for _, r := range rs {
		n += r.Len
	}
	return n < size
}

// sparseMap encodes the map of rs for a file of size bytes, padded to a
// block. A file that ends in a hole gets a final empty fragment at its
// size, as GNU tar writes.
func sparseMap(rs []fsys.Range, size uint64) []byte {
	if len(rs) == 0 || rs[len(rs)-1].Off+rs[len(rs)-1].Len < size {
		rs = append(rs[:len(rs):len(rs)], fsys.Range{Off: size})
	}
	b := strconv.AppendInt(nil, int64(len(rs)), 10)
	b = append(b, '\n')
	for _, r := range rs {
		b = strconv.AppendUint(b, r.Off, 10)
		b = append(b, '\n')
		b = strconv.AppendUint(b, r.Len, 10)
		b = append(b, '\n')
	}
	return pad(b)
}

func pad(b []byte) []byte { return append(b, make([]byte, (blockSize-len(b)%blockSize)%blockSize)...) }

// paxRecord formats one "len key=value\n" record (len counts itself).
func paxRecord(k, v string) string { return string(appendRecord(nil, k, v)) }

// ustarHeader formats a ustar header block. Values too large for their
// octal field are written as 0; the caller puts them in PAX records.
func ustarHeader(name string, typ byte, mode, uid, gid, size, mtime int64) []byte {
	fit := func(v, max int64) int64 {
		if v < 0 || v > max {
			return 0
		}
		return v
	}
	b := make([]byte, blockSize)
	fillBlock(b, name, "", typ, fit(mode, maxOctal7), fit(uid, maxOctal7), fit(gid, maxOctal7), fit(size, maxOctal11), fit(mtime, maxOctal11), false)
	return b
}

// shortName cuts s to at most n bytes for a ustar name field (the real
// name travels in a PAX record).
func shortName(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return s
}

// sparseEntry writes regular file in (archive name h.Name, attributes in h)
// as a GNU sparse 1.0 entry holding the data ranges rs, straight to w
// after the tar writer's last entry. Work and output are O(extents).
func (t *tarWriter) sparseEntry(h *tar.Header, in *fsys.Inode, rs []fsys.Range, src string) error {
	if err := t.tw.Flush(); err != nil {
		return err
	}
	m := sparseMap(rs, in.Size)
	phys := int64(len(m))
	for _, r := range rs {
		phys += int64(r.Len)
	}
	recs := map[string]string{
		sparseMajor: "1", sparseMinor: "0", sparseName: h.Name, sparseSize: strconv.FormatUint(in.Size, 10),
		"mtime": paxTime(h.ModTime), "atime": paxTime(h.AccessTime), "ctime": paxTime(h.ChangeTime),
	}
	for k, v := range h.PAXRecords {
		recs[k] = v
	}
	if phys > maxOctal11 {
		recs["size"] = strconv.FormatInt(phys, 10)
	}
	if h.Uid > maxOctal7 || h.Gid > maxOctal7 {
		recs["uid"], recs["gid"] = strconv.Itoa(h.Uid), strconv.Itoa(h.Gid)
	}
	keys := make([]string, 0, len(recs))
	for k := range recs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var px strings.Builder
	for _, k := range keys {
		px.WriteString(paxRecord(k, recs[k]))
	}
	dir, base := path.Split(h.Name)
	mtime := h.ModTime.Unix()
	var out bytes.Buffer
	out.Write(ustarHeader(shortName(path.Join(dir, "PaxHeaders.0", base), 99), tar.TypeXHeader, 0o644, 0, 0, int64(px.Len()), mtime))
	out.Write(pad([]byte(px.String())))
	out.Write(ustarHeader(shortName(path.Join(dir, "GNUSparseFile.0", base), 99), tar.TypeReg, h.Mode, int64(h.Uid), int64(h.Gid), phys, mtime))
	out.Write(m)
	if _, err := t.w.Write(out.Bytes()); err != nil {
		return err
	}
	if t.pipe != nil { // the data from the assembler, like a whole file's
		if rs == nil {
			rs = []fsys.Range{} // all holes: nothing to read (nil reads the whole file)
		}
		t.pipe.ranges(in, rs, src)
	} else if err := t.salvage(in, rs, src); err != nil {
		return err
	}
	_, err := t.w.Write(make([]byte, (blockSize-phys%blockSize)%blockSize))
	return err
}

// paxTime formats a time as PAX does: seconds and a fraction if any; a
// time before 1970 is the negated distance to it ("-4.75").
func paxTime(t time.Time) string {
	sec, ns := t.Unix(), int64(t.Nanosecond())
	if ns == 0 {
		return strconv.FormatInt(sec, 10)
	}
	sign := ""
	if sec < 0 {
		sign, sec, ns = "-", -(sec + 1), 1e9-ns
	}
	return strings.TrimRight(fmt.Sprintf("%s%d.%09d", sign, sec, ns), "0")
}

// tarTap sits between the archive and archive/tar: it records what the
// reader consumes while a header is read (so the sparse map, which
// archive/tar keeps to itself, can be parsed again), and lets TarIn read
// the fragments of a sparse entry directly, then accounts for them when
// archive/tar skips the entry (its discard seeks, and reads one last
// byte, which the tap hands back).
type tarTap struct {
	r         io.Reader
	recording bool
	rec       []byte
	credit    int64  // bytes of the current entry TarIn consumed itself
	back      []byte // the entry's last byte, for archive/tar's discard
	pos       int64
}

func (t *tarTap) Read(p []byte) (int, error) {
	var n int
	var err error
	if len(t.back) > 0 {
		n = copy(p, t.back)
		t.back = t.back[n:]
	} else {
		n, err = t.r.Read(p)
	}
	if t.recording {
		t.rec = append(t.rec, p[:n]...)
		if len(t.rec) > 4*maxSparseMeta { // the map is at the end
			t.rec = append(t.rec[:0], t.rec[len(t.rec)-2*maxSparseMeta:]...)
		}
	}
	t.pos += int64(n)
	return n, err
}

// Seek serves archive/tar's skip of an entry's data: only relative
// seeks; bytes TarIn consumed count first, the rest is read and dropped.
func (t *tarTap) Seek(off int64, whence int) (int64, error) {
	if whence != io.SeekCurrent || off < 0 {
		return 0, errors.New("tar input: unsupported seek")
	}
	use := min(off, t.credit)
	t.credit -= use
	t.pos += use
	if rest := off - use; rest > 0 {
		if _, err := io.CopyN(io.Discard, struct{ io.Reader }{t}, rest); err != nil {
			return t.pos, err
		}
	}
	return t.pos, nil
}

// next reads the next header, recording its bytes.
func (t *tarTap) next(tr *tar.Reader) (*tar.Header, error) {
	t.recording, t.rec = true, t.rec[:0]
	defer func() { t.recording = false }()
	return tr.Next()
}

// sparseFragments parses the map of the sparse 1.0 entry just read: the
// data after the entry's ustar header, the last header block recorded.
func (t *tarTap) sparseFragments(h *tar.Header) ([]fsys.Range, error) {
	rec := t.rec
	for end := len(rec) - blockSize; end >= 0 && len(rec)-end <= maxSparseMeta+blockSize; end -= blockSize {
		hdr := rec[end : end+blockSize]
		if !isUstarHeader(hdr) {
			continue
		}
		m := rec[end+blockSize:]
		rs, err := parseSparseMap(m, h.Size)
		if err != nil {
			return nil, err
		}
		// The fragments must fill the entry's data exactly, or reading
		// them would run into the next header.
		var data int64
		for _, r := range rs {
			data += int64(r.Len)
		}
		if phys, ok := entrySize(hdr, h); !ok || phys != int64(len(m))+data {
			return nil, fmt.Errorf("archive entry %q: sparse map of %d data bytes in an entry of %d: %w", h.Name, data, phys-int64(len(m)), tar.ErrHeader)
		}
		return rs, nil
	}
	return nil, fmt.Errorf("archive entry %q: sparse map not found: %w", h.Name, tar.ErrHeader)
}

// entrySize is the size of an entry's data: its PAX "size" record, else
// the header's octal size field.
func entrySize(hdr []byte, h *tar.Header) (int64, bool) {
	field := strings.Trim(string(hdr[124:136]), " \x00")
	if v, ok := h.PAXRecords["size"]; ok {
		field = v
		n, err := strconv.ParseInt(field, 10, 64)
		return n, err == nil && n >= 0
	}
	n, err := strconv.ParseInt(field, 8, 64)
	return n, err == nil && n >= 0
}

// isUstarHeader reports a block with the ustar magic and a valid checksum.
func isUstarHeader(b []byte) bool {
	if !bytes.Equal(b[257:262], []byte("ustar")) {
		return false
	}
	want, err := strconv.ParseInt(strings.Trim(string(b[148:156]), " \x00"), 8, 64)
	if err != nil {
		return false
	}
	var sum int64
	for i, c := range b {
		if i >= 148 && i < 156 {
			c = ' '
		}
		sum += int64(c)
	}
	return sum == want
}

// parseSparseMap decodes "count\n(offset\nlength\n)*": fragments in order,
// not overlapping, inside size.
func parseSparseMap(b []byte, size int64) ([]fsys.Range, error) {
	fields := strings.Split(string(b), "\n")
	num := func(i int) (int64, bool) {
		if i >= len(fields)-1 {
			return 0, false
		}
		v, err := strconv.ParseInt(fields[i], 10, 64)
		return v, err == nil && v >= 0
	}
	n, ok := num(0)
	if !ok || n > int64(len(fields)/2) {
		return nil, fmt.Errorf("sparse map of %d fragments: %w", n, tar.ErrHeader)
	}
	var rs []fsys.Range
	var end int64
	for i := int64(0); i < n; i++ {
		off, ok1 := num(int(1 + 2*i))
		l, ok2 := num(int(2 + 2*i))
		if !ok1 || !ok2 || off < end || l > size-off {
			return nil, fmt.Errorf("sparse map fragment %d: %w", i, tar.ErrHeader)
		}
		end = off + l
		if l > 0 {
			rs = append(rs, fsys.Range{Off: uint64(off), Len: uint64(l)})
		}
	}
	return rs, nil
}

// sparseData writes the fragments of the sparse entry just read into in,
// reading them from the tap directly: O(fragments), holes stay holes.
func (t *tarTap) sparseData(f *fsys.FS, in *fsys.Inode, rs []fsys.Range, size uint64, buf []byte) error {
	var total int64
	var last byte
	for _, r := range rs {
		for off, end := r.Off, r.Off+r.Len; off < end; {
			p := buf[:min(uint64(len(buf)), end-off)]
			if _, err := io.ReadFull(t.r, p); err != nil {
				return fmt.Errorf("sparse data: %w", io.ErrUnexpectedEOF)
			}
			if err := f.WriteAt(in, p, off); err != nil {
				return err
			}
			last = p[len(p)-1]
			off += uint64(len(p))
			total += int64(len(p))
		}
	}
	if total > 0 {
		t.credit, t.back = total-1, []byte{last}
	}
	if in.Size < size {
		return f.Truncate(in, size)
	}
	return nil
}
