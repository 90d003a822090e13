package corpus

import (
	"encoding/binary"
	"fmt"
	"syscall"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/inspect"
	"github.com/ddfs/ddfs/pkg/store"
)

const (
	fsT  = format.FSTree
	extT = format.ExtentTree
	csT  = format.CsumTree
	root = format.RootDirIno
	ss   = 4096
	ns   = 4096
)

func csumKey(l uint64) format.Key {
	return format.Key{ObjectID: format.CsumObjectID, Type: format.CsumItemKey, Offset: l}
}

func dirItemKey(dir uint64, name string) format.Key {
	return format.Key{ObjectID: dir, Type: format.DirItemKey, Offset: format.NameHash([]byte(name))}
}

// entry finds the DIR_INDEX of name in dir.
func (s *Surgeon) entry(dir uint64, name string) (uint64, format.DirEntry) {
	var idx uint64
	var out format.DirEntry
	err := s.tx.Tree(fsT).Scan(format.Key{ObjectID: dir, Type: format.DirIndexKey}, format.Key{ObjectID: dir, Type: format.DirIndexKey + 1}, func(it format.Item) (bool, error) {
		if e, err := format.UnmarshalDirEntry(it.Data); err == nil && e.Name == name {
			idx, out = it.Key.Offset, e
			return false, nil
		}
		return true, nil
	})
	s.fail(err)
	return idx, out
}

// link adds a whole name (DIR_ITEM, DIR_INDEX, INODE_REF, directory size
// and seq) without touching link counts.
func (s *Surgeon) link(dir uint64, name string, child uint64, t format.FileType) {
	var seq uint64
	s.Inode(dir, func(in *format.InodeItem) { seq = in.Seq; in.Seq++; in.Size++ })
	e := format.DirEntry{Ino: child, Type: t, Name: name}
	s.Put(fsT, dirItemKey(dir, name), format.MarshalDirEntries([]format.DirEntry{e}))
	s.Put(fsT, format.Key{ObjectID: dir, Type: format.DirIndexKey, Offset: seq}, format.MarshalDirEntry(e))
	s.Put(fsT, format.Key{ObjectID: child, Type: format.InodeRefKey, Offset: dir}, format.MarshalInodeRefs([]format.InodeRef{{Index: seq, Name: name}}))
}

// flipRoot damages copy c of the committed root of tree id.
func flipRoot(id format.TreeID, c int, off uint64) func(*Surgeon) {
	return func(s *Surgeon) {
		s.Raw(func(st *store.FS) {
			sb := st.Super()
			s.flipNow(sb.Roots.Root(id).Logical, c, off)
		})
	}
}

// flipLeaf damages copy c of the first leaf of tree id.
func flipLeaf(id format.TreeID, c int, off uint64) func(*Surgeon) {
	return func(s *Surgeon) {
		s.Raw(func(*store.FS) { s.flipNow(s.Leaf(id), c, off) })
	}
}

func (s *Surgeon) flipNow(logical uint64, c int, off uint64) {
	m, err := inspect.Map(s.st.Vol, logical)
	if err != nil || c >= len(m.Copies) {
		s.fail(fmt.Errorf("flip logical %d copy %d: %v", logical, c, err))
		return
	}
	flipAt(s.Devs[m.Copies[c].DevID-1], int64(m.Copies[c].Offset+off))
}

