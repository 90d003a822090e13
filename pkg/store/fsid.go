package store

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/ddfs/ddfs/format"
)

// resealBytes is how much of a node copy a fsid change writes back: its
// header's fsid and checksum lie in the first sector, and a sector write
// is atomic, so every copy is always a valid node (FORMAT.md §3.8).
const resealBytes = 512

// FSIDChange reports what ChangeFSID did.
type FSIDChange struct {
	Old, New [16]byte
	Nodes    int // nodes visited
	Copies   int // node copies rewritten
	// BadCopies counts copies that did not validate and were left as they
	// were (fsck reports them either way).
	BadCopies int
}

// ChangeFSID gives the set the filesystem UUID to, crash-safe (FORMAT.md
// §3.8): a commit records the change in new_fsid, every copy of every node
// gets its header resealed in place, and a final commit switches the fsid.
// A change left pending by an interrupted run is finished first.
func (fs *FS) ChangeFSID(to [16]byte) (FSIDChange, error) {
	var zero [16]byte
	res := FSIDChange{Old: fs.sb.FSID, New: to}
	if to == zero {
		return res, errors.New("the nil UUID cannot name a filesystem")
	}
	// Each pass moves the state machine on: start, finish, or done; a
	// pending change to another UUID costs one extra round.
	for range 4 {
		switch pending := fs.sb.NewFSID; {
		case pending != zero:
			if err := fs.resealAll(pending, &res); err != nil {
				return res, err
			}
			if err := fs.commitFSID(func(sb *format.Superblock) {
				sb.FSID, sb.NewFSID = pending, zero
				sb.Incompat &^= format.IncompatFSIDChange
			}); err != nil {
				return res, err
			}
		case fs.sb.FSID == to:
			return res, nil
		default:
			if err := fs.commitFSID(func(sb *format.Superblock) {
				sb.NewFSID = to
				sb.Incompat |= format.IncompatFSIDChange
			}); err != nil {
				return res, err
			}
		}
	}
	return res, fmt.Errorf("fsid change did not settle")
}

// commitFSID commits a transaction whose superblock change applies.
func (fs *FS) commitFSID(change func(*format.Superblock)) error {
	tx, err := fs.Begin()
	if err != nil {
		return err
	}
	tx.superChange = change
	return tx.Commit()
}

// resealAll rewrites the fsid of every copy of every node reachable from
// the committed root set. The nodes keep their place and generation.
func (fs *FS) resealAll(to [16]byte, res *FSIDChange) error {
	seen := map[uint64]bool{}
	for id := format.TreeID(1); id <= format.NumTrees; id++ {
		r := fs.sb.Roots.Root(id)
		if r.Logical == 0 {
			continue
		}
		if err := fs.resealTree(id, r.Logical, r.Generation, int(r.Level), to, seen, res); err != nil {
			return err
		}
	}
	// Each snapshot's fs tree: the nodes only it keeps would be read
	// under the old fsid no more (FORMAT.md §6.12).
	roots, err := fs.SnapshotRoots()
	if err != nil {
		return fmt.Errorf("fsid change: %w", err)
	}
	for _, r := range roots {
		if err := fs.resealTree(format.FSTree, r.Logical, r.Generation, int(r.Level), to, seen, res); err != nil {
			return err
		}
	}
	return nil
}

func (fs *FS) resealTree(owner format.TreeID, logical, gen uint64, level int, to [16]byte, seen map[uint64]bool, res *FSIDChange) error {
	if seen[logical] {
		if owner == format.FSTree && fs.sb.Incompat&format.IncompatSnapshots != 0 {
			return nil // shared with a snapshot: resealed once
		}
		return fmt.Errorf("%v tree: node %d reached twice: %w", owner, logical, ErrCorrupt)
	}
	seen[logical] = true
	n, err := fs.readNode(owner, logical, gen, level, nil)
	if err != nil {
		return fmt.Errorf("fsid change: %w", err)
	}
	res.Nodes++
	if err := fs.resealCopies(n, to, res); err != nil {
		return err
	}
	for _, p := range n.Ptrs {
		if err := fs.resealTree(owner, p.Logical, p.Generation, level-1, to, seen, res); err != nil {
			return err
		}
	}
	return nil
}

// resealCopies rewrites the first sector of each valid copy of n that
// does not carry to yet.
func (fs *FS) resealCopies(n *format.Node, to [16]byte, res *FSIDChange) error {
	buf := make([]byte, fs.sb.NodeSize)
	want := format.NodeExpect{FSID: fs.sb.FSID, AltFSID: fs.sb.NewFSID, Logical: n.Logical, Generation: n.Generation, Owner: n.Owner, Level: int(n.Level)}
	for m := 0; m < fs.Vol.Copies(n.Logical); m++ {
		if err := fs.Vol.ReadCopy(n.Logical, buf, m); err != nil {
			res.BadCopies++
			continue
		}
		if _, err := format.UnmarshalNode(buf, fs.sb.CsumType, want); err != nil {
			res.BadCopies++
			continue
		}
		if bytes.Equal(buf[32:48], to[:]) {
			continue
		}
		format.ResealNodeFSID(buf, fs.sb.CsumType, to)
		if err := fs.Vol.WriteCopy(n.Logical, buf[:resealBytes], m); err != nil {
			return fmt.Errorf("fsid change: %v tree node %d copy %d: %w", n.Owner, n.Logical, m, err)
		}
		res.Copies++
	}
	return nil
}
