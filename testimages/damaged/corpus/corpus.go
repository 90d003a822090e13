// Package corpus makes the damaged images of testimages/damaged: a small
// deterministic filesystem, then one kind of damage, found with the same
// pkg/inspect code `ddfs inspect` uses. The generator (../gen) writes the
// images and their golden problem codes; the test (../damaged_test.go)
// checks fsck against them, before and after a -y repair.
package corpus

import (
	"bytes"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/inspect"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/trim"
	"github.com/ddfs/ddfs/pkg/volume"
)

// Device sizes: small, so the gzip-compressed images stay a few KiB; the
// large one holds a second superblock copy (at 64 MiB).
const (
	SmallDev = 22 << 20
	LargeDev = 72 << 20
)

// Kind is one kind of damage.
type Kind struct {
	Name string
	// Pass is the part of fsck the damage is aimed at (for the README).
	What string
	// Devs and Size shape the base image: 1 device (metadata dup) or 2
	// (raid1 everything).
	Devs int
	Size int64
	// Damage changes the base image.
	Damage func(s *Surgeon)
}

var epoch = func() time.Time { return time.Unix(1750000000, 0) }

// Build makes the base image of k and damages it.
func Build(k Kind) ([]*device.MemDevice, error) {
	devs, err := base(k)
	if err != nil {
		return nil, fmt.Errorf("%s: base image: %w", k.Name, err)
	}
	if err := apply(devs, k.Damage); err != nil {
		return nil, fmt.Errorf("%s: %w", k.Name, err)
	}
	return devs, nil
}

// apply damages devs with fn: its tree changes in one commit, then its
// raw writes.
func apply(devs []*device.MemDevice, fn func(*Surgeon)) error {
	s, err := newSurgeon(devs)
	if err != nil {
		return err
	}
	fn(s)
	switch {
	case s.err != nil:
	case s.tx.DirtyNodes() == 0:
		s.tx.Abort() // raw damage only: keep the generation
	default:
		s.err = s.tx.Commit()
	}
	if s.err != nil {
		return fmt.Errorf("damage: %w", s.err)
	}
	for _, raw := range s.raw {
		raw()
	}
	for _, d := range devs {
		d.Flush() // raw writes count as durable
	}
	if s.err != nil {
		return fmt.Errorf("damage: %w", s.err)
	}
	return nil
}

func base(k Kind) ([]*device.MemDevice, error) {
	p := store.CreateParams{FSID: [16]byte{0xda, 0x3a, 0x9e, 1}, Label: "damaged", Csum: format.CsumCRC32C, NodeSize: 4096, SectorSize: 4096,
		Data: format.ProfileSingle, Metadata: format.ProfileDup,
		Settings: format.Settings{Dedupe: true, DedupeBlockLog2: 12, Discard: format.DiscardAsync}}
	if k.Devs == 2 {
		p.Data, p.Metadata = format.ProfileRaid1, format.ProfileRaid1
	}
	var devs []*device.MemDevice
	for i := 0; i < max(k.Devs, 1); i++ {
		d := device.NewMemDevice(fmt.Sprintf("%s.%d.img", k.Name, i+1), max(k.Size, SmallDev))
		devs = append(devs, d)
		p.Devices = append(p.Devices, store.NewDevice{Dev: d, Path: d.Name(), PathHint: d.Name()})
	}
	st, tx, err := store.CreateTx(p)
	if err != nil {
		return nil, err
	}
	f, err := fsys.New(st, fsys.Options{Now: epoch})
	if err != nil {
		return nil, err
	}
	f.Adopt(tx)
	if err := populate(f); err != nil {
		return nil, err
	}
	// Free space zeroed (stale nodes of earlier commits), so the images
	// compress to little more than their live data.
	if _, err := trim.Run(st, trim.Options{}); err != nil {
		return nil, err
	}
	for _, d := range devs {
		d.Flush()
	}
	// One more commit after the trim: the newest backup root set then
	// points at nodes that are still intact (the trim zeroed the older
	// ones), so a lost root can be restored from it.
	if _, err := f.Create("/last", fsys.Attr{Mode: 0o644}); err != nil {
		return nil, err
	}
	return devs, f.Sync()
}

