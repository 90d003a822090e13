package check

// Layout fixes of the fs tree (-y): an item the layout rules forbid is
// dropped, keeping what data can be kept (an overlapping extent loses
// only its overlapping head), and what depended on it is made whole in
// the same transaction: a dropped file extent releases its data extent
// (freed with its checksums at the last reference) and its inode's
// nbytes is recounted; a dropped directory entry takes its whole name,
// and an inode left without one is reconnected under /lost+found.

import (
	"bytes"
	"errors"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
)

// maxInodeExtents bounds the file extents one fix reads of an inode.
const maxInodeExtents = 1 << 20

func isLayoutFix(c Code) bool {
	switch c {
	case FileExtentOvlp, InlineNotOnly, InlineOffset, FileExtentWraps, FileExtentTooBig, NotFileExtents,
		NotDirEntries, DirEntrySelf, RefSelfParent, DirIndexRange, DirSeq, InodeKeyOffset, FSItemType:
		return true
	}
	return false
}

// fixLayout applies the fix of one layout problem.
func (f *fixer) fixLayout(p Problem) error {
	x := p.fix
	switch p.Code {
	case FileExtentOvlp:
		return f.trimExtent(x.key, x.want)
	case InlineNotOnly, InlineOffset, FileExtentWraps, FileExtentTooBig:
		return f.dropFileExtent(x.key)
	case NotFileExtents:
		return f.eachItem(p.Ino, format.FileExtentKey, f.dropFileExtent)
	case NotDirEntries:
		if err := f.eachItem(p.Ino, format.DirIndexKey, func(k format.Key) error { return f.dropIndexedName(p.Ino, k.Offset) }); err != nil {
			return err
		}
		// DIR_ITEM entries without a DIR_INDEX: their children keep
		// their names elsewhere or get one in lost+found next round.
		return f.eachItem(p.Ino, format.DirItemKey, func(k format.Key) error { return f.del(format.FSTree, k) })
	case DirEntrySelf:
		return f.dropIndexedName(x.dir, x.index)
	case DirIndexRange:
		if x.index >= 2 {
			return f.raiseSeq(x.dir)
		}
		return f.reindexName(x.dir, x.index)
	case DirSeq:
		return f.raiseSeq(p.Ino)
	case InodeKeyOffset:
		return f.rekeyInode(x.key)
	case FSItemType:
		return f.del(format.FSTree, x.key)
	case RefSelfParent:
		names, err := f.allNames(p.Ino)
		if err != nil {
			return err
		}
		for _, n := range names {
			if n.dir == p.Ino {
				if err := f.dropIndexedName(n.dir, n.index); err != nil {
					return err
				}
				// An INODE_REF with no DIR_INDEX behind it.
				if err := f.dropRef(p.Ino, n.dir, n.name); err != nil {
					return err
				}
			}
		}
		if n, err := f.names(p.Ino); err != nil || n > 0 {
			return err
		}
		return f.reconnect(p.Ino)
	}
	return nil
}

