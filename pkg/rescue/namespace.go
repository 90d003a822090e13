package rescue

import (
	"bytes"
	"fmt"

	"github.com/ddfs/ddfs/format"
)

// namespace is the fs tree rebuilt from the items that read: every name
// of a directory from its DIR_ITEMs and DIR_INDEXes together, so the loss
// of either still leaves the other.
type namespace struct {
	inodes  map[uint64]*format.InodeItem
	entries map[uint64]map[string]format.DirEntry
	xattrs  map[uint64][]format.Xattr
	refs    map[uint64][]backRef // an inode's names, from its INODE_REFs
	extents map[uint64][]extent
	// bad holds, per inode, the first of its file extents that did not
	// decode; unread, the other items that did not.
	bad    map[uint64]error
	unread []Problem
}

// backRef is a name of an inode as its INODE_REF gives it.
type backRef struct {
	parent uint64
	name   string
}

// extent is one EXTENT_DATA item at file offset off.
type extent struct {
	off uint64
	format.FileExtentItem
}

func newNamespace() *namespace {
	return &namespace{inodes: map[uint64]*format.InodeItem{}, entries: map[uint64]map[string]format.DirEntry{},
		xattrs: map[uint64][]format.Xattr{}, refs: map[uint64][]backRef{}, extents: map[uint64][]extent{}, bad: map[uint64]error{}}
}

// add takes one fs-tree item; one that does not decode marks its inode.
func (ns *namespace) add(it format.Item) {
	ino := it.Key.ObjectID
	var err error
	switch it.Key.Type {
	case format.InodeItemKey:
		var in format.InodeItem
		if err = format.DecodeInodeItem(it.Data, &in); err == nil {
			ns.inodes[ino] = &in
		}
	case format.DirItemKey:
		var es []format.DirEntry
		if es, err = format.UnmarshalDirEntries(it.Data); err == nil {
			ns.name(ino, es...)
		}
	case format.DirIndexKey:
		var e format.DirEntry
		if e, err = format.UnmarshalDirEntry(it.Data); err == nil {
			ns.name(ino, e)
		}
	case format.InodeRefKey:
		var rs []format.InodeRef
		if rs, err = format.UnmarshalInodeRefs(it.Data); err == nil {
			for _, r := range rs {
				ns.refs[ino] = append(ns.refs[ino], backRef{it.Key.Offset, r.Name})
			}
		}
	case format.XattrItemKey:
		var xs []format.Xattr
		if xs, err = format.UnmarshalXattrs(it.Data); err == nil {
			ns.xattrs[ino] = append(ns.xattrs[ino], xs...)
		}
	case format.FileExtentKey:
		err = ns.addExtent(ino, it)
	}
	switch {
	case err == nil:
	case it.Key.Type == format.FileExtentKey && ns.bad[ino] == nil:
		ns.bad[ino] = fmt.Errorf("item %v: %w", it.Key, err) // the data is incomplete
	case it.Key.Type != format.FileExtentKey:
		// A name, xattr or inode item lost on its own: the file's data
		// still reads (it is listed; what it costs shows where it is used).
		ns.unread = append(ns.unread, Problem{Ino: ino, Err: fmt.Errorf("item %v: %w", it.Key, err)})
	}
}

func (ns *namespace) addExtent(ino uint64, it format.Item) error {
	x := extent{off: it.Key.Offset}
	err := format.DecodeFileExtentItem(it.Data, &x.FileExtentItem)
	if err == nil {
		err = format.CheckFileExtentKey(x.off, &x.FileExtentItem)
	}
	if err != nil {
		return err
	}
	x.Inline = bytes.Clone(x.Inline)
	ns.extents[ino] = append(ns.extents[ino], x)
	return nil
}

// name adds entries of directory dir; the first seen of a name wins
// (DIR_ITEM and DIR_INDEX of one name agree on a sound image).
func (ns *namespace) name(dir uint64, es ...format.DirEntry) {
	m := ns.entries[dir]
	if m == nil {
		m = map[string]format.DirEntry{}
		ns.entries[dir] = m
	}
	for _, e := range es {
		if _, ok := m[e.Name]; !ok {
			m[e.Name] = e
		}
	}
}

// named reports the inodes some entry names.
func (ns *namespace) named() map[uint64]bool {
	out := map[uint64]bool{}
	for _, m := range ns.entries {
		for _, e := range m {
			out[e.Ino] = true
		}
	}
	return out
}
