package check

import (
	"fmt"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/store"
)

// copiesDiffer reports the copies of a node that validate but differ
// (r.differ) and returns the node the rest of the check reads: the copy
// that fits the node's place (store.ChooseCopy with the parent pointer's
// key, FORMAT.md §4.4), the one every reader takes. A copy that
// validates but does not fit is NODE_COPIES_DIFFER with the fix that
// rewrites it; when the place cannot decide, the differing copies are
// reported without a fix (readers refuse the node) and the check goes on
// with copy r.first.
func (c *checker) copiesDiffer(id format.TreeID, gen uint64, level int, firstKey *format.Key, r *nodeRead) *format.Node {
	if len(r.differ) == 0 {
		return r.node
	}
	logical := r.node.Logical
	place := store.Place{NodeExpect: format.NodeExpect{FSID: c.sb.FSID, AltFSID: c.sb.NewFSID, Logical: logical, Generation: gen, Owner: id, Level: level}, FirstKey: firstKey}
	bufs, errs := c.rereadCopies(logical, r)
	ch, err := store.ChooseCopy(bufs, errs, c.sb.CsumType, place)
	if err != nil {
		for _, m := range r.differ {
			c.addDiffer(id, logical, r, m, r.first, "which also validates; the node's place cannot tell which is right", nil)
		}
		return r.node
	}
	for i, m := range ch.Bad {
		if r.errs[m] != nil || firstKey == nil {
			continue // NODE_COPY_BAD already
		}
		fix := &fixData{gen: gen, level: level, owner: id, key: *firstKey}
		c.addDiffer(id, logical, r, m, ch.Winner, fmt.Sprintf("which alone fits the node's place (%v)", errString(ch.Causes[i])), fix)
	}
	return ch.Node
}

// addDiffer adds NODE_COPIES_DIFFER at copy m, naming copy other.
func (c *checker) addDiffer(id format.TreeID, logical uint64, r *nodeRead, m, other int, why string, fix *fixData) {
	p := Problem{Code: NodeCopiesDiffer, Tree: id.String(), Logical: logical, Copy: copyNum(m), fix: fix,
		Message: fmt.Sprintf("copy %d validates but differs from copy %d%s, %s", m, other, c.copyPlace(r.targets, other), why)}
	c.locate(&p, r.targets, m)
	c.add(p)
}

// rereadCopies reads every copy of a node again into buffers of its own
// (r's may be views of a run read): the rare path of copies that differ.
// A copy r found bad keeps its error unread.
func (c *checker) rereadCopies(logical uint64, r *nodeRead) ([][]byte, []error) {
	bufs, errs := make([][]byte, len(r.errs)), make([]error, len(r.errs))
	for m := range bufs {
		if errs[m] = r.errs[m]; errs[m] != nil {
			continue
		}
		bufs[m] = make([]byte, c.sb.NodeSize)
		errs[m] = c.vol.ReadCopy(logical, bufs[m], m)
	}
	return bufs, errs
}
