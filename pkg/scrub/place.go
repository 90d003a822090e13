package scrub

import (
	"bytes"
	"fmt"
	"sort"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/store"
)

// placeCopies settles a node whose valid copies differ before settle
// compares them (issue 36): settle takes the first good copy as right,
// which may be the altered one. Each differing content is looked up in
// its tree by its first key (fitsPlace); when exactly one fits, the
// others become mismatches that --repair rewrites from it; otherwise
// every valid copy becomes a mismatch with no good copy left, so nothing
// is rewritten and the node is uncorrectable, as readers refuse it.
func (s *scrubber) placeCopies(u *unit, bufs [][]byte, states []copyState) {
	valid := []int{}
	differ := false
	for m, st := range states {
		if st.present && st.kind == "" {
			differ = differ || (len(valid) > 0 && !bytes.Equal(bufs[m][format.NodeFSIDEnd:], bufs[valid[0]][format.NodeFSIDEnd:]))
			valid = append(valid, m)
		}
	}
	if !differ {
		return
	}
	winner := -1
	for _, m := range valid {
		if !s.fitsPlace(u, bufs[m]) {
			continue
		}
		if winner >= 0 && !bytes.Equal(bufs[m][format.NodeFSIDEnd:], bufs[winner][format.NodeFSIDEnd:]) {
			winner = -2 // two contents fit: the place cannot decide
			break
		}
		if winner == -1 {
			winner = m
		}
	}
	for _, m := range valid {
		switch {
		case winner < 0:
			states[m].kind, states[m].detail = KindMismatch, "copies validate but differ, and the node's place in its tree cannot tell which is right"
		case !bytes.Equal(bufs[m][format.NodeFSIDEnd:], bufs[winner][format.NodeFSIDEnd:]):
			states[m].kind, states[m].detail = KindMismatch, fmt.Sprintf("differs from copy %d, which alone fits the node's place in its tree", winner)
		}
	}
}

// fitsPlace reports whether the node in b (valid for u's header) is where
// its tree puts it: the tree's root, or the child that the pointer at
// its first key leads to from the level above, with that key and its
// generation (FORMAT.md §4.1).
func (s *scrubber) fitsPlace(u *unit, b []byte) bool {
	sb := s.fs.Super()
	n, err := format.UnmarshalNode(b, sb.CsumType, format.NodeExpect{FSID: sb.FSID, AltFSID: sb.NewFSID, Logical: u.logical, Level: -1})
	if err != nil || n.Owner < 1 || n.Owner > format.NumTrees {
		return false
	}
	for _, root := range s.rootsOf(n.Owner) {
		if root.Logical == u.logical {
			if root.Generation == n.Generation && int(root.Level) == int(n.Level) {
				return true
			}
			continue
		}
		if n.NumItems() == 0 || int(root.Level) <= int(n.Level) {
			continue
		}
		p, err := s.pointerTo(n.Owner, root, n.FirstKey(), int(n.Level)+1)
		if err == nil && p.Logical == u.logical && p.Key == n.FirstKey() && p.Generation == n.Generation {
			return true
		}
	}
	return false
}

// rootsOf lists the roots of tree id: the root set's, and for the fs
// tree every snapshot's too (a node a snapshot shares or alone keeps
// has its place there, FORMAT.md §6.12).
func (s *scrubber) rootsOf(id format.TreeID) []format.RootPtr {
	sb := s.fs.Super()
	roots := []format.RootPtr{sb.Roots.Root(id)}
	if id != format.FSTree {
		return roots
	}
	snaps, err := s.fs.SnapshotRoots()
	if err != nil {
		return roots // no place found there: reported, not repaired
	}
	return append(roots, snaps...)
}

// pointerTo descends tree id from root r toward key, each node's copy
// chosen as readers choose it (store.ReadCopies: no cache, so workers run
// it side by side), and returns the pointer the node at level follows.
func (s *scrubber) pointerTo(id format.TreeID, r format.RootPtr, key format.Key, level int) (format.KeyPtr, error) {
	sb := s.fs.Super()
	p := format.KeyPtr{Logical: r.Logical, Generation: r.Generation}
	var first *format.Key // none for the root
	for l := int(r.Level); l >= level; l-- {
		want := format.NodeExpect{FSID: sb.FSID, AltFSID: sb.NewFSID, Logical: p.Logical, Generation: p.Generation, Owner: id, Level: l}
		ch, _, err := store.ReadCopies(s.fs.Vol, sb.CsumType, sb.NodeSize, store.Place{NodeExpect: want, FirstKey: first})
		if err != nil {
			return format.KeyPtr{}, err
		}
		if ch.Node.IsLeaf() || len(ch.Node.Ptrs) == 0 {
			return format.KeyPtr{}, fmt.Errorf("%v tree: no level %d above key %v: %w", id, level, key, format.ErrCorrupt)
		}
		ptrs := ch.Node.Ptrs
		i := max(sort.Search(len(ptrs), func(i int) bool { return key.Less(ptrs[i].Key) })-1, 0)
		p = ptrs[i]
		k := p.Key
		first = &k
	}
	return p, nil
}
