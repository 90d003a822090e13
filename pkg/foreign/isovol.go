package foreign

// Which of an ISO 9660 image's trees ddfs lists, and how a record's name
// reads, as Linux's isofs does (the reference the tests hold ddfs to):
// Rock Ridge names on the primary tree when its root's "." record
// carries SUSP's SP or an ER (an entry without NM keeps its ISO name);
// else the Joliet tree of a supplementary descriptor (UCS-2 names); else
// Rock Ridge where the root has PX or NM all the same; else the primary
// tree's ISO names as isofs's map=normal shows them.
//
// Every ISO directory is read by ddfs (isodir.go), none by go-diskfs
// v1.9.4: its reader allocates sizes it reads from the image before it
// checks them (a crafted record's continuation area or directory length
// is a 4 GiB make, one per record, which the fuzzer turned into an
// out-of-memory crash) and follows a continuation chain without end.

import (
	"encoding/binary"
	"strings"
	"unicode/utf16"
)

// The trees an ISO image is listed by.
const (
	isoRockRidge = iota + 1
	isoJoliet
	isoPlain
)

// isoVolume is the tree chosen and its root directory's extent.
type isoVolume struct {
	tree             int
	rootLBA, rootLen uint32
}

// isoChoose reads the volume descriptors and picks the tree. A primary
// root that does not read is listed as Rock Ridge: the listing says why.
func (im *Image) isoChoose() error {
	var pvd, joliet []byte
	for at := int64(16); at < 16+maxISODescriptors; at++ {
		vd := make([]byte, 190)
		if _, err := im.be.r.ReadAt(vd, at*isoBlock); err != nil {
			return corruptf("volume descriptor %d: %v", at, err)
		}
		if string(vd[1:6]) != "CD001" || vd[0] == 255 {
			break
		}
		switch esc := string(vd[88:91]); {
		case vd[0] == 1 && pvd == nil:
			pvd = vd
		case vd[0] == 2 && joliet == nil && (esc == "%/@" || esc == "%/C" || esc == "%/E"):
			joliet = vd
		}
	}
	if pvd == nil {
		return corruptf("no primary volume descriptor")
	}
	root := func(vd []byte) (uint32, uint32) {
		return binary.LittleEndian.Uint32(vd[isoRootRecord+2:]), binary.LittleEndian.Uint32(vd[isoRootRecord+10:])
	}
	im.iso.tree = isoRockRidge
	im.iso.rootLBA, im.iso.rootLen = root(pvd)
	self, _, err := im.isoRecords(im.iso.rootLBA, im.iso.rootLen)
	switch {
	case err != nil || self != nil && self.susp:
	case joliet != nil:
		im.iso.tree = isoJoliet
		im.iso.rootLBA, im.iso.rootLen = root(joliet)
	case self != nil && (self.px || self.hasName): // Rock Ridge entries without SP, as some writers put them
	default:
		im.iso.tree = isoPlain
	}
	return nil
}

// isoName is how a record's file identifier reads on the chosen tree.
func (im *Image) isoName(id []byte) string {
	if im.iso.tree == isoJoliet {
		u := make([]uint16, len(id)/2)
		for i := range u {
			u[i] = binary.BigEndian.Uint16(id[2*i:])
		}
		name := strings.TrimSuffix(string(utf16.Decode(u)), ";1")
		for len(name) >= 2 && strings.HasSuffix(name, ".") {
			name = name[:len(name)-1]
		}
		return name
	}
	return isoMapNormal(id)
}

// isoMapNormal is an ISO name as isofs's map=normal shows it: lower case,
// without its version ";1" (nor the "." before it where that ends the
// name), other ';' (and '/', written by some old tools) as '.'.
func isoMapNormal(id []byte) string {
	b := make([]byte, 0, len(id))
	for i, c := range id {
		switch {
		case c == 0:
			return string(b)
		case c == '.' && i == len(id)-3 && id[i+1] == ';' && id[i+2] == '1',
			c == ';' && i == len(id)-2 && id[i+1] == '1':
			return string(b)
		case c >= 'A' && c <= 'Z':
			c |= 0x20
		case c == ';' || c == '/':
			c = '.'
		}
		b = append(b, c)
	}
	return string(b)
}
