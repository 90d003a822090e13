package fsys

import (
	"fmt"
	"slices"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/store"
)

// RegularFiles calls fn with every regular file, in inode order, from one
// walk of the fs tree's items, and returns their numbers: a whole-image
// walk that reads the tree's leaves once, where a walk of the folders
// from the root reads them all and then looks every file up (a dedupe
// run lists its files this way while it prints their blocks). fn may
// look up the tree meanwhile; it sees the committed state.
//
// The walk holds the folders' entries it meets against the inodes: an
// entry typed as a file or a folder must name an inode of that type, or
// the walk ends in format.ErrCorrupt, as a folder walk would (fsck's
// ENTRY_DANGLING, ENTRY_TYPE). That comes after fn has seen the files, so
// callers change nothing before RegularFiles returns. A file no entry
// names (fsck's UNREACHABLE) is listed: its data is as sound as any.
func (f *FS) RegularFiles(fn func(*Inode) error) ([]uint64, error) {
	if f.tx != nil {
		return nil, fmt.Errorf("file walk: a transaction is running: %w", store.ErrBusy)
	}
	var files, dirs, fileRefs, dirRefs []uint64
	err := f.rtree(format.FSTree).Scan(inodeKey(format.RootDirIno), format.Key{ObjectID: format.CsumObjectID}, func(it format.Item) (bool, error) {
		switch it.Key.Type {
		case format.InodeItemKey:
			item, err := format.UnmarshalInodeItem(it.Data)
			if err != nil {
				return false, fmt.Errorf("inode %d: %w", it.Key.ObjectID, err)
			}
			in := &Inode{Ino: it.Key.ObjectID, InodeItem: *item}
			switch {
			case in.IsDir():
				dirs = append(dirs, in.Ino)
			case in.IsRegular():
				files = append(files, in.Ino)
				if err := fn(in); err != nil {
					return false, err
				}
			}
		case format.DirIndexKey:
			e, err := format.UnmarshalDirEntryView(it.Data)
			if err != nil {
				return false, fmt.Errorf("directory %d index %d: %w", it.Key.ObjectID, it.Key.Offset, err)
			}
			switch e.Type {
			case format.FileTypeRegular:
				fileRefs = append(fileRefs, e.Ino)
			case format.FileTypeDir:
				dirRefs = append(dirRefs, e.Ino)
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	if err := allIn(fileRefs, files, "a file"); err != nil {
		return nil, err
	}
	return files, allIn(dirRefs, dirs, "a folder")
}

// allIn checks that every inode entries name is in have (sorted).
func allIn(named, have []uint64, what string) error {
	slices.Sort(named)
	for _, ino := range slices.Compact(named) {
		if _, ok := slices.BinarySearch(have, ino); !ok {
			return fmt.Errorf("inode %d: named as %s, is none (missing or another type): %w", ino, what, format.ErrCorrupt)
		}
	}
	return nil
}
