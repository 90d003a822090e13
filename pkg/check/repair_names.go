package check

// Namespace fixes: a name lives in three items (DIR_ITEM in the
// directory, keyed by name hash; DIR_INDEX in the directory, keyed by its
// index; INODE_REF in the child). A fix completes a triple from the halves
// that exist, removes the halves of a name whose inode does not exist, and
// gives an inode with no name one under /lost+found. The link counts and
// sizes of the inodes a fix touched are recounted before the commit, so a
// crash between two repair transactions leaves no problem the repair made.

import (
	"errors"
	"fmt"
	"slices"
	"syscall"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
)

// maxDirScan bounds the DIR_INDEX items read to find one name.
const maxDirScan = 1 << 20

// lostFound is the directory orphans are reconnected under.
const lostFound = "lost+found"

// isNameFix tells the fixes that add or remove names or inodes.
func isNameFix(c Code) bool {
	switch c {
	case EntryDangling, EntryNoRef, IndexNoItem, RefNoIndex, RefNoDir, RefIndexOther, Orphan, InodeMissing, RootMissing, DirNames, DirLoop:
		return true
	}
	return false
}

// nameFixes are the fixes that add or remove names or inodes, by problem
// code; each lives in the file of its item (repair_dir.go, repair_ref.go,
// repair_inode.go).
var nameFixes = map[Code]fixFunc{
	EntryDangling: (*fixer).fixEntryDangling,
	EntryMismatch: (*fixer).fixEntryMismatch,
	EntryNoRef:    (*fixer).fixEntryNoRef,
	IndexNoItem:   (*fixer).fixIndexNoItem,
	DirNames:      (*fixer).fixDirNames,
	DirLoop:       (*fixer).fixDirLoop,
	RefNoIndex:    (*fixer).fixRefNoIndex,
	RefIndexOther: (*fixer).fixRefIndexOther,
	RefNoDir:      (*fixer).fixRefNoDir,
	InodeMissing:  (*fixer).fixInodeMissing,
	RootMissing:   (*fixer).fixRootMissing,
	Orphan:        (*fixer).fixOrphan,
}

// fixNames applies a name fix. The directory and the child it names are
// recounted before the commit, whatever the fix.
func (f *fixer) fixNames(p Problem) error {
	x := p.fix
	if x == nil {
		return nil
	}
	f.settle[x.dir], f.settle[x.want] = true, true
	if fix := nameFixes[p.Code]; fix != nil {
		return fix(f, p)
	}
	return nil
}

func dirItemKeyOf(dir uint64, name string) format.Key {
	return format.Key{ObjectID: dir, Type: format.DirItemKey, Offset: format.NameHash([]byte(name))}
}

func dirIndexKey(dir, idx uint64) format.Key {
	return format.Key{ObjectID: dir, Type: format.DirIndexKey, Offset: idx}
}

func inodeRefKey(child, dir uint64) format.Key {
	return format.Key{ObjectID: child, Type: format.InodeRefKey, Offset: dir}
}

// getInode returns ino's inode item, nil if it is absent or does not
// decode.
func (f *fixer) getInode(ino uint64) (*format.InodeItem, error) {
	b, err := f.tree(format.FSTree).Get(format.Key{ObjectID: ino, Type: format.InodeItemKey})
	if errors.Is(err, btree.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("inode %d: %w", ino, err)
	}
	in, err := format.UnmarshalInodeItem(b)
	if err != nil {
		return nil, nil
	}
	return in, nil
}

// refNameOdd reports whether an INODE_REF's name is the odd one out: the
// DIR_INDEX at its index names the same inode under another name, and
// no entry of the directory has the ref's name for it. The directory's
// entry then holds (ENTRY_NO_REF's fix gives it its ref) and the ref's
// name is not made up as a new entry, as e2fsck takes names from the
// directories alone.
func (f *fixer) refNameOdd(dir, idx uint64, name string, child uint64) (bool, error) {
	b, err := f.tree(format.FSTree).Get(dirIndexKey(dir, idx))
	if err != nil {
		return false, ignoreNotFound(err)
	}
	e, err := format.UnmarshalDirEntry(b)
	if err != nil || e.Ino != child || e.Name == name {
		return false, nil
	}
	own, err := f.findIndex(dir, name, child)
	return own == noIndex, err
}