// Kinds is every kind of damage the corpus holds.
var Kinds = []Kind{
	// Superblocks (LargeDev: two copies per device).
	{"super-primary-flip", "superblock", 1, LargeDev, func(s *Surgeon) { s.FlipDev(0, 64<<10+300) }},
	{"super-secondary-flip", "superblock", 1, LargeDev, func(s *Surgeon) { s.FlipDev(0, 64<<20+40) }},
	{"super-secondary-zeroed", "superblock", 1, LargeDev, func(s *Surgeon) {
		s.Raw(func(*store.FS) { s.Devs[0].WriteAt(make([]byte, format.SuperblockSize), 64<<20) })
	}},
	{"super-secondary-behind", "superblock", 1, LargeDev, func(s *Surgeon) { s.superBehind(0, 64<<20) }},
	{"super-device-behind", "superblock", 2, SmallDev, func(s *Surgeon) { s.superBehind(1, 64<<10) }},
	{"counters-wrong", "superblock", 1, LargeDev, func(s *Surgeon) { s.wrongCounters() }},
	// Mirrors: one bad copy of a node of every tree, of a data block.
	{"mirror-chunk-root", "node", 1, SmallDev, flipRoot(format.ChunkTree, 1, 700)},
	{"mirror-extent-leaf", "node", 1, SmallDev, flipLeaf(extT, 0, 900)},
	{"mirror-fs-root", "node", 1, SmallDev, flipRoot(fsT, 0, 1000)},
	{"mirror-fs-leaf-raid1", "node", 2, SmallDev, flipLeaf(fsT, 1, 2000)},
	{"mirror-csum-root", "node", 1, SmallDev, flipRoot(csT, 1, 300)},
	{"mirror-dedupe-root", "node", 1, SmallDev, flipRoot(format.DedupeTree, 0, 64)},
	{"mirror-node-header", "node", 1, SmallDev, flipRoot(fsT, 1, 40)},
	{"mirror-data-raid1", "data", 2, SmallDev, func(s *Surgeon) {
		l, _ := s.Extent(s.Ino("/mid"))
		s.Flip(l, 1, 4096+10)
	}},
	{"mirror-data-single", "data", 1, SmallDev, func(s *Surgeon) {
		l, _ := s.Extent(s.Ino("/mid"))
		s.Flip(l, 0, 10)
	}},
	{"node-both-copies", "node", 1, SmallDev, func(s *Surgeon) {
		flipLeaf(fsT, 0, 1500)(s)
		flipLeaf(fsT, 1, 1600)(s)
	}},
	{"tree-root-lost", "node", 1, SmallDev, func(s *Surgeon) {
		flipRoot(fsT, 0, 1500)(s)
		flipRoot(fsT, 1, 1600)(s)
	}},
	// Chunk tree and device items.
	{"dev-bytes-used", "device", 1, SmallDev, func(s *Surgeon) { s.devItem(func(d *format.DevItem) { d.BytesUsed += 1 << 20 }) }},
	{"dev-item-uuid", "device", 1, SmallDev, func(s *Surgeon) { s.devItem(func(d *format.DevItem) { d.UUID[0] ^= 1 }) }},
	{"dev-item-size", "device", 1, SmallDev, func(s *Surgeon) {
		s.devItem(func(d *format.DevItem) { d.TotalBytes = 1 << 30 })
	}},
	{"dev-item-deleted", "device", 2, SmallDev, func(s *Surgeon) {
		s.Del(format.ChunkTree, format.Key{ObjectID: format.DevItemsObjectID, Type: format.DevItemKey, Offset: 2})
	}},
	{"chunk-item-garbage", "chunk", 1, SmallDev, func(s *Surgeon) {
		s.dataChunk(func(k format.Key, _ *format.ChunkItem) { s.Put(format.ChunkTree, k, []byte{1, 2, 3, 4}) })
	}},
	{"chunk-stripe-past-device", "chunk", 1, SmallDev, func(s *Surgeon) {
		s.dataChunk(func(k format.Key, c *format.ChunkItem) {
			c.Stripes[0].Offset = SmallDev - 1<<20
			s.Put(format.ChunkTree, k, format.MarshalChunkItem(c))
		})
	}},
	// Extents, references and block groups.
	{"extent-refs-high", "extent", 1, SmallDev, func(s *Surgeon) { s.extentRefs("/mid", 3) }},
	{"extent-refs-low", "extent", 1, SmallDev, func(s *Surgeon) { s.extentRefs("/dup1", 1) }},
	{"block-group-used", "extent", 1, SmallDev, func(s *Surgeon) {
		// The data block group: this transaction allocates no data, so
		// the commit does not rewrite its item.
		for _, bg := range s.st.BlockGroups() {
			if bg.Chunk.Type != format.ChunkData {
				continue
			}
			k := format.Key{ObjectID: bg.Chunk.Logical, Type: format.BlockGroupKey, Offset: bg.Chunk.Length}
			g, err := format.UnmarshalBlockGroupItem(s.Get(extT, k))
			if err != nil {
				s.fail(err)
				return
			}
			g.Used += 3 * ss
			s.Put(extT, k, format.MarshalBlockGroupItem(g))
			return
		}
	}},
	{"block-group-deleted", "extent", 1, SmallDev, func(s *Surgeon) {
		// The data block group's item: this transaction allocates no
		// data, so the commit does not write it again.
		for _, bg := range s.st.BlockGroups() {
			if bg.Chunk.Type == format.ChunkData {
				s.Del(extT, format.Key{ObjectID: bg.Chunk.Logical, Type: format.BlockGroupKey, Offset: bg.Chunk.Length})
				return
			}
		}
	}},
	{"block-group-orphan", "extent", 1, SmallDev, func(s *Surgeon) {
		// A block group item for space past every chunk.
		var end uint64
		for _, bg := range s.st.BlockGroups() {
			end = max(end, bg.Chunk.End())
		}
		l := end + 1<<30
		g := &format.BlockGroupItem{Type: format.ChunkData, Profile: s.st.BlockGroups()[0].Chunk.Profile}
		s.Put(extT, format.Key{ObjectID: l, Type: format.BlockGroupKey, Offset: 1 << 30}, format.MarshalBlockGroupItem(g))
	}},
	{"metadata-item-leaked", "extent", 1, SmallDev, func(s *Surgeon) {
		// A node-sized extent no tree uses, at the end of the metadata chunk.
		for _, bg := range s.st.BlockGroups() {
			if bg.Chunk.Type == format.ChunkMetadata {
				l := bg.Chunk.End() - ns
				s.Put(extT, format.Key{ObjectID: l, Type: format.MetadataItemKey}, format.MarshalMetadataItem(&format.MetadataItem{Refs: 1, Generation: 1, Owner: fsT}))
				return
			}
		}
	}},
	{"file-extent-deleted", "extent", 1, SmallDev, func(s *Surgeon) {
		mid := s.Ino("/mid")
		s.Del(fsT, format.Key{ObjectID: mid, Type: format.FileExtentKey})
	}},
	{"extent-item-deleted", "extent", 1, SmallDev, func(s *Surgeon) {
		l, n := s.Extent(s.Ino("/mid"))
		s.Del(extT, format.Key{ObjectID: l, Type: format.ExtentItemKey, Offset: n})
	}},
	// Checksums.
	{"csum-item-deleted", "csum", 1, SmallDev, func(s *Surgeon) {
		l, _ := s.Extent(s.Ino("/mid"))
		s.Del(csT, csumKey(l))
	}},
	{"csum-over-free-space", "csum", 1, SmallDev, func(s *Surgeon) {
		for _, bg := range s.st.BlockGroups() {
			if bg.Chunk.Type == format.ChunkData {
				s.Put(csT, csumKey(bg.Chunk.End()-2*ss), make([]byte, 8))
			}
		}
	}},
	{"csum-item-partial", "csum", 1, SmallDev, func(s *Surgeon) {
		l, _ := s.Extent(s.Ino("/mid"))
		s.Put(csT, csumKey(l), s.Get(csT, csumKey(l))[:7])
	}},
	{"csum-items-overlap", "csum", 1, SmallDev, func(s *Surgeon) {
		l, _ := s.Extent(s.Ino("/big"))
		s.Put(csT, csumKey(l+ss), s.Get(csT, csumKey(l))[4:8])
	}},
	// Namespace.
	{"nlink-high", "fs", 1, SmallDev, func(s *Surgeon) { s.Inode(s.Ino("/big"), func(in *format.InodeItem) { in.Nlink++ }) }},
	{"nlink-low", "fs", 1, SmallDev, func(s *Surgeon) { s.Inode(s.Ino("/big"), func(in *format.InodeItem) { in.Nlink = 1 }) }},
	{"dir-nlink", "fs", 1, SmallDev, func(s *Surgeon) { s.Inode(s.Ino("/dir"), func(in *format.InodeItem) { in.Nlink = 7 }) }},
	{"dir-size", "fs", 1, SmallDev, func(s *Surgeon) { s.Inode(s.Ino("/dir/sub"), func(in *format.InodeItem) { in.Size = 9 }) }},
	{"nbytes", "fs", 1, SmallDev, func(s *Surgeon) { s.Inode(s.Ino("/mid"), func(in *format.InodeItem) { in.NBytes = 1 }) }},
	{"rdev-on-file", "fs", 1, SmallDev, func(s *Surgeon) { s.Inode(s.Ino("/mid"), func(in *format.InodeItem) { in.Rdev = 0x0801 }) }},
	{"size-on-fifo", "fs", 1, SmallDev, func(s *Surgeon) { s.Inode(s.Ino("/fifo"), func(in *format.InodeItem) { in.Size = 5 }) }},
	{"inode-flags", "fs", 1, SmallDev, func(s *Surgeon) {
		s.Inode(s.Ino("/mid"), func(in *format.InodeItem) { in.Flags |= 1 << 40 })
	}},
	{"orphan-inode", "fs", 1, SmallDev, func(s *Surgeon) {
		s.Put(fsT, InodeKey(50000), format.MarshalInodeItem(&format.InodeItem{Mode: syscall.S_IFREG | 0o644, Nlink: 1, Generation: 1}))
	}},
	{"inode-ref-deleted", "fs", 1, SmallDev, func(s *Surgeon) {
		s.Del(fsT, format.Key{ObjectID: s.Ino("/small"), Type: format.InodeRefKey, Offset: root})
	}},
	{"inode-item-deleted", "fs", 1, SmallDev, func(s *Surgeon) { s.Del(fsT, InodeKey(s.Ino("/mid"))) }},
	{"inode-item-garbage", "fs", 1, SmallDev, func(s *Surgeon) { s.Put(fsT, InodeKey(s.Ino("/mid")), make([]byte, 100)) }},
	{"root-inode-deleted", "fs", 1, SmallDev, func(s *Surgeon) { s.Del(fsT, InodeKey(root)) }},
	{"ref-index-other", "fs", 1, SmallDev, func(s *Surgeon) {
		// /small's name says /mid's index.
		idx, _ := s.entry(root, "mid")
		s.Put(fsT, format.Key{ObjectID: s.Ino("/small"), Type: format.InodeRefKey, Offset: root}, format.MarshalInodeRefs([]format.InodeRef{{Index: idx, Name: "small"}}))
	}},
	{"dir-index-deleted", "fs", 1, SmallDev, func(s *Surgeon) {
		idx, _ := s.entry(root, "small")
		s.Del(fsT, format.Key{ObjectID: root, Type: format.DirIndexKey, Offset: idx})
	}},
	{"dir-item-deleted", "fs", 1, SmallDev, func(s *Surgeon) { s.Del(fsT, dirItemKey(root, "mid")) }},
	{"dir-item-wrong-hash", "fs", 1, SmallDev, func(s *Surgeon) {
		k := dirItemKey(root, "mid")
		to := k
		to.Offset++
		s.Move(fsT, k, to)
	}},
	{"entry-type", "fs", 1, SmallDev, func(s *Surgeon) {
		idx, e := s.entry(root, "small")
		e.Type = format.FileTypeSymlink
		s.Put(fsT, format.Key{ObjectID: root, Type: format.DirIndexKey, Offset: idx}, format.MarshalDirEntry(e))
		s.Put(fsT, dirItemKey(root, "small"), format.MarshalDirEntries([]format.DirEntry{e}))
	}},
	{"entry-index-item-disagree", "fs", 1, SmallDev, func(s *Surgeon) {
		idx, e := s.entry(root, "small")
		e.Type = format.FileTypeFIFO
		s.Put(fsT, format.Key{ObjectID: root, Type: format.DirIndexKey, Offset: idx}, format.MarshalDirEntry(e))
	}},
	{"dangling-entry", "fs", 1, SmallDev, func(s *Surgeon) {
		s.link(root, "ghost", 90000, format.FileTypeRegular)
		s.Del(fsT, format.Key{ObjectID: 90000, Type: format.InodeRefKey, Offset: root})
	}},
	{"ref-to-missing-dir", "fs", 1, SmallDev, func(s *Surgeon) {
		mid := s.Ino("/mid")
		s.Put(fsT, format.Key{ObjectID: mid, Type: format.InodeRefKey, Offset: 70000}, format.MarshalInodeRefs([]format.InodeRef{{Index: 5, Name: "lost"}}))
		s.Inode(mid, func(in *format.InodeItem) { in.Nlink = 2 })
	}},
	{"dir-two-names", "fs", 1, SmallDev, func(s *Surgeon) {
		sub := s.Ino("/dir/sub")
		s.link(root, "sub2", sub, format.FileTypeDir)
		s.Inode(root, func(in *format.InodeItem) { in.Nlink++ })
	}},
	{"dir-loop", "fs", 1, SmallDev, func(s *Surgeon) {
		la, lb := s.Ino("/la"), s.Ino("/la/lb")
		idx, _ := s.entry(root, "la")
		s.Del(fsT, dirItemKey(root, "la"))
		s.Del(fsT, format.Key{ObjectID: root, Type: format.DirIndexKey, Offset: idx})
		s.Del(fsT, format.Key{ObjectID: la, Type: format.InodeRefKey, Offset: root})
		s.Inode(root, func(in *format.InodeItem) { in.Size--; in.Nlink-- })
		s.link(lb, "la", la, format.FileTypeDir)
		s.Inode(lb, func(in *format.InodeItem) { in.Nlink++ })
	}},
	{"prop-item", "fs", 1, SmallDev, func(s *Surgeon) {
		s.Put(fsT, format.Key{ObjectID: s.Ino("/mid"), Type: format.PropItemKey, Offset: 1}, []byte("x"))
	}},
	// File layout.
	{"size-below-extents", "fs", 1, SmallDev, func(s *Surgeon) { s.Inode(s.Ino("/big"), func(in *format.InodeItem) { in.Size = 4000 }) }},
	{"extents-overlap", "fs", 1, SmallDev, func(s *Surgeon) {
		hole := &format.FileExtentItem{Type: format.FileExtentRegular, NumBytes: 4096, RAMBytes: 4096}
		s.Put(fsT, format.Key{ObjectID: s.Ino("/big"), Type: format.FileExtentKey, Offset: 1}, format.MarshalFileExtentItem(hole))
	}},
	{"inline-not-at-zero", "fs", 1, SmallDev, func(s *Surgeon) {
		small := s.Ino("/small")
		s.Move(fsT, format.Key{ObjectID: small, Type: format.FileExtentKey}, format.Key{ObjectID: small, Type: format.FileExtentKey, Offset: 8})
	}},
	{"extent-on-fifo", "fs", 1, SmallDev, func(s *Surgeon) {
		hole := &format.FileExtentItem{Type: format.FileExtentRegular, NumBytes: 10, RAMBytes: 10}
		s.Put(fsT, format.Key{ObjectID: s.Ino("/fifo"), Type: format.FileExtentKey}, format.MarshalFileExtentItem(hole))
	}},
	{"extent-past-ram-bytes", "fs", 1, SmallDev, func(s *Surgeon) {
		k := format.Key{ObjectID: s.Ino("/mid"), Type: format.FileExtentKey}
		b := s.Get(fsT, k)
		if len(b) > 40 {
			binary.LittleEndian.PutUint64(b[32:], 4096) // offset: 4096 + 8192 > ram_bytes
		}
		s.Put(fsT, k, b)
	}},
	{"extent-after-inline", "fs", 1, SmallDev, func(s *Surgeon) {
		mid := s.Ino("/mid")
		s.Put(fsT, format.Key{ObjectID: s.Ino("/small"), Type: format.FileExtentKey, Offset: 4096}, s.Get(fsT, format.Key{ObjectID: mid, Type: format.FileExtentKey}))
	}},
	{"extent-wraps", "fs", 1, SmallDev, func(s *Surgeon) { s.hole(s.Ino("/mid"), 1<<64-4096, 8192) }},
	{"extent-too-big", "fs", 1, SmallDev, func(s *Surgeon) { s.hole(s.Ino("/mid"), format.MaxFileSize-4096, 8192) }},
	{"entries-in-file", "fs", 1, SmallDev, func(s *Surgeon) {
		small := s.Ino("/small")
		s.link(s.Ino("/mid"), "x", small, format.FileTypeRegular)
		s.Inode(small, func(in *format.InodeItem) { in.Nlink++ })
	}},
	{"entry-names-own-dir", "fs", 1, SmallDev, func(s *Surgeon) {
		la := s.Ino("/la")
		s.link(la, "me", la, format.FileTypeDir)
	}},
	{"dir-seq-zero", "fs", 1, SmallDev, func(s *Surgeon) { s.Inode(s.Ino("/la"), func(in *format.InodeItem) { in.Seq = 0 }) }},
	{"inode-key-offset", "fs", 1, SmallDev, func(s *Surgeon) {
		mid := s.Ino("/mid")
		s.Move(fsT, InodeKey(mid), format.Key{ObjectID: mid, Type: format.InodeItemKey, Offset: 5})
	}},
	{"unknown-item-type", "fs", 1, SmallDev, func(s *Surgeon) {
		s.Put(fsT, format.Key{ObjectID: s.Ino("/mid"), Type: 200, Offset: 1}, []byte("x"))
	}},
	// Xattrs.
	{"xattr-wrong-hash", "fs", 1, SmallDev, func(s *Surgeon) {
		k := format.Key{ObjectID: s.Ino("/big"), Type: format.XattrItemKey, Offset: format.NameHash([]byte("user.comment"))}
		to := k
		to.Offset--
		s.Move(fsT, k, to)
	}},
	{"xattr-garbage", "fs", 1, SmallDev, func(s *Surgeon) {
		k := format.Key{ObjectID: s.Ino("/big"), Type: format.XattrItemKey, Offset: format.NameHash([]byte("user.comment"))}
		s.Put(fsT, k, []byte{0xff, 0xff, 0xff})
	}},
	// The dedupe index.
	{"dedupe-entry-deleted", "dedupe", 1, SmallDev, func(s *Surgeon) {
		if it, ok := s.First(format.DedupeTree, format.Key{}, format.MaxKey); ok {
			s.Del(format.DedupeTree, it.Key)
		}
	}},
	{"dedupe-entry-stale", "dedupe", 1, SmallDev, func(s *Surgeon) {
		if it, ok := s.First(format.DedupeTree, format.Key{}, format.MaxKey); ok {
			k := it.Key
			k.Offset += 1 << 20 // no extent there
			s.Put(format.DedupeTree, k, it.Data)
		}
	}},
	{"dedupe-entry-garbage", "dedupe", 1, SmallDev, func(s *Surgeon) {
		if it, ok := s.First(format.DedupeTree, format.Key{}, format.MaxKey); ok {
			s.Put(format.DedupeTree, it.Key, []byte{1, 2, 3})
		}
	}},
	// Discard records.
	{"discard-record-outside", "discard", 1, SmallDev, func(s *Surgeon) {
		s.Put(format.DiscardTree, format.Key{ObjectID: 1 << 40, Type: format.DiscardItemKey, Offset: 4096}, nil)
	}},
	{"discard-record-too-long", "discard", 1, SmallDev, func(s *Surgeon) {
		for _, bg := range s.st.BlockGroups() {
			if bg.Chunk.Type == format.ChunkData {
				s.Put(format.DiscardTree, format.Key{ObjectID: bg.Chunk.End() - ss, Type: format.DiscardItemKey, Offset: 2 * ss}, nil)
			}
		}
	}},
}

