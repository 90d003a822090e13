package format

// Edits of a leaf's items that keep its byte count (Node.dataBytes), so
// UsedBytes is O(1) for the leaves a writer changes. A leaf that was never
// edited through them (decoded, or built as a literal) is counted on its
// first edit. Whoever edits a leaf's Items directly after that must call
// SetItems, or UsedBytes goes stale.

// count makes n's byte count valid.
func (n *Node) count() {
	if !n.counted {
		n.dataBytes, n.counted = dataBytes(n.Items), true
	}
}

// SetItems replaces a leaf's items and counts their bytes.
func (n *Node) SetItems(items []Item) {
	n.Items, n.dataBytes, n.counted = items, dataBytes(items), true
}

// InsertItem inserts it at index i of a leaf's items.
func (n *Node) InsertItem(i int, it Item) {
	n.count()
	n.Items = append(n.Items, Item{})
	copy(n.Items[i+1:], n.Items[i:])
	n.Items[i] = it
	n.dataBytes += len(it.Data)
}

// SetItemData replaces the value of a leaf's item i.
func (n *Node) SetItemData(i int, data []byte) {
	n.count()
	n.dataBytes += len(data) - len(n.Items[i].Data)
	n.Items[i].Data = data
}

// DeleteItem removes a leaf's item i.
func (n *Node) DeleteItem(i int) {
	n.count()
	n.dataBytes -= len(n.Items[i].Data)
	n.Items = append(n.Items[:i], n.Items[i+1:]...)
}

// CountDrift reports whether a leaf's kept byte count disagrees with its
// items (an edit that bypassed the methods above): the invariant checks
// and tests use it.
func (n *Node) CountDrift() bool {
	return n.IsLeaf() && n.counted && n.dataBytes != dataBytes(n.Items)
}
