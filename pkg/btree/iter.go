package btree

import (
	"github.com/ddfs/ddfs/format"
)

type frame struct {
	n   *format.Node
	idx int
}

// Iter walks items in key order. The tree must not be modified while an
// iterator is in use.
type Iter struct {
	t    *Tree
	path []frame
	err  error
	// more: the iterator started in a hinted leaf, the only node on its
	// path; the keys after that leaf start at next (its range's end).
	next format.Key
	more bool
	// room holds the path of trees up to its depth without a second
	// allocation (a seek per tree lookup; 57 MB of path slices in a
	// dedupe run).
	room [5]frame
}

// Seek returns an iterator positioned at the first item >= key.
func (t *Tree) Seek(key format.Key) *Iter {
	it := &Iter{}
	t.seek(it, key)
	return it
}

// seek positions it at the first item >= key.
func (t *Tree) seek(it *Iter, key format.Key) {
	*it = Iter{t: t}
	it.path = it.room[:0]
	if s := t.hints.find(t.root, key); s != nil {
		i, _ := itemIndex(s.leaf, key)
		it.path = append(it.path, frame{s.leaf, i})
		it.next, it.more = s.hi, !s.open
		it.settle()
		return
	}
	n, err := t.descend(key, &it.path)
	if err != nil || n == nil {
		it.err, it.path = err, nil
		return
	}
	i, _ := itemIndex(n, key)
	it.path = append(it.path, frame{n, i})
	it.settle()
}

// First returns an iterator at the smallest key.
func (t *Tree) First() *Iter { return t.Seek(format.Key{}) }

// settle moves past exhausted nodes to the next item, if any.
func (it *Iter) settle() {
	for len(it.path) > 0 {
		top := &it.path[len(it.path)-1]
		if top.idx < top.n.NumItems() {
			if top.n.IsLeaf() {
				return
			}
			c, err := it.t.readChild(top.n, top.idx)
			if err != nil {
				it.err, it.path = err, nil
				return
			}
			it.path = append(it.path, frame{c, 0})
			continue
		}
		it.path = it.path[:len(it.path)-1]
		if len(it.path) > 0 {
			it.path[len(it.path)-1].idx++
		}
	}
	if it.more {
		// Past the hinted leaf: every key from next on is in the leaves
		// after it, which a descent finds (or fails to read: it.err).
		it.t.seek(it, it.next)
	}
}

// Valid reports whether the iterator is at an item.
func (it *Iter) Valid() bool { return it.err == nil && len(it.path) > 0 }

// Err is the error that stopped the iteration, if any.
func (it *Iter) Err() error { return it.err }

// Item returns the current item; valid only while Valid.
func (it *Iter) Item() format.Item {
	top := it.path[len(it.path)-1]
	return top.n.Items[top.idx]
}

// Key is the current item's key.
func (it *Iter) Key() format.Key { return it.Item().Key }

// Next advances to the next item.
func (it *Iter) Next() {
	if !it.Valid() {
		return
	}
	it.path[len(it.path)-1].idx++
	it.settle()
}

// Scan calls fn for every item with start <= key < end, in order, until fn
// returns false or an error.
func (t *Tree) Scan(start, end format.Key, fn func(format.Item) (bool, error)) error {
	// One iterator per tree handle is reused (a new one per Scan was 64
	// MB of a dedupe run's garbage); a Scan inside fn takes a new one.
	it := t.spare
	if it == nil {
		it = &Iter{}
	}
	t.spare = nil
	t.seek(it, start)
	err := t.scan(it, end, fn)
	*it = Iter{} // holds no nodes while spare
	t.spare = it
	return err
}

func (t *Tree) scan(it *Iter, end format.Key, fn func(format.Item) (bool, error)) error {
	for ; it.Valid() && it.Key().Less(end); it.Next() {
		more, err := fn(it.Item())
		if err != nil || !more {
			return err
		}
	}
	return it.Err()
}

// SeekLE returns the item with the largest key <= key (ErrNotFound if none).
func (t *Tree) SeekLE(key format.Key) (format.Item, error) {
	n, err := t.leafFor(key)
	if err != nil || n == nil {
		return format.Item{}, joinNotFound(err)
	}
	i, found := itemIndex(n, key)
	if found {
		return n.Items[i], nil
	}
	if i == 0 {
		// Child keys are exact first keys, so only the leftmost leaf can
		// start after key: nothing is <= key.
		return format.Item{}, ErrNotFound
	}
	return n.Items[i-1], nil
}

func joinNotFound(err error) error {
	if err != nil {
		return err
	}
	return ErrNotFound
}