// hole puts an explicit hole of n bytes at off into ino.
func (s *Surgeon) hole(ino, off, n uint64) {
	x := &format.FileExtentItem{Type: format.FileExtentRegular, NumBytes: n, RAMBytes: n}
	s.Put(fsT, format.Key{ObjectID: ino, Type: format.FileExtentKey, Offset: off}, format.MarshalFileExtentItem(x))
}

// extentRefs sets the reference count of the data extent of path.
func (s *Surgeon) extentRefs(path string, refs uint64) {
	l, n := s.Extent(s.Ino(path))
	k := format.Key{ObjectID: l, Type: format.ExtentItemKey, Offset: n}
	e, err := format.UnmarshalExtentItem(s.Get(extT, k))
	if err != nil {
		s.fail(err)
		return
	}
	e.Refs = refs
	s.Put(extT, k, format.MarshalExtentItem(e))
}

// superBehind rewrites the superblock copy at off of device i one
// generation older (as a copy a crash left behind looks).
func (s *Surgeon) superBehind(i int, off int64) {
	s.Raw(func(*store.FS) {
		b := make([]byte, format.SuperblockSize)
		s.Devs[i].ReadAt(b, off)
		sb, err := format.UnmarshalSuperblock(b)
		if err != nil {
			s.fail(err)
			return
		}
		// A real lag (a crash between superblock writes): the copy holds
		// the previous generation's root set, which the set remembers
		// among its backups (FORMAT.md §3.7); anything else is a diverged
		// member that discovery refuses.
		sb.Generation--
		for _, b := range sb.Backups {
			if b.Generation == sb.Generation {
				sb.Roots = b
			}
		}
		nb, err := format.MarshalSuperblock(sb)
		s.fail(err)
		s.Devs[i].WriteAt(nb, off)
	})
}

