package check

// XATTR_ITEM: extended attributes, each under the hash of its name.

import (
	"github.com/ddfs/ddfs/format"
)

// xattrItem takes an XATTR_ITEM: every name under its own hash.
func (c *checker) xattrItem(cur *inodeState, it format.Item) {
	k := it.Key
	xs, err := format.UnmarshalXattrs(it.Data)
	if err != nil {
		c.fsItemBad(cur, k, err)
		return
	}
	for _, x := range xs {
		if h := format.NameHash([]byte(x.Name)); h != k.Offset {
			c.fsFix(XattrHash, cur.ino, &fixData{key: k, name: x.Name}, "xattr %q is under key offset %#x, its name hash is %#x", x.Name, k.Offset, h)
		}
	}
}