// loneItem reports whether name → child in dir is a DIR_ITEM entry with
// no DIR_INDEX while child has a name (an INODE_REF) somewhere.
func (f *fixer) loneItem(dir uint64, name string, child uint64) (bool, error) {
	if idx, err := f.findIndex(dir, name, child); err != nil || idx != noIndex {
		return false, err
	}
	n, err := f.names(child)
	return n > 0, err
}

// findIndex finds the DIR_INDEX of name → child in dir (noIndex if none).
func (f *fixer) findIndex(dir uint64, name string, child uint64) (uint64, error) {
	idx, _, err := f.scanIndex(dir, func(e format.DirEntry) bool { return e.Name == name && e.Ino == child })
	return idx, err
}

// scanIndex finds the first DIR_INDEX in dir whose entry matches (noIndex
// if none).
func (f *fixer) scanIndex(dir uint64, match func(format.DirEntry) bool) (uint64, format.DirEntry, error) {
	found, n := noIndex, 0
	var entry format.DirEntry
	err := f.tree(format.FSTree).Scan(dirIndexKey(dir, 0), dirIndexKey(dir, noIndex), func(it format.Item) (bool, error) {
		n++
		if e, err := format.UnmarshalDirEntry(it.Data); err == nil && match(e) {
			found, entry = it.Key.Offset, e
			return false, nil
		}
		return n < maxDirScan, nil
	})
	return found, entry, err
}

// indexOwner is the inode that name in dir belongs to by its DIR_INDEX
// and that inode's INODE_REF, when the two agree (0: they do not).
func (f *fixer) indexOwner(dir uint64, name string) (uint64, error) {
	idx, e, err := f.scanIndex(dir, func(e format.DirEntry) bool { return e.Name == name })
	if err != nil || idx == noIndex {
		return 0, err
	}
	if ok, err := f.refAt(e.Ino, dir, idx, name); err != nil || !ok {
		return 0, err
	}
	return e.Ino, nil
}

// refAt reports whether child's INODE_REF names name at idx in dir.
func (f *fixer) refAt(child, dir, idx uint64, name string) (bool, error) {
	ri, ok, err := lookup{t: f.tree(format.FSTree)}.refIndex(child, dir, name)
	return ok && ri == idx, err
}

// itemToIndex points the DIR_ITEM entry of name in dir at child when the
// DIR_INDEX at idx and child's INODE_REF agree on it (two halves of
// three; the entry's own inode keeps its other names).
func (f *fixer) itemToIndex(dir, idx uint64, name string, child uint64, t format.FileType) error {
	if ok, err := f.refAt(child, dir, idx, name); err != nil || !ok {
		return err
	}
	return f.editDirItem(dir, name, func(es []format.DirEntry) []format.DirEntry {
		for i := range es {
			if es[i].Name == name {
				es[i].Ino, es[i].Type = child, t
			}
		}
		return es
	})
}

// indexToItem points the DIR_INDEX at idx of dir at the inode the
// DIR_ITEM entry of name names, when that inode's INODE_REF gives the
// name this index: the DIR_INDEX is then the odd one of the three.
func (f *fixer) indexToItem(dir, idx uint64, name string) error {
	de, ok, err := lookup{t: f.tree(format.FSTree)}.dirItem(dir, name)
	if err != nil || !ok {
		return err
	}
	if ok, err := f.refAt(de.Ino, dir, idx, name); err != nil || !ok {
		return err
	}
	in, err := f.getInode(de.Ino)
	if err != nil || in == nil {
		return err
	}
	e := format.DirEntry{Ino: de.Ino, Type: in.FileType(), Name: name}
	return f.tree(format.FSTree).Put(dirIndexKey(dir, idx), format.MarshalDirEntry(e))
}

// dropName removes name → child from dir's DIR_ITEM and DIR_INDEX.
func (f *fixer) dropName(dir, idx uint64, name string, child uint64) error {
	if idx == noIndex {
		var err error
		if idx, err = f.findIndex(dir, name, child); err != nil {
			return err
		}
	}
	if idx != noIndex {
		if err := f.del(format.FSTree, dirIndexKey(dir, idx)); err != nil {
			return err
		}
	}
	return f.editDirItem(dir, name, func(es []format.DirEntry) []format.DirEntry {
		out := es[:0]
		for _, e := range es {
			if e.Name != name || e.Ino != child {
				out = append(out, e)
			}
		}
		return out
	})
}