// Content is the data of file i (not zeros, which become holes).
func Content(i, n int) []byte {
	b := make([]byte, n)
	for j := range b {
		b[j] = byte(i*31 + j*7 + j/4096)
	}
	return b
}

// populate writes the tree every kind starts from, over a few commits
// (so the superblock has backup roots): directories, files with extent
// and inline data, two files sharing deduped blocks, a hard link, a
// symlink, a fifo, a character device, xattrs, and enough names for a
// two-level fs tree.
func populate(f *fsys.FS) error {
	var err error
	try := func(e error) {
		if err == nil {
			err = e
		}
	}
	try(f.InitRoot(fsys.Attr{Mode: 0o755}))
	try(f.Sync())
	for _, d := range []string{"/dir", "/dir/sub", "/la", "/la/lb"} {
		_, e := f.Mkdir(d, fsys.Attr{Mode: 0o755})
		try(e)
	}
	file := func(p string, data []byte) *fsys.Inode {
		in, e := f.Create(p, fsys.Attr{Mode: 0o644, UID: 1000, GID: 1000})
		try(e)
		if e == nil && len(data) > 0 {
			try(f.WriteAt(in, data, 0))
		}
		return in
	}
	file("/small", []byte("hello, world\n"))
	file("/mid", Content(1, 8192))
	big := file("/big", Content(2, 20<<10))
	file("/dup1", Content(3, 8<<10))
	file("/dup2", Content(3, 8<<10)) // deduped against /dup1
	try(f.Sync())
	for i := 0; i < 40; i++ {
		file(fmt.Sprintf("/dir/f%02d", i), Content(10+i, 50+i*20)) // inline
	}
	try(f.Link("/big", "/dir/hard"))
	_, e := f.Symlink("dir/sub", "/link", fsys.Attr{})
	try(e)
	_, e = f.Create("/fifo", fsys.Attr{Mode: syscall.S_IFIFO | 0o600})
	try(e)
	_, e = f.Create("/cdev", fsys.Attr{Mode: syscall.S_IFCHR | 0o600, Rdev: 0x0103})
	try(e)
	if big != nil {
		try(f.SetXattr(big, "user.comment", []byte("a big file")))
	}
	try(f.Sync())
	return err
}

// Surgeon damages an image: tree changes go through one store
// transaction, raw byte changes are made after it commits.
type Surgeon struct {
	Devs []*device.MemDevice
	st   *store.FS
	tx   *store.Txn
	raw  []func()
	err  error
}

func newSurgeon(devs []*device.MemDevice) (*Surgeon, error) {
	var ds []device.Device
	for _, d := range devs {
		ds = append(ds, d)
	}
	vol, err := volume.FromDevices(ds, true)
	if err != nil {
		return nil, err
	}
	st, err := store.OpenVolume(vol)
	if err != nil {
		return nil, err
	}
	tx, err := st.Begin()
	if err != nil {
		return nil, err
	}
	return &Surgeon{Devs: devs, st: st, tx: tx}, nil
}

func (s *Surgeon) fail(err error) {
	if s.err == nil && err != nil {
		s.err = err
	}
}

// Ino is the inode of path (0 after a failure).
func (s *Surgeon) Ino(path string) uint64 {
	ino, err := inspect.Lookup(s.st.Tree(format.FSTree), path)
	s.fail(err)
	return ino
}

// Extent returns the disk extent of the first regular extent of ino.
func (s *Surgeon) Extent(ino uint64) (logical, length uint64) {
	d, err := inspect.Inode(s.st, ino)
	if err != nil {
		s.fail(err)
		return 0, 0
	}
	for _, e := range d.Extents {
		if e.Item.Type != format.FileExtentInline && e.Item.DiskLogical != 0 {
			return e.Item.DiskLogical, e.Item.DiskLen
		}
	}
	s.fail(fmt.Errorf("inode %d has no disk extent", ino))
	return 0, 0
}

