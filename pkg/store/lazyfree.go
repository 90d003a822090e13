package store

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ddfs/ddfs/format"
)

// A small writer need not list every node of every tree to know that the
// metadata block it takes is not one of them (verifyFree reads every
// interior node: 357 at 1M files, most of a snapshot create's time). A
// metadata or system group's free map is loaded lazily for allocation
// (bg.lazy): each block handed out is checked on its own (checkTaken),
// and any other use of the map (discard, relocation, shrink, trim, the
// fsync log's claims) verifies the whole map first (verifiedFree).
//
// Why the check of one block X is complete: a reader reaches a node only
// through pointers whose generation is the node's header generation (0:
// unknown, followed), and it refuses a child newer than its parent (btree
// checkChild, DiffTrees; FORMAT.md §4.1), so every node on a readable
// path to X is at least as new as X's header. X is in use only if some
// copy of it decodes as a node of this filesystem at X (or the cache
// holds one); the walk then follows, from every root, only pointers at
// least as new as the oldest such copy, and finds any pointer to X. A
// block whose copies all read and name no node here cannot be read by
// anyone: it is free. One that does not read, or names X yet fails its
// checksum, is left to the whole map's check. (ddfs rescue salvages
// past what readers refuse, a child newer than its parent too: on such
// a damaged image a writer may take a block only rescue could read.)

// Bounds of the lazy check: past them the group's whole map is verified
// (one walk of every tree, as before) and used as it is. Variables for
// the tests only.
var (
	lazyBlocks = 64 // blocks checked one by one per group
	lazyNodes  = 64 // interior nodes one block's walk may read
)

var errLazyBudget = errors.New("lazy free-space check over budget")

// lazyEligible: a group whose map may be loaded lazily for allocation.
func (fs *FS) lazyEligible(bg *BlockGroup) bool {
	return !fs.repair && !bg.isNew && bg.Chunk.Type != format.ChunkData && !bg.Chunk.IsParity()
}

// loadFreeLazy loads bg's free map from the extent tree alone; the
// blocks allocation takes from it are checked one by one.
func (fs *FS) loadFreeLazy(bg *BlockGroup) error {
	free, err := fs.rawFree(bg)
	if err != nil {
		return err
	}
	bg.free, bg.lazy, bg.lazyChecked = free, true, 0
	return nil
}

// verifiedFree returns bg's free map, loaded and verified whole (see
// loadFree): what every use but allocation needs.
func (fs *FS) verifiedFree(bg *BlockGroup) error {
	if bg.free == nil {
		return fs.loadFree(bg)
	}
	if !bg.lazy {
		return nil
	}
	if err := fs.verifyFree(bg, bg.free); err != nil {
		return err
	}
	bg.lazy = false
	return nil
}

// checkTaken holds [at, +n), just taken from bg's lazily loaded map,
// against the trees: a block some tree points at is ErrSpaceInUse. Past
// the lazy bounds the whole map is verified instead.
func (fs *FS) checkTaken(bg *BlockGroup, at, n uint64) error {
	if !bg.lazy {
		return nil
	}
	ns := uint64(fs.sb.NodeSize)
	for x := at &^ (ns - 1); x < at+n; x += ns {
		bg.lazyChecked++
		err := errLazyBudget
		if bg.lazyChecked <= lazyBlocks {
			err = fs.checkBlock(x)
		}
		if errors.Is(err, errLazyBudget) {
			// The taken range is out of the map: verify the rest, then
			// the range itself.
			if err := fs.verifiedFree(bg); err != nil {
				return err
			}
			return fs.checkNodesIn(bg, at, n)
		}
		if err != nil {
			return fmt.Errorf("block group %d: %w", bg.Chunk.Logical, err)
		}
	}
	return nil
}

// checkNodesIn holds [at, +n) against every node the trees name.
func (fs *FS) checkNodesIn(bg *BlockGroup, at, n uint64) error {
	nodes, err := fs.liveNodes()
	if err != nil {
		return fmt.Errorf("block group %d: %w", bg.Chunk.Logical, err)
	}
	ns := uint64(fs.sb.NodeSize)
	for _, l := range nodes {
		if l < at+n && l+ns > at {
			return fmt.Errorf("block group %d: node at logical %d: %w: %w", bg.Chunk.Logical, l, ErrSpaceInUse, ErrCorrupt)
		}
	}
	return nil
}

// checkBlock reports whether a tree may point at the block at x: no copy
// decoding as a node of this filesystem at x (nor a cached node there) is
// free at once; else the pointers at least as new as the oldest such copy
// are walked. A copy that cannot be read, or whose header names this
// filesystem and x yet does not decode (a bad checksum: damage a reader
// may still see through another path, the cache or a repair), is not
// "no node": the whole map is verified instead.
func (fs *FS) checkBlock(x uint64) error {
	oldest, node := uint64(0), false
	if n := fs.cache.get(x); n != nil {
		oldest, node = n.Generation, true
	}
	buf := make([]byte, fs.sb.NodeSize)
	for m := 0; m < fs.Vol.Copies(x); m++ {
		if fs.Vol.ReadCopy(x, buf, m) != nil {
			return errLazyBudget
		}
		want := format.NodeExpect{FSID: fs.sb.FSID, AltFSID: fs.sb.NewFSID, Logical: x, Level: -1}
		n, err := format.UnmarshalNodeShared(buf, fs.sb.CsumType, want, nil)
		if err != nil {
			if fs.namesHere(buf, x) {
				return errLazyBudget
			}
			continue
		}
		if !node || n.Generation < oldest {
			oldest, node = n.Generation, true
		}
	}
	if !node {
		return nil
	}
	return fs.walkPointersTo(x, oldest)
}

// namesHere: b's node header names this filesystem (or the one a fsid
// change goes to) and logical address x (FORMAT.md §4.1 header offsets).
func (fs *FS) namesHere(b []byte, x uint64) bool {
	if len(b) < 56 || binary.LittleEndian.Uint64(b[48:]) != x {
		return false
	}
	id := [16]byte(b[32:48])
	return id == fs.sb.FSID || fs.sb.NewFSID != [16]byte{} && id == fs.sb.NewFSID
}

// walkPointersTo looks for a pointer to x from every root, following
// only pointers of generation >= gen; ErrSpaceInUse when one names x.
func (fs *FS) walkPointersTo(x, gen uint64) error {
	ns := uint64(fs.sb.NodeSize)
	read := 0
	return fs.walkNodes(func(v walkedNode, fresh bool) (bool, error) {
		// Overlap, not equality: a node off the alignment is refused by
		// readers, yet "in use" wins.
		if v.logical < x+ns && v.logical+ns > x {
			return false, fmt.Errorf("node at logical %d (generation %d or newer): %w: %w", v.logical, gen, ErrSpaceInUse, ErrCorrupt)
		}
		// A pointer of generation 0 is "unknown" to readers (they take
		// any header's): it is followed.
		if !fresh || v.gen != 0 && v.gen < gen {
			return false, nil
		}
		if read++; read > lazyNodes {
			return false, errLazyBudget
		}
		return true, nil
	})
}