// wrongCounters rewrites every superblock copy with counters off by a
// block, an index entry and a node: a consistent set of superblocks whose
// counters disagree with the trees (FORMAT.md §3.9).
func (s *Surgeon) wrongCounters() {
	s.Raw(func(*store.FS) {
		for _, d := range s.Devs {
			for _, off := range format.SuperblockOffsets {
				b := make([]byte, format.SuperblockSize)
				if n, _ := d.ReadAt(b, int64(off)); n != len(b) {
					continue // the device does not hold this copy
				}
				sb, err := format.UnmarshalSuperblock(b)
				if err != nil {
					s.fail(err)
					return
				}
				sb.Counters.PhysicalBytes += ss
				sb.Counters.IndexEntries++
				sb.Counters.IndexNodes++
				nb, err := format.MarshalSuperblock(sb)
				s.fail(err)
				d.WriteAt(nb, int64(off))
			}
			d.Flush()
		}
	})
}

// devItem changes the device item of device 1.
func (s *Surgeon) devItem(change func(*format.DevItem)) {
	k := format.Key{ObjectID: format.DevItemsObjectID, Type: format.DevItemKey, Offset: 1}
	d, err := format.UnmarshalDevItem(s.Get(format.ChunkTree, k))
	if err != nil {
		s.fail(err)
		return
	}
	change(d)
	s.Put(format.ChunkTree, k, format.MarshalDevItem(d))
}

// dataChunk calls fn with the chunk item of the data chunk.
func (s *Surgeon) dataChunk(fn func(format.Key, *format.ChunkItem)) {
	for _, bg := range s.st.BlockGroups() {
		if bg.Chunk.Type == format.ChunkData {
			k := format.Key{ObjectID: format.ChunkObjectID, Type: format.ChunkItemKey, Offset: bg.Chunk.Logical}
			c, _, err := format.UnmarshalChunkItem(s.Get(format.ChunkTree, k))
			if err != nil {
				s.fail(err)
				return
			}
			fn(k, c)
			return
		}
	}
}
