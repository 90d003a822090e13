package store

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/ddfs/ddfs/format"
)

// ErrSysArray marks a superblock whose system chunk array disagrees with
// the chunk tree (FORMAT.md §3.4: every system chunk is in both,
// identical). The array is what a reader maps the chunk tree's own nodes
// with, so a lying array points reads, and a heal's rewrite of a copy,
// at whatever else lies there: a writable open refuses such a set
// (fsck.ddfs repairs the array from the chunk tree, whose nodes
// validated).
var ErrSysArray = errors.New("system chunk array disagrees with the chunk tree")

// sysArrayDiff compares the superblock's system chunk array with the
// system chunks of the chunk tree (tree holds their encoded items by
// logical).
func sysArrayDiff(sb *format.Superblock, tree map[uint64][]byte) error {
	seen := map[uint64]bool{}
	for _, sc := range sb.SysChunks {
		seen[sc.Logical] = true
		item, ok := tree[sc.Logical]
		switch {
		case !ok:
			return fmt.Errorf("%w: array chunk %d is not a system chunk of the chunk tree: %w", ErrSysArray, sc.Logical, ErrCorrupt)
		case !bytes.Equal(item, format.MarshalChunkItem(sc.Chunk)):
			return fmt.Errorf("%w: chunk %d differs (stripes or fields): %w", ErrSysArray, sc.Logical, ErrCorrupt)
		}
	}
	for l := range tree {
		if !seen[l] {
			return fmt.Errorf("%w: system chunk %d of the chunk tree is not in the array: %w", ErrSysArray, l, ErrCorrupt)
		}
	}
	return nil
}

// CheckSysChunks reports whether the system chunk array the set was
// opened with agrees with its chunk tree (nil: it does).
func (fs *FS) CheckSysChunks() error { return fs.sysArray }

// SysArrayDiff is the comparison a writable open makes, for fsck: nil
// when sb's system chunk array equals tree (the chunk tree's system
// chunk items, encoded, by logical), else an error matching ErrSysArray
// that names the first difference.
func SysArrayDiff(sb *format.Superblock, tree map[uint64][]byte) error {
	return sysArrayDiff(sb, tree)
}
