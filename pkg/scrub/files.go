package scrub

import (
	"errors"
	"sort"
	"strings"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
)

// maxDepth bounds a path walk (a loop of names is corruption).
const maxDepth = 4096

// mapFiles names the files whose data had bad copies. Version 1 images
// carry no data back references (FORMAT.md §4.7), so one walk of the fs
// tree's file extent items finds the inodes whose extents hold a bad
// sector; each inode's first name is then followed up to the root.
// Memory is bounded by maxErrors (the bad sectors and their inodes).
func (s *scrubber) mapFiles() error {
	bad := s.sortedBad()
	if len(bad) == 0 {
		return nil
	}
	inos := map[uint64]badSpan{} // ino -> what its bad ranges add up to
	err := s.scan(format.FSTree, format.Key{}, format.Key{ObjectID: ^uint64(0), Type: ^format.KeyType(0), Offset: ^uint64(0)}, func(it format.Item) (bool, error) {
		if it.Key.Type != format.FileExtentKey {
			return true, nil
		}
		x, err := format.UnmarshalFileExtentItem(it.Data)
		if err != nil || x.Type == format.FileExtentInline || x.DiskLogical == 0 {
			return true, nil // fsck's to report
		}
		// The ranges do not overlap: only the one before the extent's
		// start may reach into it.
		i := sort.Search(len(bad), func(i int) bool { return bad[i] >= x.DiskLogical })
		if i > 0 && bad[i-1]+s.badData[bad[i-1]].n > x.DiskLogical {
			i--
		}
		for ; i < len(bad) && bad[i] < x.DiskLogical+x.DiskLen; i++ {
			b, f := s.badData[bad[i]], inos[it.Key.ObjectID]
			f.unc, f.left = f.unc || b.unc, f.left || b.left
			inos[it.Key.ObjectID] = f
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	for ino, f := range inos {
		p, _ := s.pathOf(ino) // no path: the report gives the inode
		s.rep.Files = append(s.rep.Files, File{Path: p, Ino: ino, Uncorrectable: f.unc, Repaired: s.opt.Repair && !f.left})
	}
	sort.Slice(s.rep.Files, func(a, b int) bool { return s.rep.Files[a].Ino < s.rep.Files[b].Ino })
	return nil
}

// pathOf follows ino's first name up to the root directory ("" and a
// corruption error when a name is missing or the walk loops).
func (s *scrubber) pathOf(ino uint64) (string, error) {
	t := s.fs.Tree(format.FSTree)
	var names []string
	for cur := ino; cur != format.RootDirIno; {
		if len(names) >= maxDepth {
			return "", format.ErrCorrupt
		}
		it, err := t.SeekLE(format.Key{ObjectID: cur, Type: format.InodeRefKey, Offset: ^uint64(0)})
		if errors.Is(err, btree.ErrNotFound) || (err == nil && (it.Key.ObjectID != cur || it.Key.Type != format.InodeRefKey)) {
			return "", format.ErrCorrupt
		}
		if err != nil {
			return "", err
		}
		refs, err := format.UnmarshalInodeRefs(it.Data)
		if err != nil || len(refs) == 0 {
			return "", format.ErrCorrupt
		}
		names = append(names, refs[0].Name)
		cur = it.Key.Offset
	}
	for a, b := 0, len(names)-1; a < b; a, b = a+1, b-1 {
		names[a], names[b] = names[b], names[a]
	}
	return "/" + strings.Join(names, "/"), nil
}
