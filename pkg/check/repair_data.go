package check

import (
	"errors"
	"fmt"
	"slices"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
)

// sumBatch is the sectors one new checksum item covers (well inside a
// node).
const sumBatch = 64

func csumKey(l uint64) format.Key {
	return format.Key{ObjectID: format.CsumObjectID, Type: format.CsumItemKey, Offset: l}
}

// readAny reads buf at logical from the first copy that reads.
func (f *fixer) readAny(logical uint64, buf []byte) error {
	vol := f.st.Vol
	err := fmt.Errorf("logical %d: no copy", logical)
	for m := 0; m < vol.Copies(logical); m++ {
		if err = vol.ReadCopy(logical, buf, m); err == nil {
			return nil
		}
	}
	return err
}

// dropExtent frees a data extent no file uses: its item, its index
// entry, its checksums and its bytes in the block group. The space is free from the next
// open on (the free-space map is built from the extent tree).
func (f *fixer) dropExtent(k format.Key) error {
	b, err := f.tree(format.ExtentTree).Get(k)
	if errors.Is(err, btree.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	// Its dedupe index entry goes with it (an entry never outlives its
	// extent).
	if e, err := format.UnmarshalExtentItem(b); err == nil && e.Flags&format.ExtentFlagDeduped != 0 {
		if err := f.del(format.DedupeTree, format.Key{ObjectID: e.HashPrefix, Type: format.DedupeItemKey, Offset: k.ObjectID}); err != nil {
			return err
		}
	}
	if err := f.del(format.ExtentTree, k); err != nil {
		return err
	}
	for _, bg := range f.st.BlockGroups() {
		// An extent that passes its chunk's end was never counted in the
		// group (as fsck counts usage: whole extents inside the chunk).
		if bg.Chunk.Logical <= k.ObjectID && k.ObjectID+k.Offset <= bg.Chunk.End() {
			bg.Used -= min(bg.Used, k.Offset)
		}
	}
	return f.dropSums(k.ObjectID, k.ObjectID+k.Offset)
}

// dropSums deletes the checksums of [start, end) except where another
// data extent still covers the bytes: extents overlap only in a damaged
// image, and the live extent's sums are what protects its data (deleting
// them would have the next round sum whatever the disk holds now).
func (f *fixer) dropSums(start, end uint64) error {
	var cover []span
	from := format.Key{ObjectID: start - min(start, format.MaxExtentBytes)}
	err := f.tree(format.ExtentTree).Scan(from, format.Key{ObjectID: end}, func(it format.Item) (bool, error) {
		if it.Key.Type == format.ExtentItemKey && it.Key.ObjectID+it.Key.Offset > start {
			cover = append(cover, span{it.Key.ObjectID, it.Key.ObjectID + it.Key.Offset})
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	uncovered(slices.Values([]span{{start, end}}), cover, func(_ span, a, b uint64) {
		if err == nil {
			err = f.tx.DeleteCsums(a, b)
		}
	})
	return err
}

// rekeyXattr moves xattr name of ino from the item at k to the item its
// name hash keys.
func (f *fixer) rekeyXattr(ino uint64, k format.Key, name string) error {
	tr := f.tree(format.FSTree)
	b, err := tr.Get(k)
	if err != nil {
		return ignoreNotFound(err)
	}
	xs, err := format.UnmarshalXattrs(b)
	if err != nil {
		return nil
	}
	var moved *format.Xattr
	var kept []format.Xattr
	for i := range xs {
		if xs[i].Name == name && moved == nil {
			moved = &xs[i]
			continue
		}
		kept = append(kept, xs[i])
	}
	if moved == nil {
		return nil
	}
	if err := putOrDelete(f, k, kept, format.MarshalXattrs); err != nil {
		return err
	}
	to := format.Key{ObjectID: ino, Type: format.XattrItemKey, Offset: format.NameHash([]byte(name))}
	var there []format.Xattr
	if b, err := tr.Get(to); err == nil {
		if there, err = format.UnmarshalXattrs(b); err != nil {
			return nil
		}
	} else if err = ignoreNotFound(err); err != nil {
		return err
	}
	for _, x := range there {
		if x.Name == name {
			return nil // the right key holds the name already: keep that one
		}
	}
	return tr.Put(to, format.MarshalXattrs(append(there, *moved)))
}

// rekeyDirItem moves the DIR_ITEM entry name → child of dir from the item
// at k to the item its name hash keys.
func (f *fixer) rekeyDirItem(dir uint64, k format.Key, name string, child uint64) error {
	b, err := f.tree(format.FSTree).Get(k)
	if err != nil {
		return ignoreNotFound(err)
	}
	es, err := format.UnmarshalDirEntries(b)
	if err != nil {
		return nil
	}
	var moved *format.DirEntry
	var kept []format.DirEntry
	for i := range es {
		if es[i].Name == name && es[i].Ino == child && moved == nil {
			moved = &es[i]
			continue
		}
		kept = append(kept, es[i])
	}
	if moved == nil {
		return nil
	}
	if err := putOrDelete(f, k, kept, format.MarshalDirEntries); err != nil {
		return err
	}
	return f.editDirItem(dir, name, func(es []format.DirEntry) []format.DirEntry {
		for _, e := range es {
			if e.Name == name {
				return es
			}
		}
		return append(es, *moved)
	})
}

// putOrDelete rewrites the fs tree item at k with what is left of it.
func putOrDelete[T any](f *fixer, k format.Key, left []T, marshal func([]T) []byte) error {
	if len(left) == 0 {
		return f.del(format.FSTree, k)
	}
	return f.tree(format.FSTree).Put(k, marshal(left))
}

func ignoreNotFound(err error) error {
	if errors.Is(err, btree.ErrNotFound) {
		return nil
	}
	return err
}
