package scrub

import (
	"fmt"

	"github.com/ddfs/ddfs/format"
)

// UnreadNode is a tree node no copy of which reads: what lies below it
// (metadata items, checksums, file extents) was not scrubbed.
type UnreadNode struct {
	Tree    string `json:"tree"`
	Logical uint64 `json:"logical"`
	Error   string `json:"error"`
}

// scan calls fn with the items of tree id in [from, to) in key order,
// as btree's Scan, but goes on past a node that does not read (a scrub
// reports what it could not reach instead of stopping at it): each such
// node is listed once in the report.
func (s *scrubber) scan(id format.TreeID, from, to format.Key, fn func(format.Item) (bool, error)) error {
	r := s.fs.Tree(id).Root()
	if r.Logical == 0 {
		return nil
	}
	_, err := s.scanNode(id, r.Logical, r.Generation, int(r.Level), from, to, fn)
	return err
}

// scanNode is scan below one node; more is false once fn stopped or the
// items passed to.
func (s *scrubber) scanNode(id format.TreeID, l, gen uint64, level int, from, to format.Key, fn func(format.Item) (bool, error)) (more bool, err error) {
	n, err := s.fs.ReadNode(id, l, gen, level)
	if err != nil {
		s.unread(id, l, err)
		return true, nil
	}
	if n.IsLeaf() {
		for _, it := range n.Items {
			switch {
			case it.Key.Less(from):
				continue
			case !it.Key.Less(to):
				return false, nil
			}
			if more, err := fn(it); !more || err != nil {
				return false, err
			}
		}
		return true, nil
	}
	for i, p := range n.Ptrs {
		if i+1 < len(n.Ptrs) && !from.Less(n.Ptrs[i+1].Key) {
			continue // the child ends before from
		}
		if !p.Key.Less(to) {
			return false, nil
		}
		if more, err := s.scanNode(id, p.Logical, p.Generation, level-1, from, to, fn); !more || err != nil {
			return more, err
		}
	}
	return true, nil
}

// unread lists node l of tree id once.
func (s *scrubber) unread(id format.TreeID, l uint64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range s.rep.NodesUnread {
		if u.Logical == l {
			return
		}
	}
	s.rep.NodesUnread = append(s.rep.NodesUnread, UnreadNode{Tree: id.String(), Logical: l, Error: fmt.Sprint(err)})
}