// eachItem calls fn on the key of every item of type typ of ino (listed
// first: fn may delete them).
func (f *fixer) eachItem(ino uint64, typ format.KeyType, fn func(format.Key) error) error {
	var keys []format.Key
	err := f.tree(format.FSTree).Scan(format.Key{ObjectID: ino, Type: typ}, format.Key{ObjectID: ino, Type: typ + 1}, func(it format.Item) (bool, error) {
		keys = append(keys, it.Key)
		return len(keys) < maxInodeExtents, nil
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := fn(k); err != nil {
			return err
		}
	}
	return nil
}

// fileExtent returns the decoded file extent item at k (nil: gone or
// undecodable, another problem's).
func (f *fixer) fileExtent(k format.Key) (*format.FileExtentItem, error) {
	b, err := f.tree(format.FSTree).Get(k)
	if errors.Is(err, btree.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	x, err := format.UnmarshalFileExtentItem(b)
	if err != nil {
		return nil, nil
	}
	return x, nil
}

// dropFileExtent deletes the file extent item at k and releases the data
// extent it points at (on an image with snapshots, its reference only).
func (f *fixer) dropFileExtent(k format.Key) error {
	x, err := f.fileExtent(k)
	if err != nil || x == nil {
		return err
	}
	if err := f.del(format.FSTree, k); err != nil {
		return err
	}
	f.nbytes[k.ObjectID] = true
	if x.Type == format.FileExtentInline || x.DiskLogical == 0 {
		return nil
	}
	ek := format.Key{ObjectID: x.DiskLogical, Type: format.ExtentItemKey, Offset: x.DiskLen}
	b, err := f.tree(format.ExtentTree).Get(ek)
	if errors.Is(err, btree.ErrNotFound) {
		return nil // FILE_EXTENT_NO_ITEM: nothing to release
	} else if err != nil {
		return err
	}
	e, err := format.UnmarshalExtentItem(bytes.Clone(b))
	if err != nil {
		return nil
	}
	if e.Refs <= 1 && f.shared() {
		// A snapshot may point at it too (its count low, or fixed later
		// this round): the next round's recount over every tree frees it
		// (EXTENT_UNREFERENCED) if none does. In use wins.
		return nil
	}
	if e.Refs <= 1 {
		return f.dropExtent(ek)
	}
	e.Refs--
	return f.tree(format.ExtentTree).Put(ek, format.MarshalExtentItem(e))
}

// trimExtent cuts the head of the extent at k that overlaps the previous
// one (which ends at prevEnd); an extent wholly inside it, or an inline
// one, is dropped.
func (f *fixer) trimExtent(k format.Key, prevEnd uint64) error {
	x, err := f.fileExtent(k)
	if err != nil || x == nil {
		return err
	}
	end := k.Offset + x.Len()
	if x.Type == format.FileExtentInline || end <= prevEnd || end < k.Offset || prevEnd <= k.Offset {
		return f.dropFileExtent(k)
	}
	to := k
	to.Offset = prevEnd
	if _, err := f.tree(format.FSTree).Get(to); !errors.Is(err, btree.ErrNotFound) {
		if err != nil {
			return err
		}
		return f.dropFileExtent(k) // the tail's place is taken
	}
	cut := prevEnd - k.Offset
	x.Offset += cut
	x.NumBytes -= cut
	if err := f.del(format.FSTree, k); err != nil {
		return err
	}
	f.nbytes[k.ObjectID] = true
	return f.tree(format.FSTree).Insert(to, format.MarshalFileExtentItem(x))
}

// dropIndexedName removes the name at DIR_INDEX idx of dir (with its
// DIR_ITEM entry and INODE_REF); a child left without a name gets one in
// /lost+found.
func (f *fixer) dropIndexedName(dir, idx uint64) error {
	return f.takeIndexedName(dir, idx, func(e format.DirEntry) error {
		if n, err := f.names(e.Ino); err != nil || n > 0 {
			return err
		}
		return f.reconnect(e.Ino)
	})
}

// reindexName moves the name at DIR_INDEX idx of dir, an index below 2
// where none may be, to a new index, as e2fsck re-indexes a directory:
// the name stays (a file whose one name it is would otherwise go to
// lost+found), its DIR_ITEM entry and INODE_REF follow.
func (f *fixer) reindexName(dir, idx uint64) error {
	return f.takeIndexedName(dir, idx, func(e format.DirEntry) error {
		return f.completeName(dir, noIndex, e.Name, e.Ino, e.Type)
	})
}

// takeIndexedName removes the name at DIR_INDEX idx of dir with its
// DIR_ITEM entry and INODE_REF, then calls then with it. An entry that
// does not decode has no name to keep: it goes alone.
func (f *fixer) takeIndexedName(dir, idx uint64, then func(format.DirEntry) error) error {
	b, err := f.tree(format.FSTree).Get(dirIndexKey(dir, idx))
	if err != nil {
		return ignoreNotFound(err)
	}
	e, err := format.UnmarshalDirEntry(b)
	if err != nil {
		return f.del(format.FSTree, dirIndexKey(dir, idx))
	}
	if err := f.dropWholeName(e.Ino, nameOf{dir, idx, e.Name}); err != nil {
		return err
	}
	return then(e)
}

// raiseSeq sets a directory's seq past every index it holds (at least 2).
func (f *fixer) raiseSeq(dir uint64) error {
	seq := uint64(2)
	if it, err := f.tree(format.FSTree).SeekLE(dirIndexKey(dir, noIndex)); err == nil && it.Key.ObjectID == dir && it.Key.Type == format.DirIndexKey {
		seq = max(seq, it.Key.Offset+1)
	} else if err = ignoreNotFound(err); err != nil {
		return err
	}
	return f.inode(dir, func(in *format.InodeItem) {
		if in.FileType() == format.FileTypeDir {
			in.Seq = max(in.Seq, seq)
		}
	})
}

// rekeyInode moves an inode item keyed with a non-zero offset to offset
// 0, or drops it when offset 0 holds one already.
func (f *fixer) rekeyInode(k format.Key) error {
	t := f.tree(format.FSTree)
	b, err := t.Get(k)
	if err != nil {
		return ignoreNotFound(err)
	}
	b = bytes.Clone(b)
	if err := f.del(format.FSTree, k); err != nil {
		return err
	}
	to := format.Key{ObjectID: k.ObjectID, Type: format.InodeItemKey}
	if _, err := t.Get(to); !errors.Is(err, btree.ErrNotFound) {
		return err
	}
	return t.Insert(to, b)
}

// recountBytes sets the inode's nbytes from its file extents, as the
// check counts them.
func (f *fixer) recountBytes(ino uint64) error {
	var n uint64
	lost, count := false, 0
	err := f.tree(format.FSTree).Scan(format.Key{ObjectID: ino, Type: format.FileExtentKey}, format.Key{ObjectID: ino, Type: format.FileExtentKey + 1}, func(it format.Item) (bool, error) {
		x, err := format.UnmarshalFileExtentItem(it.Data)
		if err != nil {
			lost = true
			return false, nil
		}
		if x.Type == format.FileExtentInline || x.DiskLogical != 0 {
			n += x.Len()
		}
		count++
		return count < maxInodeExtents, nil
	})
	if err != nil || lost {
		return err
	}
	return f.inode(ino, func(in *format.InodeItem) { in.NBytes = n })
}