// Get returns a copy of an item.
func (s *Surgeon) Get(id format.TreeID, k format.Key) []byte {
	b, err := s.tx.Tree(id).Get(k)
	s.fail(err)
	return bytes.Clone(b)
}

// Put writes an item.
func (s *Surgeon) Put(id format.TreeID, k format.Key, b []byte) {
	if s.err == nil {
		s.fail(s.tx.Tree(id).Put(k, b))
	}
}

// Del deletes an item.
func (s *Surgeon) Del(id format.TreeID, k format.Key) {
	if s.err == nil {
		s.fail(s.tx.Tree(id).Delete(k))
	}
}

// Move re-keys an item.
func (s *Surgeon) Move(id format.TreeID, from, to format.Key) {
	b := s.Get(id, from)
	s.Del(id, from)
	s.Put(id, to, b)
}

// First returns the first item of tree id with key in [from, to).
func (s *Surgeon) First(id format.TreeID, from, to format.Key) (format.Item, bool) {
	var out format.Item
	found := false
	err := s.tx.Tree(id).Scan(from, to, func(it format.Item) (bool, error) {
		out, found = format.Item{Key: it.Key, Data: bytes.Clone(it.Data)}, true
		return false, nil
	})
	if err != nil && !errors.Is(err, btree.ErrNotFound) {
		s.fail(err)
	}
	return out, found
}

// InodeKey is the key of ino's inode item.
func InodeKey(ino uint64) format.Key { return format.Key{ObjectID: ino, Type: format.InodeItemKey} }

// Inode changes ino's inode item.
func (s *Surgeon) Inode(ino uint64, change func(*format.InodeItem)) {
	in, err := format.UnmarshalInodeItem(s.Get(format.FSTree, InodeKey(ino)))
	if err != nil {
		s.fail(err)
		return
	}
	change(in)
	s.Put(format.FSTree, InodeKey(ino), format.MarshalInodeItem(in))
}

// Flip inverts the byte at off of copy c of the block at logical (after
// the transaction commits, so the damage is what the committed state
// reads).
func (s *Surgeon) Flip(logical uint64, c int, off uint64) {
	s.raw = append(s.raw, func() {
		m, err := inspect.Map(s.st.Vol, logical)
		if err != nil || c >= len(m.Copies) {
			s.fail(fmt.Errorf("flip logical %d copy %d: %v", logical, c, err))
			return
		}
		flipAt(s.Devs[m.Copies[c].DevID-1], int64(m.Copies[c].Offset+off))
	})
}

// FlipDev inverts the byte at off of device i.
func (s *Surgeon) FlipDev(i int, off int64) {
	s.raw = append(s.raw, func() { flipAt(s.Devs[i], off) })
}

// Raw runs fn after the transaction commits.
func (s *Surgeon) Raw(fn func(st *store.FS)) { s.raw = append(s.raw, func() { fn(s.st) }) }

func flipAt(d *device.MemDevice, off int64) {
	b := make([]byte, 1)
	d.ReadAt(b, off)
	b[0] ^= 0x5a
	d.WriteAt(b, off)
	d.Flush()
}

// Root returns the committed root of tree id.
func (s *Surgeon) Root(id format.TreeID) format.RootPtr {
	sb := s.st.Super()
	return sb.Roots.Root(id)
}

// Leaf returns a leaf of tree id (the first) in the committed state.
func (s *Surgeon) Leaf(id format.TreeID) uint64 {
	var leaf uint64
	err := inspect.DumpTree(s.st, id, 0, func(n inspect.NodeDump) error {
		if n.Level == 0 && leaf == 0 {
			leaf = n.Logical
		}
		return nil
	})
	s.fail(err)
	return leaf
}
