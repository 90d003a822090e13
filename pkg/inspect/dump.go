package inspect

// Structure dumps for `ddfs inspect` (as btrfs inspect-internal): the
// superblock copies of every device and the nodes and items of a tree,
// each decoded item as a plain value with stable JSON names.

import (
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// SuperCopy is one superblock copy of one device.
type SuperCopy struct {
	DevID      uint64          `json:"devid"`
	Path       string          `json:"path"`
	Offset     uint64          `json:"offset"`
	Error      string          `json:"error,omitempty"` // why the copy does not validate
	UUID       string          `json:"uuid,omitempty"`
	Generation uint64          `json:"generation,omitempty"`
	NumDevices uint64          `json:"num_devices,omitempty"`
	TotalBytes uint64          `json:"total_bytes,omitempty"`
	BytesUsed  uint64          `json:"used,omitempty"` // ddfs df's used
	Roots      []Root          `json:"roots,omitempty"`
	Backups    []BackupRootSet `json:"backups,omitempty"`
}

// BackupRootSet is one older root set a superblock keeps.
type BackupRootSet struct {
	Generation uint64 `json:"generation"`
	Roots      []Root `json:"roots"`
}

// DumpSuper reads every superblock copy of every open device.
func DumpSuper(vol *volume.Volume) []SuperCopy {
	var out []SuperCopy
	for _, d := range vol.Devices() {
		for _, sc := range volume.ReadSuperCopies(d.Dev) {
			c := SuperCopy{DevID: d.ID, Path: d.Path, Offset: sc.Offset}
			if sc.Err != nil {
				c.Error = sc.Err.Error()
				out = append(out, c)
				continue
			}
			sb := sc.SB
			c.UUID, c.Generation = uuid.UUID(sb.FSID).String(), sb.Generation
			c.NumDevices, c.TotalBytes, c.BytesUsed = sb.NumDevices, sb.TotalBytes, sb.BytesUsed
			c.Roots = rootsOf(&sb.Roots)
			for i := range sb.Backups {
				if b := &sb.Backups[i]; b.Generation != 0 {
					c.Backups = append(c.Backups, BackupRootSet{b.Generation, rootsOf(b)})
				}
			}
			out = append(out, c)
		}
	}
	return out
}

func rootsOf(rs *format.RootSet) []Root {
	var out []Root
	for id := format.TreeID(1); id <= format.NumTrees; id++ {
		if r := rs.Root(id); r.Logical != 0 {
			out = append(out, Root{Tree: id.String(), ID: uint64(id), Logical: r.Logical, Level: r.Level, Generation: r.Generation})
		}
	}
	return out
}

// ParseTree maps a tree name (chunk, extent, fs, csum, ...) or number to
// its id.
func ParseTree(name string) (format.TreeID, error) {
	for id := format.TreeID(1); id <= format.NumTrees; id++ {
		if id.String() == name || fmt.Sprint(uint64(id)) == name {
			return id, nil
		}
	}
	return 0, fmt.Errorf("unknown tree %q", name)
}

// NodeDump is one node: its header and, for a leaf, its items; for an
// inner node, its child pointers.
type NodeDump struct {
	Tree       string     `json:"tree"`
	Logical    uint64     `json:"logical"`
	Level      uint8      `json:"level"`
	Generation uint64     `json:"generation"`
	Owner      string     `json:"owner"`
	Error      string     `json:"error,omitempty"` // no copy reads
	Items      []ItemDump `json:"items,omitempty"`
	Ptrs       []PtrDump  `json:"ptrs,omitempty"`
}

// PtrDump is a child pointer of an inner node.
type PtrDump struct {
	Key        format.Key
	Logical    uint64
	Generation uint64
}

// MarshalJSON names the key's fields as FORMAT.md does.
func (p PtrDump) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Key        OnDisk `json:"key"`
		Logical    uint64 `json:"logical"`
		Generation uint64 `json:"generation"`
	}{OnDisk{p.Key}, p.Logical, p.Generation})
}

// ItemDump is one item, decoded when fsck knows its type.
type ItemDump struct {
	Key   format.Key
	Type  string
	Size  int
	Value any
	Error string // does not decode
}

// MarshalJSON names the fields of the key and of the decoded item (as
// "item") as FORMAT.md does.
func (d ItemDump) MarshalJSON() ([]byte, error) {
	var item *OnDisk
	if d.Value != nil {
		item = &OnDisk{d.Value}
	}
	return json.Marshal(struct {
		Key   OnDisk  `json:"key"`
		Type  string  `json:"type"`
		Size  int     `json:"size"`
		Item  *OnDisk `json:"item,omitempty"`
		Error string  `json:"error,omitempty"`
	}{OnDisk{d.Key}, d.Type, d.Size, item, d.Error})
}

// maxDumpDepth bounds the levels a dump descends (a loop of pointers in
// a crafted image ends there).
const maxDumpDepth = format.MaxLevel + 1

