// Package inband is the dedupe index a writer consults as it writes
// (FORMAT.md §6.8): block hashes, their entries in the dedupe tree with
// a bounded in-memory cache in front, matches proven before they are
// shared, strong tails made while a commit flushes, and the offline
// passes that rebuild and prune the index. It knows extents, not files:
// the filesystem (pkg/fsys) decides what to write and where, and calls
// Lookup, Verify, Enter and Drop around it through a small Host.
package inband

import (
	"errors"
	"fmt"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
	"github.com/ddfs/ddfs/pkg/store"
)

// Host is what the index needs of the filesystem it serves.
type Host interface {
	// Txn is the running transaction, begun when there is none.
	Txn() (*store.Txn, error)
	// Tree is the tree to read: the running transaction's view if there
	// is one, else the committed one.
	Tree(id format.TreeID) *btree.Tree
	// Extent reads a data extent checked (every copy, with repair):
	// decompressed, or its disk bytes.
	Extent(logical, diskLen, ram uint64, c format.Compression) ([]byte, error)
	// SumsStored reports whether sums are the stored sector sums from
	// logical on (false when one has none).
	SumsStored(logical uint64, sums []byte) (bool, error)
	// Drain puts the queued data writes on the devices.
	Drain() error
	// SafePoint commits when the batch is full; called only between
	// whole changes.
	SafePoint() error
}

// Options tune an Index.
type Options struct {
	// Cache bounds the in-memory cache (entries).
	Cache int
	// StrongTails: xxh3 entries made by a transaction get their strong
	// tail while its commit flushes (TailWhileFlushing).
	StrongTails bool
}

// Index is the dedupe index of one open filesystem. Not safe for
// concurrent use (as the FS that owns it).
type Index struct {
	st       *store.FS
	host     Host
	opt      Options
	cache    cache
	untailed []untailed
}

// New returns the index of st, served by host.
func New(st *store.FS, host Host, opt Options) *Index {
	if opt.Cache == 0 {
		opt.Cache = 1 << 20 // entries: ~48 MiB
	}
	return &Index{st: st, host: host, opt: opt, cache: cache{max: opt.Cache}}
}

// Hit is an existing extent holding a block.
type Hit struct {
	Logical, DiskLen, RAM uint64
	Compression           format.Compression
	Strong                *[format.DedupeHashLen]byte // the entry's strong tail, if any
}

// Lookup finds an extent whose block has this hash (of algo) and length:
// the in-memory cache first, then the dedupe tree (prefix, DEDUPE_ITEM,
// *). Entries of another algorithm never match (§6.8). nil: none. A hit
// is a candidate: Verify proves it unless the hash is strong.
func (x *Index) Lookup(hash [format.CsumSize]byte, algo format.CsumType, n uint64) (*Hit, error) {
	prefix := format.DedupeHashPrefix(hash)
	t := x.host.Tree(format.DedupeTree)
	var found uint64
	var strong *[format.DedupeHashLen]byte
	check := func(it format.Item) (bool, error) {
		d, err := format.UnmarshalDedupeItem(prefix, it.Data)
		if err != nil {
			return false, err
		}
		if d.Hash == hash && d.Length == n && d.HashAlgo == algo {
			found = it.Key.Offset
			strong = d.Strong
			return false, nil
		}
		return true, nil
	}
	if l, ok := x.cache.get(prefix); ok {
		b, err := getOptional(t, format.Key{ObjectID: prefix, Type: format.DedupeItemKey, Offset: l})
		if err != nil {
			return nil, err
		}
		if b != nil {
			if _, err := check(format.Item{Key: format.Key{Offset: l}, Data: b}); err != nil {
				return nil, err
			}
		}
	}
	if found == 0 {
		start := format.Key{ObjectID: prefix, Type: format.DedupeItemKey}
		if err := t.Scan(start, format.Key{ObjectID: prefix, Type: format.DedupeItemKey + 1}, check); err != nil {
			return nil, err
		}
	}
	if found == 0 {
		return nil, nil
	}
	x.cache.put(prefix, found)
	it := x.host.Tree(format.ExtentTree).Seek(format.Key{ObjectID: found, Type: format.ExtentItemKey})
	if !it.Valid() || it.Key().ObjectID != found || it.Key().Type != format.ExtentItemKey {
		return nil, errors.Join(it.Err(), fmt.Errorf("dedupe entry for %d without its extent: %w", found, format.ErrCorrupt))
	}
	e, err := format.UnmarshalExtentItem(it.Item().Data)
	if err == nil {
		err = format.CheckExtentItemKey(it.Key()) // the length sizes a verify read
	}
	if err != nil {
		return nil, err
	}
	return &Hit{Logical: found, DiskLen: it.Key().Offset, RAM: e.RAMBytes, Compression: e.Compression, Strong: strong}, nil
}

// Entry is a new block to index.
type Entry struct {
	Hash   [format.CsumSize]byte
	Algo   format.CsumType
	Length uint64 // the block's bytes
	Sums   []byte // its sector sums as written (raw whole-sector blocks), or nil
}

// Enter indexes the block that starts the extent at logical (e, about to
// be stored by the caller under the key (logical, EXTENT_ITEM, diskLen)):
// e is marked deduped with the hash prefix, and the entry goes into the
// dedupe tree and the cache.
func (x *Index) Enter(tx *store.Txn, e *format.ExtentItem, logical, diskLen uint64, b Entry) error {
	e.Flags, e.HashPrefix = format.ExtentFlagDeduped, format.DedupeHashPrefix(b.Hash)
	d := &format.DedupeItem{Hash: b.Hash, Length: b.Length, HashAlgo: b.Algo}
	k := format.Key{ObjectID: e.HashPrefix, Type: format.DedupeItemKey, Offset: logical}
	if err := tx.Tree(format.DedupeTree).Insert(k, format.MarshalDedupeItem(d)); err != nil {
		return err
	}
	x.cache.put(e.HashPrefix, logical)
	x.noteUntailed(untailed{key: k, hash: b.Hash, length: b.Length, sums: b.Sums,
		diskLen: diskLen, ram: e.RAMBytes, compression: e.Compression}, b.Algo)
	return nil
}

// Drop removes the entry of a freed extent (none unless e is marked).
func (x *Index) Drop(tx *store.Txn, logical uint64, e *format.ExtentItem) error {
	if e.Flags&format.ExtentFlagDeduped == 0 {
		return nil
	}
	x.cache.del(e.HashPrefix, logical)
	err := tx.Tree(format.DedupeTree).Delete(format.Key{ObjectID: e.HashPrefix, Type: format.DedupeItemKey, Offset: logical})
	if errors.Is(err, btree.ErrNotFound) {
		return fmt.Errorf("extent %d is marked deduped but has no index entry: %w", logical, format.ErrCorrupt)
	}
	return err
}

// Indexed reports whether a data extent's block has an index entry.
func Indexed(e *format.ExtentItem) bool { return e.Flags&format.ExtentFlagDeduped != 0 }

// Abort forgets what the running transaction noted (it is dropped).
func (x *Index) Abort() { x.untailed = nil }

// DropCache empties the in-memory cache (the tree still has every
// entry): lookups then find entries the slow way.
func (x *Index) DropCache() { clear(x.cache.m) }

// getOptional returns the value under k, or nil if there is none; an
// error reading the tree is returned, never taken for absence.
func getOptional(t *btree.Tree, k format.Key) ([]byte, error) {
	b, err := t.Get(k)
	if errors.Is(err, btree.ErrNotFound) {
		return nil, nil
	}
	return b, err
}
