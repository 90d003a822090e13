package btree

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/ddfs/ddfs/format"
)

// TestLeafCountExact: after every insert, replacement (of a different
// size), delete, shift, split and merge, every leaf the transaction
// changed keeps a byte count equal to its items' sum, and the O(1)
// UsedBytes the fill checks use is that sum. Breaking the count update
// of InsertItem, SetItemData, DeleteItem or SetItems makes it fail.
func TestLeafCountExact(t *testing.T) {
	for _, nodesize := range []uint32{4096, 16384} {
		r := rand.New(rand.NewPCG(uint64(nodesize), 16))
		s := newMemStore(t, nodesize)
		tr := New(s, format.FSTree, format.RootPtr{})
		var keys []format.Key // present, in insertion order: runs repeat
		checked, replaced := 0, 0
		for op := range 4000 {
			switch x := r.IntN(10); {
			case x < 3 && len(keys) > 0: // a replacement, of another size
				k := keys[r.IntN(len(keys))]
				old, _ := tr.Get(k)
				d := randData(r, nodesize)
				if err := tr.Put(k, d); err != nil {
					t.Fatal(err)
				}
				if len(d) != len(old) {
					replaced++
				}
			case x < 7 || len(keys) == 0:
				k := randKey(r)
				if err := tr.Insert(k, randData(r, nodesize)); err == nil {
					keys = append(keys, k)
				} else if !errors.Is(err, ErrExists) {
					t.Fatal(err)
				}
			default:
				j := r.IntN(len(keys))
				if err := tr.Delete(keys[j]); err != nil {
					t.Fatal(err)
				}
				keys = append(keys[:j], keys[j+1:]...)
			}
			for l, n := range s.dirty {
				if n.IsLeaf() && n.UsedBytes() != n.SumUsedBytes() {
					t.Fatalf("op %d: leaf %d: UsedBytes %d, items take %d", op, l, n.UsedBytes(), n.SumUsedBytes())
				}
				checked++
			}
			if op%211 == 210 {
				if err := tr.Verify(); err != nil {
					t.Fatalf("op %d: %v", op, err)
				}
				s.commit()
			}
		}
		if checked < 4000 || replaced < 500 || tr.Root().Level < 1 {
			t.Fatalf("checked %d dirty nodes, %d resizing replacements, tree level %d: test too weak", checked, replaced, tr.Root().Level)
		}
	}
}

// TestVerifyCountDrift: Verify reports a leaf whose count went stale (an
// edit of Items that bypassed the edit methods) as errCountDrift.
func TestVerifyCountDrift(t *testing.T) {
	s := newMemStore(t, 4096)
	tr := New(s, format.FSTree, format.RootPtr{})
	for i := range 10 {
		if err := tr.Put(format.Key{ObjectID: uint64(i)}, make([]byte, 10)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.Verify(); err != nil {
		t.Fatal(err)
	}
	root := s.dirty[tr.Root().Logical]
	root.Items[3].Data = make([]byte, 50) // behind the count's back
	if err := tr.Verify(); !errors.Is(err, errCountDrift) {
		t.Fatalf("Verify = %v, want errCountDrift", err)
	}
}