// DumpTree calls fn for every node of tree id, parents before children;
// with at != 0 only for the node at that logical address (any tree). A
// node no copy of which reads is passed with Error set, and the walk
// goes on past it.
func DumpTree(fs *store.FS, id format.TreeID, at uint64, fn func(NodeDump) error) error {
	sb := fs.Super()
	if at != 0 {
		n, err := fs.ReadNodeCopy(format.NodeExpect{FSID: sb.FSID, AltFSID: sb.NewFSID, Logical: at, Level: -1}, -1)
		return fn(dumpNode(id, at, n, err))
	}
	root := sb.Roots.Root(id)
	if root.Logical == 0 {
		return fmt.Errorf("%v tree is empty", id)
	}
	var walk func(l, gen uint64, level, depth int) error
	walk = func(l, gen uint64, level, depth int) error {
		n, err := fs.ReadNodeCopy(format.NodeExpect{FSID: sb.FSID, AltFSID: sb.NewFSID, Logical: l, Generation: gen, Owner: id, Level: level}, -1)
		if err := fn(dumpNode(id, l, n, err)); err != nil || n == nil || depth == maxDumpDepth {
			return err
		}
		for _, p := range n.Ptrs {
			if err := walk(p.Logical, p.Generation, level-1, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(root.Logical, root.Generation, int(root.Level), 0)
}

func dumpNode(id format.TreeID, l uint64, n *format.Node, err error) NodeDump {
	d := NodeDump{Tree: id.String(), Logical: l}
	if n == nil {
		d.Error = "no copy reads"
		if err != nil {
			d.Error = err.Error()
		}
		return d
	}
	d.Level, d.Generation, d.Owner = n.Level, n.Generation, n.Owner.String()
	for _, it := range n.Items {
		d.Items = append(d.Items, DescribeItem(it))
	}
	for _, p := range n.Ptrs {
		d.Ptrs = append(d.Ptrs, PtrDump{p.Key, p.Logical, p.Generation})
	}
	return d
}

// keyTypeNames name the item types (FORMAT.md §5).
var keyTypeNames = map[format.KeyType]string{
	format.InodeItemKey: "INODE_ITEM", format.InodeRefKey: "INODE_REF", format.XattrItemKey: "XATTR_ITEM",
	format.DirItemKey: "DIR_ITEM", format.DirIndexKey: "DIR_INDEX", format.FileExtentKey: "EXTENT_DATA",
	format.CsumItemKey: "CSUM_ITEM", format.DedupeItemKey: "DEDUPE_ITEM", format.ExtentItemKey: "EXTENT_ITEM",
	format.MetadataItemKey: "METADATA_ITEM", format.ExtentDataRefKey: "EXTENT_DATA_REF", format.BlockGroupKey: "BLOCK_GROUP_ITEM",
	format.FreeSpaceInfoKey: "FREE_SPACE_INFO", format.FreeSpaceExtKey: "FREE_SPACE_EXTENT", format.DiscardItemKey: "DISCARD_ITEM",
	format.DevItemKey: "DEV_ITEM", format.ChunkItemKey: "CHUNK_ITEM", format.PropItemKey: "PROP_ITEM",
}

// KeyTypeName names an item type ("TYPE_N" for an unknown one).
func KeyTypeName(t format.KeyType) string {
	if n, ok := keyTypeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("TYPE_%d", t)
}

// DescribeItem decodes an item by its key type.
func DescribeItem(it format.Item) ItemDump {
	d := ItemDump{Key: it.Key, Type: KeyTypeName(it.Key.Type), Size: len(it.Data)}
	var v any
	var err error
	switch it.Key.Type {
	case format.InodeItemKey:
		v, err = format.UnmarshalInodeItem(it.Data)
	case format.InodeRefKey:
		v, err = format.UnmarshalInodeRefs(it.Data)
	case format.XattrItemKey:
		var xs []format.Xattr
		if xs, err = format.UnmarshalXattrs(it.Data); err == nil {
			names := make([]string, len(xs))
			for i, x := range xs {
				names[i] = x.Name
			}
			v = names // values may be large or binary: names only
		}
	case format.DirItemKey:
		v, err = format.UnmarshalDirEntries(it.Data)
	case format.DirIndexKey:
		v, err = format.UnmarshalDirEntry(it.Data)
	case format.FileExtentKey:
		v, err = format.UnmarshalFileExtentItem(it.Data)
	case format.DedupeItemKey:
		v, err = format.UnmarshalDedupeItem(it.Key.ObjectID, it.Data)
	case format.ExtentItemKey:
		v, err = format.UnmarshalExtentItem(it.Data)
	case format.MetadataItemKey:
		v, err = format.UnmarshalMetadataItem(it.Data)
	case format.ExtentDataRefKey:
		v, err = format.UnmarshalExtentDataRef(it.Data)
	case format.BlockGroupKey:
		v, err = format.UnmarshalBlockGroupItem(it.Data)
	case format.DevItemKey:
		v, err = format.UnmarshalDevItem(it.Data)
	case format.ChunkItemKey:
		v, _, err = format.UnmarshalChunkItem(it.Data)
	}
	if err != nil {
		d.Error = err.Error()
	} else {
		d.Value = v
	}
	return d
}
