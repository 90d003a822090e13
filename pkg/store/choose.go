package store

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/volume"
)

// ErrCopiesDiffer: two copies of a node both fit the node's place in its
// tree (checksum, header and first key as its parent's pointer expects)
// but hold different bytes, so nothing tells which one was written by
// the commit; a reader refuses rather than return either (FORMAT.md
// §4.4). It also matches ErrCorrupt.
var ErrCopiesDiffer = errors.New("node copies fit its place in the tree but differ")

// Place is what a node's place in its tree says of it before it is read:
// the header its parent's pointer (or the superblock's root pointer)
// expects and, below the root, the pointer's key, which must be the
// node's first key (FORMAT.md §4.1).
type Place struct {
	format.NodeExpect
	FirstKey *format.Key // nil: a root, no key known
}

// checkPlace validates one copy's bytes against p: UnmarshalNode's
// checks, then the first key.
func checkPlace(b []byte, csum format.CsumType, p Place) (*format.Node, error) {
	n, err := format.UnmarshalNode(b, csum, p.NodeExpect)
	if err != nil {
		return nil, err
	}
	if p.FirstKey != nil && (n.NumItems() == 0 || n.FirstKey() != *p.FirstKey) {
		return nil, fmt.Errorf("first key %v, the parent's pointer says %v: %w", n.FirstKey(), *p.FirstKey, format.ErrCorrupt)
	}
	return n, nil
}

// Choice is the verdict on every copy of one node.
type Choice struct {
	Node   *format.Node // decoded from copy Winner
	Winner int
	// Bad are the copies that were read but do not fit the place (a read
	// error, checksum, header or first key), with why: the ones to
	// rewrite from the winner. Missing devices are neither.
	Bad    []int
	Causes []error
}

// ChooseCopy decides which copy of a node to trust from bufs (copy m's
// bytes, nil where readErrs[m] says why it could not be read): the one
// whose content alone fits p. Copies that fit and are equal past the
// checksum and fsid (a fsid change rewrites only those, §3.8) count as
// one. No copy fitting is the joined causes; two different contents
// fitting is ErrCopiesDiffer: the place cannot decide, so neither is
// returned.
func ChooseCopy(bufs [][]byte, readErrs []error, csum format.CsumType, p Place) (Choice, error) {
	ch := Choice{Winner: -1}
	var errs error
	var rivals []int
	for m, b := range bufs {
		err := readErrs[m]
		if err == nil && ch.Winner >= 0 && bytes.Equal(b, bufs[ch.Winner]) {
			continue // the same bytes fit alike
		}
		var n *format.Node
		if err == nil {
			n, err = checkPlace(b, csum, p)
		}
		switch {
		case err != nil:
			errs = errors.Join(errs, fmt.Errorf("copy %d: %w", m, err))
			if !errors.Is(err, volume.ErrMissingDevice) {
				ch.Bad, ch.Causes = append(ch.Bad, m), append(ch.Causes, err)
			}
		case ch.Winner < 0:
			ch.Node, ch.Winner = n, m
		case !bytes.Equal(b[format.NodeFSIDEnd:], bufs[ch.Winner][format.NodeFSIDEnd:]):
			rivals = append(rivals, m)
		}
	}
	switch {
	case ch.Winner < 0:
		return ch, errs
	case len(rivals) > 0:
		return ch, fmt.Errorf("copy %d and copies %v: %w: %w", ch.Winner, rivals, ErrCopiesDiffer, format.ErrCorrupt)
	}
	return ch, nil
}

// ReadCopies reads every copy of the node at p.Logical from vol and
// chooses among them (ChooseCopy); bufs are the copies' bytes. It keeps
// no state, so checkers and scrub workers call it side by side.
func ReadCopies(vol *volume.Volume, csum format.CsumType, nodeSize uint32, p Place) (Choice, [][]byte, error) {
	n := vol.Copies(p.Logical)
	if n == 0 {
		return Choice{Winner: -1}, nil, fmt.Errorf("logical %d is in no chunk: %w", p.Logical, ErrCorrupt)
	}
	bufs, errs := make([][]byte, n), make([]error, n)
	for m := range bufs {
		bufs[m] = make([]byte, nodeSize)
		errs[m] = vol.ReadCopy(p.Logical, bufs[m], m)
	}
	ch, err := ChooseCopy(bufs, errs, csum, p)
	return ch, bufs, err
}
