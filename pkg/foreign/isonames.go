package foreign

// Rock Ridge names, read by a reader of our own. go-diskfs v1.9.4 strips
// a leading and a trailing "." from every file's name, Rock Ridge's NM
// names included: ".gitignore" lists as "gitignore", and ".h.go" beside
// "h.go" as a second "h.go". Its listing keeps the directory's record
// order (without "." and "..", and without relocated directories'
// records), so ddfs reads the same records itself and, after checking
// that each pairs with the entry go-diskfs made of it (the same extent),
// takes the NM name. Every number is the image's and is bounded first.

import (
	"encoding/binary"
	"path"
	"sort"
	"strings"
)

const (
	isoMaxDir    = 64 << 20 // bytes of one directory's records
	isoMaxCEHops = 8        // continuation areas followed per record
)

// isoRecord is a directory record's extent and its Rock Ridge name.
type isoRecord struct {
	lba, size uint32
	name      string
	hasName   bool
}

// isoNames gives the entries of directory real (listed by go-diskfs, in
// its order) their Rock Ridge names and extent lengths.
func (im *Image) isoNames(p, real string, out []*Stat) error {
	lba, size, ok, err := im.isoDirExtent(p, real)
	if err != nil || !ok {
		return err
	}
	recs, err := im.isoRecords(lba, size)
	if err != nil {
		return err
	}
	named := false
	for _, r := range recs {
		named = named || r.hasName
	}
	if !named {
		return nil // no Rock Ridge: go-diskfs's names are the ISO (or Joliet) ones
	}
	if len(recs) != len(out) {
		return corruptf("directory of %d records listed as %d entries", len(recs), len(out))
	}
	for i, r := range recs {
		if out[i].isoData != int64(r.lba)*isoBlock+1 {
			return corruptf("entry %q: record %d's extent at block %d, not the entry's", out[i].Name, i, r.lba)
		}
		out[i].isoLen = r.size
		if !r.hasName {
			continue
		}
		if r.name == "" || r.name == "." || r.name == ".." || len(r.name) > maxName || strings.ContainsAny(r.name, "/\x00") {
			return corruptf("Rock Ridge name %q", r.name)
		}
		out[i].Name = r.name
	}
	return nil
}

// isoDirExtent is where directory real's records lie: the root's from
// the primary volume descriptor, another's from its parent's listing
// (ok false where that did not pair records: no Rock Ridge).
func (im *Image) isoDirExtent(p, real string) (lba, size uint32, ok bool, err error) {
	if real == "" {
		for at := int64(16); at < 16+64; at++ {
			vd := make([]byte, 190)
			if _, err := im.be.r.ReadAt(vd, at*isoBlock); err != nil {
				return 0, 0, false, corruptf("volume descriptor %d: %v", at, err)
			}
			if string(vd[1:6]) != "CD001" || vd[0] == 255 {
				break
			}
			if vd[0] == 1 {
				root := vd[156:]
				return binary.LittleEndian.Uint32(root[2:]), binary.LittleEndian.Uint32(root[10:]), true, nil
			}
		}
		return 0, 0, false, corruptf("no primary volume descriptor")
	}
	parent, base := path.Split(real)
	ents, err := im.readDir(p, strings.TrimSuffix(parent, "/"))
	if err != nil {
		return 0, 0, false, err
	}
	i := sort.Search(len(ents), func(i int) bool { return ents[i].Name >= base })
	if i == len(ents) || ents[i].Name != base || ents[i].isoLen == 0 || ents[i].isoData < 1 {
		return 0, 0, false, nil
	}
	return uint32((ents[i].isoData - 1) / isoBlock), ents[i].isoLen, true, nil
}

// isoRecords reads the records of the directory at lba (size bytes), as
// go-diskfs lists them: without "." and "..", nor records Rock Ridge
// marks relocated (RE).
func (im *Image) isoRecords(lba, size uint32) ([]isoRecord, error) {
	at := int64(lba) * isoBlock
	if size > isoMaxDir || at+int64(size) > im.be.size {
		return nil, corruptf("directory at block %d of %d bytes", lba, size)
	}
	b := make([]byte, size)
	if _, err := im.be.r.ReadAt(b, at); err != nil {
		return nil, corruptf("directory at block %d: %v", lba, err)
	}
	var out []isoRecord
	for off := 0; off < len(b); {
		l := int(b[off])
		if l == 0 { // records do not cross blocks: the next block's
			off = (off/isoBlock + 1) * isoBlock
			continue
		}
		if l < 34 || off+l > len(b) {
			return nil, corruptf("directory at block %d: record of %d bytes at %d", lba, l, off)
		}
		rec := b[off : off+l]
		off += l
		nl := int(rec[32])
		su := 33 + nl + (nl+1)%2
		if su > l {
			return nil, corruptf("directory at block %d: a name past its record", lba)
		}
		if nl == 1 && rec[33] <= 1 {
			continue // "." and ".."
		}
		r := isoRecord{lba: binary.LittleEndian.Uint32(rec[2:]), size: binary.LittleEndian.Uint32(rec[10:])}
		relocated, err := im.isoSUSP(rec[su:], &r, 0)
		if err != nil {
			return nil, err
		}
		if !relocated {
			out = append(out, r)
		}
	}
	return out, nil
}

// isoSUSP reads a system use area's NM entries into r (following CE
// continuation areas) and reports an RE entry.
func (im *Image) isoSUSP(b []byte, r *isoRecord, hops int) (relocated bool, err error) {
	for p := 0; p+4 <= len(b); {
		sig, l := string(b[p:p+2]), int(b[p+2])
		if l < 4 || p+l > len(b) {
			return relocated, nil // padding, or the end
		}
		e := b[p : p+l]
		p += l
		switch sig {
		case "NM":
			if l >= 5 && e[4]&6 == 0 { // not CURRENT or PARENT
				if len(r.name)+l > maxName+5 {
					return false, corruptf("Rock Ridge name over %d bytes", maxName)
				}
				r.name, r.hasName = r.name+string(e[5:]), true
			}
		case "RE":
			relocated = true
		case "CE":
			if l < 28 || hops >= isoMaxCEHops {
				return false, corruptf("Rock Ridge continuation")
			}
			lba, off, n := binary.LittleEndian.Uint32(e[4:]), binary.LittleEndian.Uint32(e[12:]), binary.LittleEndian.Uint32(e[20:])
			at := int64(lba)*isoBlock + int64(off)
			if n > isoBlock || at+int64(n) > im.be.size {
				return false, corruptf("Rock Ridge continuation area at %d of %d bytes", at, n)
			}
			c := make([]byte, n)
			if _, err := im.be.r.ReadAt(c, at); err != nil {
				return false, corruptf("Rock Ridge continuation area: %v", err)
			}
			more, err := im.isoSUSP(c, r, hops+1)
			if err != nil {
				return false, err
			}
			relocated = relocated || more
		case "ST":
			return relocated, nil
		}
	}
	return relocated, nil
}
