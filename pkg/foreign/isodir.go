package foreign

// ISO 9660 directories, read by a reader of our own (isovol.go says why
// not go-diskfs's, and which tree and names). go-diskfs v1.9.4 also
// strips a leading and a trailing "." from every file's name, Rock
// Ridge's NM names included (".gitignore" lists as "gitignore", ".h.go"
// beside "h.go" as a second "h.go"), reads a directory named ".hidden"
// its own writer made as "", and then fails every path lookup through
// that directory's parent. ddfs reads the directory records and, on a
// Rock Ridge tree, their System Use entries: NM (name), PX (mode, links,
// owner, serial), TF (times), SL (symlink target), PN (device), CE
// (continuation), RE (a relocated directory's record, hidden);
// directories are found by the extent their parent's record names,
// never by path. Every number is the image's and is bounded first.

import (
	"encoding/binary"
	"path"
	"sort"
	"strings"
	"syscall"
	"time"
)

const (
	isoMaxDir    = 64 << 20 // bytes of one directory's records
	isoMaxCEHops = 8        // continuation areas followed per record
)

// isoRecord is a directory record and what Rock Ridge says of it.
type isoRecord struct {
	lba        uint32
	size       uint64 // a file in several extents: their sum (each under 4 GiB)
	dir        bool
	name       string
	hasName    bool
	susp       bool // an SP or ER entry: the tree has System Use entries
	px         bool // a PX entry: mode, nlink, uid, gid (ino) below are its
	mode       uint32
	nlink, uid uint32
	gid        uint32
	ino        uint64
	rdev       uint64
	mtime      time.Time
	atime      time.Time
	ctime      time.Time
	btime      time.Time
	recorded   time.Time // the record's own date (no TF modify time: this)
	target     []byte    // SL: the symlink's target
	slDone     bool      // the last SL component ended (no continue flag)
	cl         uint32    // CL: a relocated directory's extent (mkisofs moves directories past 8 deep)
	more       bool      // flag 0x80: the file goes on in the next record's extent
	split      bool      // a file in several extents (over 4 GiB): not read
}

