package transfer

import (
	"archive/tar"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// appendPAXHeader appends the header blocks archive/tar writes for h in
// the PAX format (an extended header with h's records, then the ustar
// block), byte for byte, for the headers tar-out makes of regular files,
// directories, symlinks and hard links; false (dst as it was) for what it
// leaves to archive/tar: long or non-ASCII names, numbers past their
// octal fields, times before 1970, device numbers, big records. On the Go
// tree, archive/tar's WriteHeader was 23% of tar-out's CPU, on the walk
// that bounds it (TestAppendPAXHeaderMatches compares the two).
func appendPAXHeader(dst []byte, h *tar.Header) ([]byte, bool) {
	if !fastPAX(h) {
		return dst, false
	}
	// The records in archive/tar's order (sorted keys): the xattrs
	// ("SCHILY..." sorts before the lowercase keys), then atime and ctime
	// (always kept in PAX) and mtime when the ustar field cannot hold it.
	var keys []string
	for k := range h.PAXRecords {
		if !strings.HasPrefix(k, xattrPAX) || strings.ContainsAny(k, "=\x00") {
			return dst, false
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	o := len(dst)
	dst = append(dst, make([]byte, blockSize)...) // the extended header's block, filled below
	for _, k := range keys {
		dst = appendRecord(dst, k, h.PAXRecords[k])
	}
	for _, t := range [...]struct {
		key string
		ts  time.Time
	}{{"atime", h.AccessTime}, {"ctime", h.ChangeTime}, {"mtime", h.ModTime}} {
		if !t.ts.IsZero() && (t.key != "mtime" || t.ts.Nanosecond() != 0) {
			dst = appendRecord(dst, t.key, paxTime(t.ts))
		}
	}
	if n := len(dst) - o - blockSize; n == 0 {
		dst = dst[:o]
	} else {
		dir, file := path.Split(h.Name)
		name := path.Join(dir, "PaxHeaders.0", file)
		if len(name) > 100 {
			name = name[:100]
		}
		fillBlock(dst[o:o+blockSize], strings.TrimRight(name, "/"), "", tar.TypeXHeader, 0, 0, 0, int64(n), 0, false)
		dst = append(dst, make([]byte, padLen(int64(n)))...)
	}
	mt := h.ModTime
	if mt.IsZero() {
		mt = time.Unix(0, 0)
	}
	o = len(dst)
	dst = append(dst, make([]byte, blockSize)...)
	fillBlock(dst[o:], h.Name, h.Linkname, h.Typeflag, h.Mode, int64(h.Uid), int64(h.Gid), h.Size, mt.Unix(), true)
	return dst, true
}

// appendRecord appends a PAX record "LEN KEY=VALUE\n" (paxRecord without
// its allocations).
func appendRecord(dst []byte, k, v string) []byte {
	n := len(k) + len(v) + 3
	n += len(strconv.Itoa(n))
	if d := len(strconv.Itoa(n)); len(k)+len(v)+3+d != n { // the length gained a digit
		n = len(k) + len(v) + 3 + d
	}
	dst = strconv.AppendInt(dst, int64(n), 10)
	dst = append(dst, ' ')
	dst = append(dst, k...)
	dst = append(dst, '=')
	dst = append(dst, v...)
	return append(dst, '\n')
}

// fastPAX reports whether h is in appendPAXHeader's domain.
func fastPAX(h *tar.Header) bool {
	switch h.Typeflag {
	case tar.TypeReg, tar.TypeDir, tar.TypeSymlink, tar.TypeLink:
	default:
		return false
	}
	ascii := func(s string, n int) bool {
		if len(s) > n {
			return false
		}
		for i := 0; i < len(s); i++ {
			if s[i] == 0 || s[i] >= utf8.RuneSelf {
				return false
			}
		}
		return true
	}
	times := func(ts ...time.Time) bool {
		for _, t := range ts {
			if !t.IsZero() && (t.Unix() < 0 || t.Unix() > maxOctal11) {
				return false
			}
		}
		return true
	}
	return h.Format == tar.FormatPAX && ascii(h.Name, 100) && ascii(h.Linkname, 100) && h.Uname == "" && h.Gname == "" &&
		h.Mode >= 0 && h.Mode <= maxOctal7 && h.Uid >= 0 && h.Uid <= maxOctal7 && h.Gid >= 0 && h.Gid <= maxOctal7 &&
		h.Size >= 0 && h.Size <= maxOctal11 && h.Devmajor == 0 && h.Devminor == 0 &&
		(h.Typeflag == tar.TypeReg || h.Size == 0) && (h.Typeflag == tar.TypeDir || !strings.HasSuffix(h.Name, "/")) && len(h.PAXRecords) <= 64 &&
		times(h.ModTime, h.AccessTime, h.ChangeTime)
}

func padLen(n int64) int { return int((blockSize - n%blockSize) % blockSize) }

// fillBlock fills zeroed block b as archive/tar's writer fills a ustar
// header: octal fields zero-padded with a NUL, the ustar magic, the
// checksum; ustarFields adds the device fields it formats for a main
// header.
func fillBlock(b []byte, name, link string, typ byte, mode, uid, gid, size, mtime int64, ustarFields bool) {
	copy(b[0:100], name)
	putOctal(b[100:108], mode)
	putOctal(b[108:116], uid)
	putOctal(b[116:124], gid)
	putOctal(b[124:136], size)
	putOctal(b[136:148], mtime)
	b[156] = typ
	copy(b[157:257], link)
	if ustarFields {
		putOctal(b[329:337], 0)
		putOctal(b[337:345], 0)
	}
	copy(b[257:265], "ustar\x0000")
	var sum int64
	for i, c := range b {
		if i >= 148 && i < 156 {
			c = ' '
		}
		sum += int64(c)
	}
	putOctal(b[148:155], sum)
	b[155] = ' '
}

// putOctal writes x as archive/tar does: zero-padded octal digits and a
// NUL in the last byte (x must fit: fastPAX checked).
func putOctal(b []byte, x int64) {
	s := strconv.FormatInt(x, 8)
	for i := range len(b) - 1 - len(s) {
		b[i] = '0'
	}
	copy(b[len(b)-1-len(s):], s)
	b[len(b)-1] = 0
}
