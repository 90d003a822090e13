package export

// A reproducible ISO 9660 under SOURCE_DATE_EPOCH. go-diskfs v1.9.4
// stamps the volume descriptors with the clock, and Rock Ridge TF entries
// carry the workspace files' change times, which no call can set: after
// the image is written, stampISO sets both to SOURCE_DATE_EPOCH. It walks
// the directory tree go-diskfs wrote (our own output, still bounded as if
// hostile: every extent inside the image, each directory once).

import (
	"encoding/binary"
	"fmt"
	"io"
	"time"
)

const isoSector = 2048

// isoFile is the image being stamped.
type isoFile interface {
	io.ReaderAt
	io.WriterAt
}

// stampISO sets the volume descriptors' dates and every Rock Ridge
// change time to sec (SOURCE_DATE_EPOCH).
func stampISO(w isoFile, size int64, sec int64) error {
	t := time.Unix(sec, 0).UTC()
	long := []byte(t.Format("20060102150405") + "00\x00") // 17-byte dec-datetime, GMT
	var root []byte
	for lba := int64(16); lba < 16+64; lba++ {
		vd := make([]byte, isoSector)
		if _, err := w.ReadAt(vd, lba*isoSector); err != nil {
			return fmt.Errorf("iso9660: volume descriptor %d: %w", lba, err)
		}
		if string(vd[1:6]) != "CD001" {
			return fmt.Errorf("iso9660: volume descriptor %d: no CD001", lba)
		}
		if vd[0] == 255 {
			break
		}
		if vd[0] != 1 && vd[0] != 2 {
			continue
		}
		for _, off := range []int{813, 830, 847, 864} { // creation, modification, expiration, effective
			copy(vd[off:], long)
		}
		if _, err := w.WriteAt(vd[813:881], lba*isoSector+813); err != nil {
			return err
		}
		if vd[0] == 1 {
			root = vd[156 : 156+34]
		}
	}
	if root == nil {
		return fmt.Errorf("iso9660: no primary volume descriptor")
	}
	s := &isoStamper{w: w, size: size, short: shortTime(t), long: long, seen: map[uint32]bool{}}
	return s.dir(binary.LittleEndian.Uint32(root[2:]), binary.LittleEndian.Uint32(root[10:]), 0)
}

func shortTime(t time.Time) []byte {
	return []byte{byte(t.Year() - 1900), byte(t.Month()), byte(t.Day()), byte(t.Hour()), byte(t.Minute()), byte(t.Second()), 0}
}

type isoStamper struct {
	w           isoFile
	size        int64
	short, long []byte
	seen        map[uint32]bool
}

// dir stamps the records of the directory at lba (n bytes), then its
// subdirectories.
func (s *isoStamper) dir(lba, n uint32, depth int) error {
	if depth > 1024 || s.seen[lba] {
		return fmt.Errorf("iso9660: directory at %d reached twice or nested too deep", lba)
	}
	s.seen[lba] = true
	if int64(lba)*isoSector+int64(n) > s.size {
		return fmt.Errorf("iso9660: directory at %d of %d bytes past the image", lba, n)
	}
	b := make([]byte, n)
	if _, err := s.w.ReadAt(b, int64(lba)*isoSector); err != nil {
		return err
	}
	var subs [][2]uint32
	for off := 0; off < len(b); {
		l := int(b[off])
		if l == 0 { // records do not cross sectors: go on at the next
			off = (off/isoSector + 1) * isoSector
			continue
		}
		if l < 34 || off+l > len(b) {
			return fmt.Errorf("iso9660: directory at %d: record of %d bytes at %d", lba, l, off)
		}
		rec := b[off : off+l]
		nl := int(rec[32])
		su := 33 + nl + (nl+1)%2
		if su > l {
			return fmt.Errorf("iso9660: directory at %d: name past its record", lba)
		}
		if err := s.susp(rec[su:], 0); err != nil {
			return err
		}
		if rec[25]&2 != 0 && !(nl == 1 && rec[33] <= 1) {
			subs = append(subs, [2]uint32{binary.LittleEndian.Uint32(rec[2:]), binary.LittleEndian.Uint32(rec[10:])})
		}
		off += l
	}
	if _, err := s.w.WriteAt(b, int64(lba)*isoSector); err != nil {
		return err
	}
	for _, d := range subs {
		if err := s.dir(d[0], d[1], depth+1); err != nil {
			return err
		}
	}
	return nil
}

// susp stamps the TF entries of a system use area (b changed in place),
// following CE continuation areas.
func (s *isoStamper) susp(b []byte, depth int) error {
	for p := 0; p+4 <= len(b); {
		sig, l := string(b[p:p+2]), int(b[p+2])
		if l < 4 || p+l > len(b) {
			return nil // padding, or the end
		}
		e := b[p : p+l]
		switch sig {
		case "TF":
			s.tf(e)
		case "CE":
			if l >= 28 && depth < 8 {
				if err := s.continuation(e, depth); err != nil {
					return err
				}
			}
		case "ST":
			return nil
		}
		p += l
	}
	return nil
}

// tf sets a TF entry's attribute change time (flag 8) to the epoch.
func (s *isoStamper) tf(e []byte) {
	if len(e) < 5 {
		return
	}
	flags, at, size := e[4], 5, 7
	stamp := s.short
	if flags&0x80 != 0 {
		size, stamp = 17, s.long
	}
	for bit := byte(1); bit < 0x80; bit <<= 1 {
		if flags&bit == 0 {
			continue
		}
		if at+size > len(e) {
			return
		}
		if bit == 8 { // ATTRIBUTES: the change time
			copy(e[at:at+size], stamp)
		}
		at += size
	}
}

// continuation stamps the continuation area a CE entry names.
func (s *isoStamper) continuation(e []byte, depth int) error {
	lba, off, n := binary.LittleEndian.Uint32(e[4:]), binary.LittleEndian.Uint32(e[12:]), binary.LittleEndian.Uint32(e[20:])
	at := int64(lba)*isoSector + int64(off)
	if n > isoSector || at+int64(n) > s.size {
		return fmt.Errorf("iso9660: continuation area at %d of %d bytes past the image", at, n)
	}
	b := make([]byte, n)
	if _, err := s.w.ReadAt(b, at); err != nil {
		return err
	}
	if err := s.susp(b, depth+1); err != nil {
		return err
	}
	_, err := s.w.WriteAt(b, at)
	return err
}