// editDirItem rewrites the DIR_ITEM holding name (deleted when empty).
func (f *fixer) editDirItem(dir uint64, name string, change func([]format.DirEntry) []format.DirEntry) error {
	t := f.tree(format.FSTree)
	k := dirItemKeyOf(dir, name)
	var es []format.DirEntry
	b, err := t.Get(k)
	switch {
	case errors.Is(err, btree.ErrNotFound):
	case err != nil:
		return fmt.Errorf("directory %d entry %q: %w", dir, name, err)
	default:
		if es, err = format.UnmarshalDirEntries(b); err != nil {
			return nil // does not decode: FS_ITEM_BAD, not this fix's
		}
	}
	es = change(es)
	if len(es) == 0 {
		return f.del(format.FSTree, k)
	}
	return t.Put(k, format.MarshalDirEntries(es))
}

// completeName makes the triple of name → child in dir whole: the
// DIR_INDEX (at idx, or a new index), the DIR_ITEM entry and the
// INODE_REF.
func (f *fixer) completeName(dir, idx uint64, name string, child uint64, t format.FileType) error {
	if dir == child {
		// A name of an inode in itself is never made whole (the
		// REF_SELF_PARENT fix drops its INODE_REF in the same round).
		return nil
	}
	d, err := f.getInode(dir)
	if err != nil || d == nil || d.FileType() != format.FileTypeDir {
		return err
	}
	if idx == noIndex {
		if idx, err = f.findIndex(dir, name, child); err != nil {
			return err
		}
	}
	tr := f.tree(format.FSTree)
	e := format.DirEntry{Ino: child, Type: t, Name: name}
	if idx == noIndex || idx < 2 {
		idx = d.Seq
	}
	if _, err := tr.Get(dirIndexKey(dir, idx)); errors.Is(err, btree.ErrNotFound) {
		if err := tr.Put(dirIndexKey(dir, idx), format.MarshalDirEntry(e)); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	if idx >= d.Seq {
		if err := f.inode(dir, func(in *format.InodeItem) { in.Seq = idx + 1 }); err != nil {
			return err
		}
	}
	err = f.editDirItem(dir, name, func(es []format.DirEntry) []format.DirEntry {
		for _, x := range es {
			if x.Name == name {
				return es
			}
		}
		return append(es, e)
	})
	if err != nil {
		return err
	}
	return f.addRef(child, dir, idx, name)
}

// addRef adds name (at idx in dir) to child's INODE_REF unless there.
func (f *fixer) addRef(child, dir, idx uint64, name string) error {
	tr := f.tree(format.FSTree)
	var refs []format.InodeRef
	b, err := tr.Get(inodeRefKey(child, dir))
	switch {
	case errors.Is(err, btree.ErrNotFound):
	case err != nil:
		return err
	default:
		if refs, err = format.UnmarshalInodeRefs(b); err != nil {
			return nil
		}
	}
	for _, r := range refs {
		if r.Name == name {
			return nil
		}
	}
	// A name at the same index is another's claim on the DIR_INDEX this
	// name has: one index holds one name, so it gives way (REF_INDEX_OTHER).
	refs = slices.DeleteFunc(refs, func(r format.InodeRef) bool { return r.Index == idx })
	return tr.Put(inodeRefKey(child, dir), format.MarshalInodeRefs(append(refs, format.InodeRef{Index: idx, Name: name})))
}

// dropRef removes name from child's names in dir.
func (f *fixer) dropRef(child, dir uint64, name string) error {
	tr := f.tree(format.FSTree)
	k := inodeRefKey(child, dir)
	b, err := tr.Get(k)
	if errors.Is(err, btree.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	refs, err := format.UnmarshalInodeRefs(b)
	if err != nil {
		return nil
	}
	out := refs[:0]
	for _, r := range refs {
		if r.Name != name {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return f.del(format.FSTree, k)
	}
	return tr.Put(k, format.MarshalInodeRefs(out))
}

// reconnect gives an inode without a name the name #INO in /lost+found.
func (f *fixer) reconnect(ino uint64) error {
	in, err := f.getInode(ino)
	if err != nil || in == nil {
		return err
	}
	lf, err := f.lostFound()
	if err != nil || lf == 0 {
		return err
	}
	name := fmt.Sprintf("#%d", ino)
	f.settle[lf], f.settle[ino] = true, true
	return f.completeName(lf, noIndex, name, ino, in.FileType())
}

// lostFound returns /lost+found, creating it (mode 0700, as mke2fs makes
// it) when the root has no such name; 0 if the root cannot take it.
func (f *fixer) lostFound() (uint64, error) {
	if f.lf != 0 {
		return f.lf, nil
	}
	tr := f.tree(format.FSTree)
	b, err := tr.Get(dirItemKeyOf(format.RootDirIno, lostFound))
	switch {
	case err == nil:
		es, err := format.UnmarshalDirEntries(b)
		if err != nil {
			return 0, nil
		}
		for _, e := range es {
			if e.Name == lostFound {
				if e.Type != format.FileTypeDir {
					return 0, nil // a file holds the name: leave the orphan
				}
				f.lf = e.Ino
				return f.lf, nil
			}
		}
	case !errors.Is(err, btree.ErrNotFound):
		return 0, err
	}
	root, err := f.getInode(format.RootDirIno)
	if err != nil || root == nil || root.FileType() != format.FileTypeDir {
		return 0, err
	}
	last, err := tr.SeekLE(format.Key{ObjectID: format.CsumObjectID - 1, Type: 0xFF, Offset: ^uint64(0)})
	if err != nil {
		return 0, err
	}
	ino := max(last.Key.ObjectID+1, format.FirstFreeIno)
	now := root.Mtime
	lf := &format.InodeItem{Generation: f.tx.Generation(), Nlink: 2, Mode: syscall.S_IFDIR | 0o700, Seq: 2,
		Atime: now, Mtime: now, Ctime: now, Btime: now}
	if err := tr.Insert(format.Key{ObjectID: ino, Type: format.InodeItemKey}, format.MarshalInodeItem(lf)); err != nil {
		return 0, err
	}
	if err := f.completeName(format.RootDirIno, noIndex, lostFound, ino, format.FileTypeDir); err != nil {
		return 0, err
	}
	f.lf = ino
	f.settle[ino], f.settle[format.RootDirIno] = true, true
	return ino, nil
}

// names counts the names of ino (all its INODE_REF entries).
func (f *fixer) names(ino uint64) (uint64, error) {
	var n uint64
	err := f.tree(format.FSTree).Scan(inodeRefKey(ino, 0), format.Key{ObjectID: ino, Type: format.InodeRefKey + 1}, func(it format.Item) (bool, error) {
		if refs, err := format.UnmarshalInodeRefs(it.Data); err == nil {
			n += uint64(len(refs))
		}
		return n < maxDirScan, nil
	})
	return n, err
}

// settleAll recounts the inodes the name fixes touched: a directory's
// size (its DIR_INDEX entries) and nlink (2 + subdirectories), another
// inode's nlink (its names, when it has any).
func (f *fixer) settleAll() error {
	for ino := range f.settle {
		if ino == 0 {
			continue
		}
		in, err := f.getInode(ino)
		if err != nil || in == nil {
			if err != nil {
				return err
			}
			continue
		}
		if in.FileType() != format.FileTypeDir {
			n, err := f.names(ino)
			if err != nil {
				return err
			}
			if n > 0 && uint64(in.Nlink) != n {
				if err := f.inode(ino, func(in *format.InodeItem) { in.Nlink = uint32(n) }); err != nil {
					return err
				}
			}
			continue
		}
		var entries, subdirs uint64
		err = f.tree(format.FSTree).Scan(dirIndexKey(ino, 0), dirIndexKey(ino, noIndex), func(it format.Item) (bool, error) {
			entries++
			if e, err := format.UnmarshalDirEntry(it.Data); err == nil && e.Type == format.FileTypeDir {
				subdirs++
			}
			return entries < maxDirScan, nil
		})
		if err != nil {
			return err
		}
		if in.Size != entries || uint64(in.Nlink) != 2+subdirs {
			if err := f.inode(ino, func(in *format.InodeItem) { in.Size, in.Nlink = entries, uint32(2+subdirs) }); err != nil {
				return err
			}
		}
	}
	clear(f.settle)
	for ino := range f.nbytes {
		if err := f.recountBytes(ino); err != nil {
			return err
		}
	}
	clear(f.nbytes)
	return nil
}

// maxInodeItems bounds the items read to rebuild one inode item.
const maxInodeItems = 1 << 20

// recreateInode makes a new inode item for ino from the items it still
// has (as btrfs check does): a directory if it has entries, else a
// regular file as long as its extents reach; owner root, mode 0700/0600.
// Link counts, sizes and nbytes are the next round's fixes.
func (f *fixer) recreateInode(ino uint64) error {
	dir, n := ino == format.RootDirIno, 0
	var end, nbytes uint64
	err := f.tree(format.FSTree).Scan(format.Key{ObjectID: ino}, format.Key{ObjectID: ino + 1}, func(it format.Item) (bool, error) {
		n++
		switch it.Key.Type {
		case format.DirItemKey, format.DirIndexKey:
			dir = true
		case format.FileExtentKey:
			if x, err := format.UnmarshalFileExtentItem(it.Data); err == nil {
				end = max(end, it.Key.Offset+x.Len())
				if x.Type == format.FileExtentInline || x.DiskLogical != 0 {
					nbytes += x.Len()
				}
			}
		}
		return n < maxInodeItems, nil
	})
	if err != nil {
		return err
	}
	in := &format.InodeItem{Generation: f.tx.Generation(), Nlink: 1, Mode: syscall.S_IFREG | 0o600, Size: end, NBytes: nbytes}
	if dir {
		in.Mode, in.Nlink, in.Size, in.NBytes, in.Seq = syscall.S_IFDIR|0o700, 2, 0, 0, 2
		if ino == format.RootDirIno {
			in.Mode = syscall.S_IFDIR | 0o755
		}
		// Past every index the directory holds (as raiseSeq: one that
		// does not read is not none, and seq 2 would reuse its indexes).
		if it, err := f.tree(format.FSTree).SeekLE(dirIndexKey(ino, noIndex)); err == nil && it.Key.ObjectID == ino && it.Key.Type == format.DirIndexKey {
			in.Seq = max(in.Seq, it.Key.Offset+1)
		} else if err = ignoreNotFound(err); err != nil {
			return err
		}
	}
	return f.tree(format.FSTree).Insert(format.Key{ObjectID: ino, Type: format.InodeItemKey}, format.MarshalInodeItem(in))
}

// nameOf is one name of an inode, from its INODE_REF items.
type nameOf struct {
	dir, index uint64
	name       string
}

// allNames lists the names of ino (bounded).
func (f *fixer) allNames(ino uint64) ([]nameOf, error) {
	var out []nameOf
	err := f.tree(format.FSTree).Scan(inodeRefKey(ino, 0), format.Key{ObjectID: ino, Type: format.InodeRefKey + 1}, func(it format.Item) (bool, error) {
		refs, err := format.UnmarshalInodeRefs(it.Data)
		if err != nil {
			return true, nil
		}
		for _, r := range refs {
			out = append(out, nameOf{it.Key.Offset, r.Index, r.Name})
		}
		return len(out) < maxDirScan, nil
	})
	return out, err
}

// dropWholeName removes one name of child: its DIR_ITEM entry, its
// DIR_INDEX and its INODE_REF.
func (f *fixer) dropWholeName(child uint64, n nameOf) error {
	f.settle[n.dir], f.settle[child] = true, true
	if err := f.dropName(n.dir, n.index, n.name, child); err != nil {
		return err
	}
	return f.dropRef(child, n.dir, n.name)
}

// keepFirstName leaves a directory with the first of its names (a
// directory has one parent; the others are hard links it may not have).
func (f *fixer) keepFirstName(dir uint64) error {
	names, err := f.allNames(dir)
	if err != nil || len(names) < 2 {
		return err
	}
	for _, n := range names[1:] {
		if err := f.dropWholeName(dir, n); err != nil {
			return err
		}
	}
	return nil
}

// relink moves a directory out of a loop: its names go, and it gets one
// in /lost+found.
func (f *fixer) relink(dir uint64) error {
	names, err := f.allNames(dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := f.dropWholeName(dir, n); err != nil {
			return err
		}
	}
	return f.reconnect(dir)
}
