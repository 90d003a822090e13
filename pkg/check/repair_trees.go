package check

import (
	"bytes"
	"errors"
	"fmt"
	"sort"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
	"github.com/ddfs/ddfs/pkg/codec"
	"github.com/ddfs/ddfs/pkg/store"
)

// maxDirtyNodes bounds one repair transaction's memory: past it the
// transaction commits and the next one continues.
const maxDirtyNodes = 4096

// fixer applies tree fixes inside store transactions.
type fixer struct {
	st  *store.FS
	tx  *store.Txn
	opt Options
	// touched: inodes a name is restored to this round (not orphans).
	touched map[uint64]bool
	// settle: inodes whose names or entries a fix changed; their link
	// counts and directory sizes are recounted before the commit, so
	// every commit is a state with no problem the repair made.
	settle map[uint64]bool
	// recreated: inodes whose missing inode item this round makes anew
	// (their names stay).
	recreated map[uint64]bool
	// nbytes: inodes whose file extents a fix changed; their nbytes is
	// recounted before the commit.
	nbytes map[uint64]bool
	// dropped: file extents this round drops (the size is not grown over
	// them).
	dropped map[format.Key]bool
	lf      uint64 // /lost+found, once found or made
	// recount: the first commit stores counters recounted from its
	// trees (COUNTERS_WRONG); later ones keep them from there.
	recount bool
}

// fixTrees fixes the problems that change trees, in transactions. Device
// items are changed by their own transaction (store.UpdateDevice). Any
// commit rewrites every superblock copy of every device, so superblock
// problems need a commit and nothing more.
func fixTrees(st *store.FS, todo []Problem, opt Options) error {
	f := &fixer{st: st, opt: opt, touched: map[uint64]bool{}, recreated: map[uint64]bool{}, settle: map[uint64]bool{}, nbytes: map[uint64]bool{}, dropped: map[format.Key]bool{}}
	devs := f.plan(todo)
	if err := f.begin(); err != nil {
		return err
	}
	// Block group usage first, before this transaction allocates: the
	// commit then records the checked usage plus its own changes.
	f.setUsed(todo)
	// Values first (absolute, as checked), then the name fixes, whose
	// inodes are recounted before each commit.
	sort.SliceStable(todo, func(i, j int) bool { return fixOrder(todo[i].Code) < fixOrder(todo[j].Code) })
	for _, p := range todo {
		if err := f.fix(p); err != nil {
			// A fix that cannot read what it changes drops the whole
			// transaction: its problems stay, reported as left.
			f.tx.Abort()
			return nil
		}
		if f.tx.DirtyNodes() > f.batch() {
			if err := f.settleAll(); err != nil {
				f.tx.Abort()
				return nil
			}
			if err := f.commit(); err != nil {
				return err
			}
			if err := f.begin(); err != nil {
				return err
			}
		}
	}
	if err := f.settleAll(); err != nil {
		f.tx.Abort()
		return nil
	}
	if err := f.commit(); err != nil {
		return err
	}
	return f.updateDevices(devs)
}

// plan notes what later fixes need to know of the others (a recount, the
// inodes made anew, the file extents dropped) and returns the device
// problems, which have their own transaction.
func (f *fixer) plan(todo []Problem) (devs []Problem) {
	for _, p := range todo {
		switch p.Code {
		case Counters:
			f.recount = true
		case DevBytesUsed:
			devs = append(devs, p)
		case InodeMissing:
			f.recreated[p.Ino] = true
		case InlineNotOnly, InlineOffset, FileExtentWraps, FileExtentTooBig:
			if p.fix != nil {
				f.dropped[p.fix.key] = true
			}
		}
	}
	return devs
}

// setUsed sets the usage of the block groups todo finds wrong to the
// checked value.
func (f *fixer) setUsed(todo []Problem) {
	for _, p := range todo {
		if (p.Code == BGUsed || p.Code == BGMissing) && p.fix != nil { // a missing item is written by the commit
			for _, bg := range f.st.BlockGroups() {
				if bg.Chunk.Logical == p.Logical {
					bg.Used = p.fix.want
				}
			}
		}
	}
}

// updateDevices sets each device's bytes used, one transaction each.
func (f *fixer) updateDevices(devs []Problem) error {
	for _, p := range devs {
		if p.fix == nil {
			continue
		}
		if err := f.opt.cancelled(); err != nil {
			return err
		}
		want := p.fix.want
		if err := f.st.UpdateDevice(p.DevID, func(d *format.DevItem) error { d.BytesUsed = want; return nil }); err != nil {
			return fmt.Errorf("device %d bytes used: %w", p.DevID, err)
		}
	}
	return nil
}

