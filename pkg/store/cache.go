package store

import (
	"container/list"

	"github.com/ddfs/ddfs/format"
)

// nodeCache keeps recently read clean nodes, bounded by count.
type nodeCache struct {
	max   int
	ll    *list.List
	index map[uint64]*list.Element
}

func newNodeCache(max int) *nodeCache {
	return &nodeCache{max: max, ll: list.New(), index: map[uint64]*list.Element{}}
}

func (c *nodeCache) get(logical uint64) *format.Node {
	if e, ok := c.index[logical]; ok {
		c.ll.MoveToFront(e)
		return e.Value.(*format.Node)
	}
	return nil
}

func (c *nodeCache) put(n *format.Node) {
	if e, ok := c.index[n.Logical]; ok {
		e.Value = n
		c.ll.MoveToFront(e)
		return
	}
	c.index[n.Logical] = c.ll.PushFront(n)
	for c.ll.Len() > c.max {
		e := c.ll.Back()
		c.ll.Remove(e)
		delete(c.index, e.Value.(*format.Node).Logical)
	}
}

func (c *nodeCache) drop(logical uint64) {
	if e, ok := c.index[logical]; ok {
		c.ll.Remove(e)
		delete(c.index, logical)
	}
}