// listISO lists directory real (at p) of an ISO image.
func (im *Image) listISO(p, real string) ([]*Stat, error) {
	lba, size, err := im.isoDirExtent(p, real)
	if err != nil {
		return nil, err
	}
	var recs []isoRecord
	err = im.guard("read directory", p, func() (err error) {
		_, recs, err = im.isoRecords(lba, size)
		return err
	})
	if err != nil {
		return nil, im.pathErr("read directory", p, err)
	}
	if len(recs) > maxEntries {
		return nil, im.pathErr("read directory", p, corruptf("%d entries", len(recs)))
	}
	out := make([]*Stat, 0, len(recs))
	for i := range recs {
		if recs[i].cl != 0 {
			err := im.guard("read directory", p, func() error { return im.isoRelocated(&recs[i]) })
			if err != nil {
				return nil, im.pathErr("read directory", path.Join(p, recs[i].name), err)
			}
		}
		st, err := recs[i].stat()
		if err != nil {
			return nil, im.pathErr("read directory", p, err)
		}
		out = append(out, st)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// isoRelocated makes r, a placeholder (CL) for a directory mkisofs moved
// to rr_moved, that directory: its extent, and its "." record's
// attributes.
func (im *Image) isoRelocated(r *isoRecord) error {
	first := make([]byte, 34)
	if _, err := im.be.r.ReadAt(first, int64(r.cl)*isoBlock); err != nil || first[0] < 34 {
		return corruptf("relocated directory at block %d: %v", r.cl, err)
	}
	self, _, err := im.isoRecords(r.cl, binary.LittleEndian.Uint32(first[10:]))
	if err != nil {
		return err
	}
	if self == nil || !self.dir {
		return corruptf("relocated directory at block %d: no \".\" record", r.cl)
	}
	name := r.name
	*r = *self
	r.name, r.hasName = name, true
	return nil
}

// isoDirExtent is where directory real's records lie: the root's from
// the volume descriptor, another's from its record in its parent.
func (im *Image) isoDirExtent(p, real string) (lba, size uint32, err error) {
	if real == "" {
		return im.iso.rootLBA, im.iso.rootLen, nil
	}
	d, err := im.subdir(p, real)
	if err != nil {
		return 0, 0, err
	}
	if d.isoData < 1 {
		return 0, 0, im.pathErr("read directory", p, corruptf("directory without an extent"))
	}
	return uint32((d.isoData - 1) / isoBlock), d.isoLen, nil
}

// isoRoot is the root's Stat, from its "." record.
func (im *Image) isoRoot() (*Stat, error) {
	self, _, err := im.isoRecords(im.iso.rootLBA, im.iso.rootLen)
	if err != nil || self == nil {
		return nil, corruptf("root directory: no \".\" record (%v)", err)
	}
	self.name, self.hasName = "/", true
	return self.stat()
}

// stat is the entry r describes.
func (r *isoRecord) stat() (*Stat, error) {
	if !r.hasName || r.name == "" || r.name == "." || r.name == ".." || len(r.name) > maxName || strings.ContainsAny(r.name, "/\x00") && r.name != "/" {
		return nil, corruptf("Rock Ridge name %q", r.name)
	}
	st := &Stat{Name: r.name, Mode: syscall.S_IFREG | 0o444, Nlink: 1, Size: int64(r.size), Mtime: r.recorded,
		isoData: int64(r.lba)*isoBlock + 1, isoLen: uint32(min(r.size, 1<<32-1))}
	if r.split {
		st.isoData = -1 // openISO refuses it
	}
	if r.dir {
		st.Mode, st.Size = syscall.S_IFDIR|0o555, int64(r.size)
	}
	if r.px {
		st.Mode, st.Nlink, st.UID, st.GID, st.Ino = r.mode, max(r.nlink, 1), r.uid, r.gid, r.ino
		if (st.Mode&syscall.S_IFMT == syscall.S_IFDIR) != r.dir {
			return nil, corruptf("%s: Rock Ridge mode %#o on a record with directory flag %v", r.name, r.mode, r.dir)
		}
	}
	if !r.mtime.IsZero() {
		st.Mtime = r.mtime
	}
	st.Atime, st.Ctime, st.Btime = r.atime, r.ctime, r.btime
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFLNK:
		if len(r.target) == 0 || len(r.target) > maxName || !r.slDone {
			return nil, corruptf("%s: symlink target of %d bytes", r.name, len(r.target))
		}
		st.Target, st.Size = string(r.target), int64(len(r.target))
	case syscall.S_IFCHR, syscall.S_IFBLK:
		st.Rdev, st.Size = r.rdev, 0
	case syscall.S_IFREG:
	case syscall.S_IFDIR, syscall.S_IFIFO, syscall.S_IFSOCK:
		if !r.dir {
			st.Size = 0
		}
	default:
		return nil, corruptf("%s: Rock Ridge mode %#o", r.name, r.mode)
	}
	return st, nil
}

// isoRecords reads the records of the directory at lba (size bytes):
// its own "." record, and the entries, without ".." nor the records
// Rock Ridge marks relocated (RE).
func (im *Image) isoRecords(lba, size uint32) (*isoRecord, []isoRecord, error) {
	at := int64(lba) * isoBlock
	if size > isoMaxDir || at+int64(size) > im.be.size {
		return nil, nil, corruptf("directory at block %d of %d bytes", lba, size)
	}
	b := make([]byte, size)
	if _, err := im.be.r.ReadAt(b, at); err != nil {
		return nil, nil, corruptf("directory at block %d: %v", lba, err)
	}
	var self *isoRecord
	var out []isoRecord
	for off := 0; off < len(b); {
		l := int(b[off])
		if l == 0 { // records do not cross blocks: the next block's
			off = (off/isoBlock + 1) * isoBlock
			continue
		}
		if l < 34 || off+l > len(b) {
			return nil, nil, corruptf("directory at block %d: record of %d bytes at %d", lba, l, off)
		}
		rec := b[off : off+l]
		off += l
		if rec[25]&0x04 != 0 { // an associated file: hidden, as Linux hides it
			continue
		}
		nl := int(rec[32])
		su := 33 + nl + (nl+1)%2
		if su > l {
			return nil, nil, corruptf("directory at block %d: a name past its record", lba)
		}
		// The data follow the extended attribute record (rec[1] blocks).
		r := isoRecord{lba: binary.LittleEndian.Uint32(rec[2:]) + uint32(rec[1]), size: uint64(binary.LittleEndian.Uint32(rec[10:])),
			dir: rec[25]&2 != 0, more: rec[25]&0x80 != 0, recorded: isoShortTime(rec[18:25])}
		dot := nl == 1 && rec[33] <= 1
		var relocated bool
		if im.iso.tree == isoRockRidge {
			var err error
			if relocated, err = im.isoSUSP(rec[su:], &r); err != nil {
				return nil, nil, err
			}
		}
		if !dot && !r.hasName {
			r.name, r.hasName = im.isoName(rec[33:33+nl]), true
		}
		switch n := len(out); {
		case dot && rec[33] == 0 && self == nil:
			self = &r
		case dot || relocated:
		case n > 0 && out[n-1].more && out[n-1].name == r.name: // the same file's next extent
			out[n-1].size, out[n-1].more, out[n-1].split = out[n-1].size+r.size, r.more, true
		case n == maxEntries:
			return nil, nil, corruptf("directory at block %d: over %d entries", lba, maxEntries)
		default:
			out = append(out, r)
		}
	}
	return self, out, nil
}

// isoShortTime decodes a 7-byte date: years since 1900, month, day,
// hour, minute, second, offset from GMT in 15-minute steps.
func isoShortTime(b []byte) time.Time {
	if len(b) < 7 || b[1] == 0 {
		return time.Time{}
	}
	t := time.Date(1900+int(b[0]), time.Month(b[1]), int(b[2]), int(b[3]), int(b[4]), int(b[5]), 0, time.UTC)
	return t.Add(-time.Duration(int8(b[6])) * 15 * time.Minute)
}

// isoLongTime decodes a 17-byte date: "YYYYMMDDhhmmsscc" digits and the
// offset from GMT.
func isoLongTime(b []byte) time.Time {
	if len(b) < 17 {
		return time.Time{}
	}
	t, err := time.Parse("20060102150405", string(b[:14]))
	if err != nil {
		return time.Time{}
	}
	cs := int(b[14]-'0')*10 + int(b[15]-'0')
	return t.Add(time.Duration(cs)*10*time.Millisecond - time.Duration(int8(b[16]))*15*time.Minute)
}

// isoSUSP reads a record's System Use entries into r, following its
// continuation areas (one CE per area, as SUSP has it; at most
// isoMaxCEHops areas a record), and reports an RE entry.
func (im *Image) isoSUSP(b []byte, r *isoRecord) (relocated bool, err error) {
	for areas := 0; ; areas++ {
		ce, re, err := isoArea(b, r)
		if err != nil {
			return false, err
		}
		relocated = relocated || re
		if ce == nil {
			return relocated, nil
		}
		if areas == isoMaxCEHops {
			return false, corruptf("Rock Ridge continuation areas over %d", isoMaxCEHops)
		}
		if b, err = im.isoContinuation(ce); err != nil {
			return false, err
		}
	}
}

// isoArea reads one System Use area's entries into r: its CE entry (nil
// none; the first if several) and whether it holds RE.
func isoArea(b []byte, r *isoRecord) (ce []byte, relocated bool, err error) {
	for p := 0; p+4 <= len(b); {
		sig, l := string(b[p:p+2]), int(b[p+2])
		if l < 4 || p+l > len(b) {
			break // padding, or the end
		}
		e := b[p : p+l]
		p += l
		if fn := isoEntries[sig]; fn != nil {
			if err := fn(r, e); err != nil {
				return nil, false, err
			}
			continue
		}
		switch sig {
		case "RE":
			relocated = true
		case "SP", "ER": // SUSP's indicator, an extension's reference
			r.susp = true
		case "CE":
			if ce == nil {
				ce = e
			}
		case "ST":
			return ce, relocated, nil
		}
	}
	return ce, relocated, nil
}

// isoContinuation reads the continuation area a CE entry names.
func (im *Image) isoContinuation(e []byte) ([]byte, error) {
	if len(e) < 28 {
		return nil, corruptf("Rock Ridge CE of %d bytes", len(e))
	}
	lba, off, n := binary.LittleEndian.Uint32(e[4:]), binary.LittleEndian.Uint32(e[12:]), binary.LittleEndian.Uint32(e[20:])
	at := int64(lba)*isoBlock + int64(off)
	if n > isoBlock || at+int64(n) > im.be.size {
		return nil, corruptf("Rock Ridge continuation area at %d of %d bytes", at, n)
	}
	c := make([]byte, n)
	if _, err := im.be.r.ReadAt(c, at); err != nil {
		return nil, corruptf("Rock Ridge continuation area: %v", err)
	}
	return c, nil
}

// isoEntries decode the Rock Ridge entries that describe a file.
var isoEntries = map[string]func(r *isoRecord, e []byte) error{
	"NM": func(r *isoRecord, e []byte) error {
		if len(e) >= 5 && e[4]&6 == 0 { // not CURRENT or PARENT
			if len(r.name)+len(e) > maxName+5 {
				return corruptf("Rock Ridge name over %d bytes", maxName)
			}
			r.name, r.hasName = r.name+string(e[5:]), true
		}
		return nil
	},
	"PX": func(r *isoRecord, e []byte) error {
		if len(e) < 36 {
			return corruptf("Rock Ridge PX of %d bytes", len(e))
		}
		le := binary.LittleEndian
		r.px, r.mode, r.nlink, r.uid, r.gid = true, le.Uint32(e[4:]), le.Uint32(e[12:]), le.Uint32(e[20:]), le.Uint32(e[28:])
		if len(e) >= 44 {
			r.ino = uint64(le.Uint32(e[36:]))
		}
		return nil
	},
	"CL": func(r *isoRecord, e []byte) error {
		if len(e) < 12 {
			return corruptf("Rock Ridge CL of %d bytes", len(e))
		}
		r.cl = binary.LittleEndian.Uint32(e[4:])
		return nil
	},
	"PN": func(r *isoRecord, e []byte) error {
		if len(e) < 20 {
			return corruptf("Rock Ridge PN of %d bytes", len(e))
		}
		hi, lo := uint64(binary.LittleEndian.Uint32(e[4:])), uint64(binary.LittleEndian.Uint32(e[12:]))
		r.rdev = hi<<32 | lo // as mkisofs writes it: the whole dev_t in the low word where it fits
		return nil
	},
	"TF": func(r *isoRecord, e []byte) error {
		if len(e) < 5 {
			return corruptf("Rock Ridge TF of %d bytes", len(e))
		}
		flags, at, size := e[4], 5, 7
		if flags&0x80 != 0 {
			size = 17
		}
		for bit := byte(1); bit < 0x80; bit <<= 1 {
			if flags&bit == 0 {
				continue
			}
			if at+size > len(e) {
				return corruptf("Rock Ridge TF cut short")
			}
			t := isoShortTime(e[at : at+size])
			if size == 17 {
				t = isoLongTime(e[at : at+size])
			}
			switch bit {
			case 1:
				r.btime = t
			case 2:
				r.mtime = t
			case 4:
				r.atime = t
			case 8:
				r.ctime = t
			}
			at += size
		}
		return nil
	},
	"SL": func(r *isoRecord, e []byte) error {
		if len(e) < 5 {
			return corruptf("Rock Ridge SL of %d bytes", len(e))
		}
		for c := e[5:]; len(c) > 0; {
			if len(c) < 2 || 2+int(c[1]) > len(c) {
				return corruptf("Rock Ridge SL component cut short")
			}
			flags, part := c[0], c[2:2+int(c[1])]
			if r.slDone && len(r.target) > 0 && r.target[len(r.target)-1] != '/' {
				r.target = append(r.target, '/')
			}
			switch {
			case flags&2 != 0:
				r.target = append(r.target, '.')
			case flags&4 != 0:
				r.target = append(r.target, ".."...)
			case flags&8 != 0:
				r.target = append(r.target, '/')
			default:
				r.target = append(r.target, part...)
			}
			r.slDone = flags&1 == 0 // a component continued in the next goes on without a slash
			if len(r.target) > maxName {
				return corruptf("symlink target over %d bytes", maxName)
			}
			c = c[2+int(c[1]):]
		}
		return nil
	},
}
