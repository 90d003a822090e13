package inspect

// Finding things in an image: where every copy of a logical address
// lives, which inode a path names, and an inode with its names, xattrs and
// extents. `ddfs inspect`, the fsck surgery tests and the damaged-image
// generator all find what they look at or damage with these.

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// ErrNotFound: the path, inode or address is not in the image.
var ErrNotFound = errors.New("not found")

// CopyLoc is where one copy of a logical address lives. Copy counts from
// 0, as volume.ReadCopy and fsck number copies.
type CopyLoc struct {
	Copy   int    `json:"copy"`
	DevID  uint64 `json:"devid"`
	Path   string `json:"path"`
	Offset uint64 `json:"offset"`
}

// Mapping is `ddfs inspect map`: the chunk holding a logical address and
// every copy of it.
type Mapping struct {
	Logical      uint64    `json:"logical"`
	ChunkLogical uint64    `json:"chunk_logical"`
	ChunkType    string    `json:"type"`
	Profile      string    `json:"profile"`
	Copies       []CopyLoc `json:"copies"`
}

// Map locates every copy of logical.
func Map(vol *volume.Volume, logical uint64) (*Mapping, error) {
	ch, ok := vol.Chunks.Lookup(logical)
	if !ok {
		return nil, fmt.Errorf("logical %d is in no chunk: %w", logical, ErrNotFound)
	}
	targets, err := vol.Locate(logical)
	if err != nil {
		return nil, err
	}
	m := &Mapping{Logical: logical, ChunkLogical: ch.Logical, ChunkType: ch.Type.String(), Profile: ch.Profile.String()}
	for i, t := range targets {
		c := CopyLoc{Copy: i, DevID: t.DevID, Offset: t.Physical}
		if d, ok := vol.Device(t.DevID); ok {
			c.Path = d.Path
		}
		m.Copies = append(m.Copies, c)
	}
	return m, nil
}

// maxLookupDepth bounds the components of a path.
const maxLookupDepth = 4096

// Lookup returns the inode path names, following DIR_ITEM entries from
// the root (symlinks are not followed).
func Lookup(t *btree.Tree, path string) (uint64, error) {
	ino := uint64(format.RootDirIno)
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) > maxLookupDepth {
		return 0, fmt.Errorf("%s: too many components", path)
	}
	for _, name := range parts {
		if name == "" || name == "." {
			continue
		}
		b, err := t.Get(format.Key{ObjectID: ino, Type: format.DirItemKey, Offset: format.NameHash([]byte(name))})
		if errors.Is(err, btree.ErrNotFound) {
			return 0, fmt.Errorf("%s: %w", path, ErrNotFound)
		}
		if err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
		es, err := format.UnmarshalDirEntries(b)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
		found := false
		for _, e := range es {
			if e.Name == name {
				ino, found = e.Ino, true
			}
		}
		if !found {
			return 0, fmt.Errorf("%s: %w", path, ErrNotFound)
		}
	}
	return ino, nil
}

// Extent is one file extent of an inode with where its data lives.
type Extent struct {
	Offset uint64                 `json:"offset"` // in the file
	Item   *format.FileExtentItem `json:"-"`
	Copies []CopyLoc              `json:"copies,omitempty"` // of its first byte on disk
}

// MarshalJSON names the item's fields as FORMAT.md does.
func (e Extent) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Offset uint64    `json:"offset"`
		Item   OnDisk    `json:"item"`
		Copies []CopyLoc `json:"copies,omitempty"`
	}{e.Offset, OnDisk{e.Item}, e.Copies})
}

// InodeDump is `ddfs inspect inode`.
type InodeDump struct {
	Ino     uint64            `json:"ino"`
	Item    *format.InodeItem `json:"-"`
	Names   []Name            `json:"names"`
	Xattrs  []string          `json:"xattrs"`
	Extents []Extent          `json:"extents"`
}

// MarshalJSON names the inode item's fields as FORMAT.md does.
func (d *InodeDump) MarshalJSON() ([]byte, error) {
	type plain InodeDump // its fields, without this method
	return json.Marshal(struct {
		Ino  uint64 `json:"ino"`
		Item OnDisk `json:"item"`
		*plain
	}{d.Ino, OnDisk{d.Item}, (*plain)(d)})
}

// Name is one INODE_REF name of an inode.
type Name struct {
	Parent uint64 `json:"parent"`
	Index  uint64 `json:"index"`
	Name   string `json:"name"`
}

// maxInodeItems bounds the items of one inode a dump reads.
const maxInodeItems = 1 << 20

// Inode gathers the items of ino. Each extent's copies are located by
// the volume.
func Inode(fs *store.FS, ino uint64) (*InodeDump, error) {
	d := &InodeDump{Ino: ino, Names: []Name{}, Xattrs: []string{}, Extents: []Extent{}}
	n := 0
	err := fs.Tree(format.FSTree).Scan(format.Key{ObjectID: ino}, format.Key{ObjectID: ino + 1}, func(it format.Item) (bool, error) {
		n++
		switch it.Key.Type {
		case format.InodeItemKey:
			in, err := format.UnmarshalInodeItem(it.Data)
			if err != nil {
				return false, fmt.Errorf("inode %d: %w", ino, err)
			}
			d.Item = in
		case format.InodeRefKey:
			refs, err := format.UnmarshalInodeRefs(it.Data)
			if err != nil {
				return false, fmt.Errorf("inode %d: names in %d: %w", ino, it.Key.Offset, err)
			}
			for _, r := range refs {
				d.Names = append(d.Names, Name{it.Key.Offset, r.Index, r.Name})
			}
		case format.XattrItemKey:
			if xs, err := format.UnmarshalXattrs(it.Data); err == nil {
				for _, x := range xs {
					d.Xattrs = append(d.Xattrs, x.Name)
				}
			}
		case format.FileExtentKey:
			x, err := format.UnmarshalFileExtentItem(it.Data)
			if err != nil {
				return false, fmt.Errorf("inode %d: extent at %d: %w", ino, it.Key.Offset, err)
			}
			e := Extent{Offset: it.Key.Offset, Item: x}
			if x.Type != format.FileExtentInline && x.DiskLogical != 0 {
				if m, err := Map(fs.Vol, x.DiskLogical); err == nil {
					e.Copies = m.Copies
				}
			}
			d.Extents = append(d.Extents, e)
		}
		return n < maxInodeItems, nil
	})
	if err != nil {
		return nil, err
	}
	if d.Item == nil {
		return nil, fmt.Errorf("inode %d: %w", ino, ErrNotFound)
	}
	return d, nil
}
