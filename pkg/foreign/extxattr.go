package foreign

// Extended attributes of ext2/3/4 files, read here: go-diskfs v1.9.4
// keeps none. An inode's attributes live after its fixed fields (in the
// inode's extra space) and in one attribute block (i_file_acl); each
// entry names a prefix by index, and POSIX ACLs are kept in ext4's short
// form, given out in the form getxattr(2) returns. Every offset and size
// is bounded by the area it lies in.

import (
	"encoding/binary"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Xattr is one extended attribute.
type Xattr struct {
	Name  string
	Value []byte
}

const extXattrMagic = 0xEA020000

// extXattrPrefix names an entry's name index (Linux fs/ext4/xattr.c).
var extXattrPrefix = map[byte]string{
	1: "user.", 2: "system.posix_acl_access", 3: "system.posix_acl_default",
	4: "trusted.", 6: "security.", 7: "system.", 8: "system.richacl",
}

// Xattrs returns the extended attributes of the entry st describes, by
// name (none where the format keeps none).
func (im *Image) Xattrs(p string, st *Stat) ([]Xattr, error) {
	if im.kind == Squashfs {
		if st.xerr != nil {
			return nil, im.pathErr("xattrs", p, st.xerr)
		}
		return st.xattrs, nil
	}
	if !im.kind.isExt() || st.Ino == 0 {
		return nil, nil
	}
	x, err := im.extInodes()
	if err != nil {
		return nil, im.pathErr("xattrs", p, err)
	}
	raw, err := x.inode(st.Ino)
	if err != nil {
		return nil, im.pathErr("xattrs", p, err)
	}
	xs, err := extXattrs(im.be.r, x.g, st.Ino, raw)
	if err != nil {
		return nil, im.pathErr("xattrs", p, err)
	}
	return xs, nil
}

// extXattrs reads the attributes of inode raw (ino): the in-inode ones,
// then the block's (a name in both is corrupt).
func extXattrs(r io.ReaderAt, g extGeom, ino uint64, raw []byte) ([]Xattr, error) {
	le := binary.LittleEndian
	var out []Xattr
	var err error
	if len(raw) > 132 {
		extra := uint64(le.Uint16(raw[128:]))
		if start := 128 + extra; extra%4 == 0 && start+4 <= uint64(len(raw)) && le.Uint32(raw[start:]) == extXattrMagic {
			area := raw[start+4:]
			if out, err = extXattrEntries(area, area, out); err != nil {
				return nil, fmt.Errorf("inode %d attributes: %w", ino, err)
			}
		}
	}
	block := uint64(le.Uint32(raw[0x68:])) | uint64(le.Uint16(raw[0x76:]))<<32
	if block != 0 {
		if block >= g.blocks {
			return nil, fmt.Errorf("%w: inode %d attribute block %d outside the image", ErrCorrupt, ino, block)
		}
		b := make([]byte, g.bs)
		if _, err := r.ReadAt(b, int64(block*g.bs)); err != nil {
			return nil, fmt.Errorf("%w: attribute block %d: %v", ErrCorrupt, block, err)
		}
		if le.Uint32(b) != extXattrMagic || le.Uint32(b[8:]) != 1 {
			return nil, fmt.Errorf("%w: attribute block %d header", ErrCorrupt, block)
		}
		if out, err = extXattrEntries(b[32:], b, out); err != nil {
			return nil, fmt.Errorf("attribute block %d: %w", block, err)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	for i := 1; i < len(out); i++ {
		if out[i].Name == out[i-1].Name {
			return nil, fmt.Errorf("%w: attribute %q twice", ErrCorrupt, out[i].Name)
		}
	}
	return out, nil
}

// extXattrEntries appends the attributes of the entries at the start of
// ents (ending at four zero bytes); values lie in base at their offsets.
func extXattrEntries(ents, base []byte, out []Xattr) ([]Xattr, error) {
	err := walkExtXattrs(ents, base, func(index byte, suffix string, v []byte) error {
		name := extXattrPrefix[index] + suffix
		if name == "system.data" {
			return nil // inline data (extdir.go), not an attribute
		}
		v = append([]byte(nil), v...)
		if index == 2 || index == 3 {
			var err error
			if v, err = extACL(v); err != nil {
				return err
			}
		}
		out = append(out, Xattr{name, v})
		return nil
	})
	return out, err
}

// walkExtXattrs calls fn with each entry's name index, name suffix and
// value (in base, at its offset), entries from the start of ents to
// four zero bytes.
func walkExtXattrs(ents, base []byte, fn func(index byte, suffix string, value []byte) error) error {
	le := binary.LittleEndian
	for at := 0; ; {
		if at+4 > len(ents) {
			return fmt.Errorf("%w: attribute entries run past their area", ErrCorrupt)
		}
		if le.Uint32(ents[at:]) == 0 {
			return nil
		}
		if at+16 > len(ents) {
			return fmt.Errorf("%w: attribute entry past its area", ErrCorrupt)
		}
		e := ents[at:]
		nlen, index := int(e[0]), e[1]
		voff, inum, vsize := uint64(le.Uint16(e[2:])), le.Uint32(e[4:]), uint64(le.Uint32(e[8:]))
		if at+16+nlen > len(ents) || nlen == 0 && index != 2 && index != 3 { // the ACLs have no suffix
			return fmt.Errorf("%w: attribute name of %d bytes", ErrCorrupt, nlen)
		}
		suffix := string(e[16 : 16+nlen])
		at += (16 + nlen + 3) &^ 3
		if inum != 0 {
			return fmt.Errorf("%w: an attribute value in its own inode (ea_inode)", ErrUnsupported)
		}
		if voff+vsize > uint64(len(base)) {
			return fmt.Errorf("%w: attribute value %d+%d outside its area", ErrCorrupt, voff, vsize)
		}
		if _, ok := extXattrPrefix[index]; !ok {
			return fmt.Errorf("%w: attribute name index %d", ErrUnsupported, index)
		}
		if err := fn(index, suffix, base[voff:voff+vsize]); err != nil {
			return err
		}
	}
}

// extACL turns an ACL in ext4's form (version 1; tags USER and GROUP
// carry an id, the others none) into getxattr(2)'s (version 2, every
// entry with an id, 0xFFFFFFFF where none).
func extACL(b []byte) ([]byte, error) {
	le := binary.LittleEndian
	if len(b) < 4 || le.Uint32(b) != 1 {
		return nil, fmt.Errorf("%w: ACL header", ErrCorrupt)
	}
	out := le.AppendUint32(nil, 2)
	for at := 4; at < len(b); {
		if at+4 > len(b) {
			return nil, fmt.Errorf("%w: ACL entry cut short", ErrCorrupt)
		}
		tag, perm := le.Uint16(b[at:]), le.Uint16(b[at+2:])
		id := uint32(0xFFFFFFFF)
		switch tag {
		case 0x02, 0x08: // ACL_USER, ACL_GROUP
			if at+8 > len(b) {
				return nil, fmt.Errorf("%w: ACL entry cut short", ErrCorrupt)
			}
			id = le.Uint32(b[at+4:])
			at += 8
		case 0x01, 0x04, 0x10, 0x20: // USER_OBJ, GROUP_OBJ, MASK, OTHER
			at += 4
		default:
			return nil, fmt.Errorf("%w: ACL tag %#x", ErrCorrupt, tag)
		}
		out = le.AppendUint32(le.AppendUint16(le.AppendUint16(out, tag), perm), id)
	}
	return out, nil
}

// paxXattrMax bounds the xattr records of one entry (a PAX header holds
// at most 1 MiB; transfer.TarIn reads no more).
const paxXattrMax = 1<<20 - 16<<10

// xattrPAX are the PAX records of xs ("SCHILY.xattr.NAME", as GNU tar
// writes them); a name a record cannot hold ('=' or NUL) is refused.
func xattrPAX(xs []Xattr) (map[string]string, error) {
	if len(xs) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(xs))
	n := 0
	for _, x := range xs {
		if strings.ContainsAny(x.Name, "=\x00") {
			return nil, fmt.Errorf("%w: attribute name %q", ErrUnsupported, x.Name)
		}
		if n += len(x.Name) + len(x.Value) + 32; n > paxXattrMax {
			return nil, fmt.Errorf("%w: attributes over %d bytes", ErrUnsupported, paxXattrMax)
		}
		m["SCHILY.xattr."+x.Name] = string(x.Value)
	}
	return m, nil
}