// batch is the dirty nodes at which a repair transaction commits.
func (f *fixer) batch() int {
	if f.opt.BatchNodes > 0 {
		return f.opt.BatchNodes
	}
	return maxDirtyNodes
}

func (f *fixer) begin() error {
	if err := f.opt.cancelled(); err != nil {
		return err
	}
	tx, err := f.st.Begin()
	f.tx = tx
	if err == nil && f.recount {
		tx.RecountCounters()
		f.recount = false
	}
	return err
}

func (f *fixer) commit() error {
	if err := f.tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

func (f *fixer) tree(id format.TreeID) *btree.Tree { return f.tx.Tree(id) }

// fixFunc applies the fix of problem p to the running transaction.
type fixFunc func(f *fixer, p Problem) error

// treeFixes are the fixes of one problem each, by problem code; each
// lives in the file of its item (repair_inode.go, repair_dir.go,
// repair_xattr.go, repair_fs.go, repair_extents.go, repair_csum.go,
// repair_dedupe.go). A code without one is a layout fix
// (repair_layout.go) or a name fix (repair_names.go).
var treeFixes = map[Code]fixFunc{
	Nlink:              (*fixer).fixNlink,
	DirNlink:           (*fixer).fixNlink,
	DirSize:            (*fixer).fixDirSize,
	NBytes:             (*fixer).fixNBytes,
	SpecialSize:        (*fixer).fixSpecialSize,
	Rdev:               (*fixer).fixRdev,
	InodeFlags:         (*fixer).fixInodeFlags,
	ExtentBeyondSize:   (*fixer).fixExtentBeyondSize,
	EntryType:          (*fixer).fixEntryType,
	DirItemHash:        (*fixer).fixDirItemHash,
	XattrHash:          (*fixer).fixXattrHash,
	FSItemBad:          (*fixer).fixFSItemBad,
	PropItem:           (*fixer).fixPropItem,
	ExtentRefs:         (*fixer).fixExtentRefs,
	ExtentReadAs:       (*fixer).fixExtentReadAs,
	ExtentUnreferenced: (*fixer).fixExtentUnreferenced,
	FileExtentNoItem:   (*fixer).fixFileExtentNoItem,
	MetaLeaked:         (*fixer).fixMetaLeaked,
	MetaRefs:           (*fixer).fixMetaRefs,
	MetaMissing:        (*fixer).fixMetaMissing,
	BGOrphan:           (*fixer).fixBGOrphan,
	DiscardBad:         (*fixer).fixDiscardBad,
	CsumOrphan:         (*fixer).fixCsumOrphan,
	CsumItemBad:        (*fixer).fixCsumItemBad,
	DedupeEntries:      (*fixer).fixDedupeEntries,
	DedupeStale:        (*fixer).fixDedupeStale,
	DedupeItemBad:      (*fixer).fixDedupeItem,
	DedupePrefix:       (*fixer).fixDedupeItem,
	DedupeLength:       (*fixer).fixDedupeItem,
	DedupeHash:         (*fixer).fixDedupeItem,
}

// shared reports whether the image has snapshots (fs-tree nodes and data
// extents other trees may point at).
func (f *fixer) shared() bool { return f.st.Super().Incompat&format.IncompatSnapshots != 0 }

// fix applies the fix of one problem to the running transaction.
func (f *fixer) fix(p Problem) error {
	if p.fix == nil {
		return nil // superblocks (any commit rewrites them) or not fixable here
	}
	if fix := treeFixes[p.Code]; fix != nil {
		return fix(f, p)
	}
	if isLayoutFix(p.Code) {
		return f.fixLayout(p)
	}
	return f.fixNames(p)
}

// fixDiscardBad drops a bad item of the discard tree.
func (f *fixer) fixDiscardBad(p Problem) error {
	if p.fix.key.Type == format.DiscardItemKey {
		return nil // the store drops a record that fits no chunk at commit
	}
	return f.del(format.DiscardTree, p.fix.key)
}

// fixOrder runs deletions of bad items before the value fixes, those
// before the name fixes.
func fixOrder(c Code) int {
	switch {
	case c == CsumItemBad || c == FSItemBad:
		return 0
	case isNameFix(c) || isLayoutFix(c):
		return 2
	}
	return 1
}

// inode changes the inode item of ino.
func (f *fixer) inode(ino uint64, change func(*format.InodeItem)) error {
	return f.item(format.FSTree, format.Key{ObjectID: ino, Type: format.InodeItemKey}, func(b []byte) ([]byte, error) {
		in, err := format.UnmarshalInodeItem(b)
		if err != nil {
			return nil, err
		}
		change(in)
		return format.MarshalInodeItem(in), nil
	})
}

// extentItem changes the data extent item at k.
func (f *fixer) extentItem(k format.Key, change func(*format.ExtentItem)) error {
	return f.item(format.ExtentTree, k, func(b []byte) ([]byte, error) {
		e, err := format.UnmarshalExtentItem(b)
		if err != nil {
			return nil, err
		}
		change(e)
		return format.MarshalExtentItem(e), nil
	})
}

// item rewrites one item; a missing item is left alone (an earlier fix
// of the round may have removed it).
func (f *fixer) item(id format.TreeID, k format.Key, change func([]byte) ([]byte, error)) error {
	t := f.tree(id)
	b, err := t.Get(k)
	if errors.Is(err, btree.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%v tree item %v: %w", id, k, err)
	}
	nb, err := change(bytes.Clone(b))
	if err != nil {
		return nil // does not decode: another problem, not this fix's
	}
	if err := t.Put(k, nb); err != nil {
		return fmt.Errorf("%v tree item %v: %w", id, k, err)
	}
	return nil
}

// del deletes one item; a missing one is already gone.
func (f *fixer) del(id format.TreeID, k format.Key) error {
	if err := f.tree(id).Delete(k); err != nil && !errors.Is(err, btree.ErrNotFound) {
		return fmt.Errorf("%v tree item %v: %w", id, k, err)
	}
	return nil
}

// entryType sets the type of a name in its DIR_INDEX and DIR_ITEM to the
// type of the inode it names.
func (f *fixer) entryType(x *fixData) error {
	e := format.DirEntry{Ino: x.want, Type: x.ftype, Name: x.name}
	err := f.item(format.FSTree, dirIndexKey(x.dir, x.index), func(b []byte) ([]byte, error) {
		old, err := format.UnmarshalDirEntry(b)
		if err != nil || old.Ino != e.Ino || old.Name != e.Name {
			return nil, fmt.Errorf("entry changed")
		}
		return format.MarshalDirEntry(e), nil
	})
	if err != nil {
		return err
	}
	return f.editDirItem(x.dir, x.name, func(es []format.DirEntry) []format.DirEntry {
		for i := range es {
			if es[i].Name == x.name && es[i].Ino == x.want {
				es[i].Type = x.ftype
			}
		}
		return es
	})
}

// reindex rebuilds the dedupe index entry of the data extent at logical
// from the extent (its data hashed as fsys hashes a block); when the data
// no longer hashes to the extent's prefix (changed since, or unreadable)
// the extent loses its indexed mark instead: it is no longer offered for
// sharing, and only future writes miss this block.
func (f *fixer) reindex(logical uint64) error {
	var k format.Key
	var e *format.ExtentItem
	err := f.tree(format.ExtentTree).Scan(format.Key{ObjectID: logical, Type: format.ExtentItemKey}, format.Key{ObjectID: logical, Type: format.ExtentItemKey + 1}, func(it format.Item) (bool, error) {
		k = it.Key
		e, _ = format.UnmarshalExtentItem(it.Data)
		return false, nil
	})
	if err != nil || e == nil || e.Flags&format.ExtentFlagDeduped == 0 {
		return err
	}
	if d, ok := f.blockHash(k, e); ok {
		key := format.Key{ObjectID: e.HashPrefix, Type: format.DedupeItemKey, Offset: logical}
		return f.tree(format.DedupeTree).Put(key, format.MarshalDedupeItem(d))
	}
	return f.item(format.ExtentTree, k, func(b []byte) ([]byte, error) {
		e, err := format.UnmarshalExtentItem(b)
		if err != nil {
			return nil, err
		}
		e.Flags &^= format.ExtentFlagDeduped
		return format.MarshalExtentItem(e), nil
	})
}

// maxBlock bounds the data reindex reads (dedupe blocks are at most 8 MiB,
// content-defined ones up to four times the block).
const maxBlock = 32 << 20

// blockHash hashes the extent's data with the hash whose prefix the
// extent records.
func (f *fixer) blockHash(k format.Key, e *format.ExtentItem) (*format.DedupeItem, bool) {
	if k.Offset == 0 || k.Offset > maxBlock || e.RAMBytes > maxBlock {
		return nil, false
	}
	disk := make([]byte, k.Offset)
	if f.readAny(k.ObjectID, disk) != nil {
		return nil, false
	}
	data := disk
	if e.Compression != format.CompressNone {
		var err error
		if data, err = codec.Decompress(disk, e.Compression, e.RAMBytes); err != nil {
			return nil, false
		}
	}
	// The one rebuild rule (FORMAT.md §6.8), shared with dedupe-tool index
	// rebuild: an uncompressed tail block is found inside its padding.
	return format.RebuildDedupeItem(data, e.HashPrefix, e.Compression == format.CompressNone, format.CsumSHA256)
}
