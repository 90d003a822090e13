package check

import (
	"errors"
	"sort"
	"strings"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
)

// Bounds of the path lookups: problems named by path, and the depth of
// one path (a loop or a very deep tree ends the walk).
const (
	maxPaths     = 1000
	maxPathDepth = 256
)

// dataOwners sets Ino on the data problems (bad data copies) from the
// file extents that point at their extent: the first such file in key
// order. Only an image with such problems pays for it: one more scan of
// the fs tree's items (the walk keeps no inode per extent: 8 bytes an
// extent, 32 MB at 4M files).
func (c *checker) dataOwners() {
	s := &c.fs
	ext := s.extents.list
	sorted := sort.SliceIsSorted(ext, func(i, j int) bool { return ext[i].logical < ext[j].logical })
	if !sorted {
		return // the extent tree is out of order (reported); no owners
	}
	want := map[extentID][]int{} // extent -> its problems
	for i := range c.rep.Problems {
		p := &c.rep.Problems[i]
		if p.Pass != PassData || p.Ino != 0 {
			continue
		}
		j := sort.Search(len(ext), func(j int) bool { return ext[j].end() > p.Logical })
		if j < len(ext) && ext[j].logical <= p.Logical && s.usedBy(j).n > 0 {
			want[ext[j].id()] = append(want[ext[j].id()], i)
		}
	}
	root := c.sb.Roots.Root(format.FSTree)
	if len(want) == 0 || root.Logical == 0 {
		return
	}
	t := btree.New(&nodeReader{c: c, cache: map[uint64]*format.Node{}}, format.FSTree, root)
	// A node that cannot be read leaves the owners after it unset, and
	// the fs tree incomplete (it may be one the walk read but a reader
	// refuses: unread).
	err := t.Scan(format.Key{}, format.MaxKey, func(it format.Item) (bool, error) {
		var x format.FileExtentItem
		if it.Key.Type != format.FileExtentKey || format.DecodeFileExtentItem(it.Data, &x) != nil || x.Type == format.FileExtentInline {
			return true, nil
		}
		id := extentID{x.DiskLogical, x.DiskLen}
		for _, i := range want[id] {
			c.rep.Problems[i].Ino = it.Key.ObjectID
		}
		delete(want, id)
		return len(want) > 0, nil
	})
	c.unread(err)
}

// setPaths names the file of every problem about an inode, walking its
// first INODE_REF up to the root. An inode without a way to the root has
// no path; one whose way does not read has none either, and the fs tree
// is incomplete (CheckVolume withholds again).
func (c *checker) setPaths() {
	root := c.sb.Roots.Root(format.FSTree)
	if root.Logical == 0 {
		return
	}
	t := btree.New(&nodeReader{c: c, cache: map[uint64]*format.Node{}}, format.FSTree, root)
	known := map[uint64]string{}
	for i := range c.rep.Problems {
		p := &c.rep.Problems[i]
		if p.Ino == 0 || len(known) >= maxPaths {
			continue
		}
		if _, ok := known[p.Ino]; !ok {
			path, err := pathOf(t, p.Ino)
			c.unread(err)
			known[p.Ino] = path
		}
		p.Path = known[p.Ino]
	}
}

// pathOf returns the path of ino, "" if it does not lead to the root or
// a node on the way does not read (err).
func pathOf(t *btree.Tree, ino uint64) (string, error) {
	if ino == format.RootDirIno {
		return "/", nil
	}
	var names []string
	for depth := 0; ino != format.RootDirIno; depth++ {
		if depth == maxPathDepth {
			return "", nil
		}
		var name string
		var parent uint64
		err := t.Scan(format.Key{ObjectID: ino, Type: format.InodeRefKey}, format.Key{ObjectID: ino, Type: format.InodeRefKey + 1}, func(it format.Item) (bool, error) {
			refs, err := format.UnmarshalInodeRefs(it.Data)
			if err != nil || len(refs) == 0 {
				return true, nil
			}
			name, parent = refs[0].Name, it.Key.Offset
			return false, nil
		})
		if err != nil && !errors.Is(err, btree.ErrNotFound) {
			return "", err
		}
		if name == "" {
			return "", nil
		}
		names = append(names, name)
		ino = parent
	}
	for i, j := 0, len(names)-1; i < j; i, j = i+1, j-1 {
		names[i], names[j] = names[j], names[i]
	}
	return "/" + strings.Join(names, "/"), nil
}
