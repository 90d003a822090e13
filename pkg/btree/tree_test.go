package btree

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/ddfs/ddfs/format"
)

// memStore keeps committed nodes encoded, so every commit exercises the
// node codec, and frees nodes the way a transaction must: a node written
// by an earlier commit is reusable only after the next commit.
type memStore struct {
	t        testing.TB
	nodesize uint32
	gen      uint64
	next     uint64
	disk     map[uint64][]byte
	dirty    map[uint64]*format.Node
	pinned   []uint64
	free     []uint64
	fsid     [16]byte
}

func newMemStore(t testing.TB, nodesize uint32) *memStore {
	return &memStore{t: t, nodesize: nodesize, gen: 1, next: 1 << 20, disk: map[uint64][]byte{}, dirty: map[uint64]*format.Node{}, fsid: [16]byte{1, 2, 3}}
}

func (s *memStore) NodeSize() uint32 { return s.nodesize }

func (s *memStore) ReadNode(owner format.TreeID, logical, gen uint64, level int) (*format.Node, error) {
	if n, ok := s.dirty[logical]; ok {
		return n, nil
	}
	b, ok := s.disk[logical]
	if !ok {
		return nil, fmt.Errorf("node %d not on disk", logical)
	}
	return format.UnmarshalNode(b, format.CsumCRC32C, format.NodeExpect{FSID: s.fsid, Logical: logical, Generation: gen, Owner: owner, Level: level})
}

func (s *memStore) NewNode(owner format.TreeID, level uint8) (*format.Node, error) {
	var l uint64
	if len(s.free) > 0 {
		l, s.free = s.free[len(s.free)-1], s.free[:len(s.free)-1]
	} else {
		l = s.next
		s.next += uint64(s.nodesize)
	}
	n := &format.Node{NodeHeader: format.NodeHeader{FSID: s.fsid, Logical: l, Generation: s.gen, Owner: owner, Level: level}}
	s.dirty[l] = n
	return n, nil
}

func (s *memStore) IsDirty(n *format.Node) bool { return s.dirty[n.Logical] == n }

func (s *memStore) FreeNode(n *format.Node) error {
	if s.IsDirty(n) {
		delete(s.dirty, n.Logical)
		s.free = append(s.free, n.Logical)
		return nil
	}
	if _, ok := s.disk[n.Logical]; !ok {
		s.t.Fatalf("free of unknown node %d", n.Logical)
	}
	for _, p := range s.pinned {
		if p == n.Logical {
			s.t.Fatalf("double free of node %d", n.Logical)
		}
	}
	s.pinned = append(s.pinned, n.Logical)
	return nil
}

func (s *memStore) commit() {
	for _, l := range s.pinned {
		delete(s.disk, l)
	}
	for l, n := range s.dirty {
		if n.SumUsedBytes() > int(s.nodesize)-format.NodeHeaderSize {
			s.t.Fatalf("dirty node %d overfull", l)
		}
		s.disk[l] = format.MarshalNode(n, s.nodesize, format.CsumCRC32C)
	}
	s.free = append(s.free, s.pinned...)
	s.pinned = nil
	s.dirty = map[uint64]*format.Node{}
	s.gen++
}

// reachable counts the nodes of the tree.
func reachable(t *testing.T, tr *Tree) int {
	n, err := tr.readRoot()
	if err != nil || n == nil {
		return 0
	}
	var walk func(n *format.Node) int
	walk = func(n *format.Node) int {
		c := 1
		for i := range n.Ptrs {
			ch, err := tr.readChild(n, i)
			if err != nil {
				t.Fatal(err)
			}
			c += walk(ch)
		}
		return c
	}
	return walk(n)
}

func randKey(r *rand.Rand) format.Key {
	return format.Key{ObjectID: uint64(r.IntN(64)), Type: format.KeyType(r.IntN(3)), Offset: uint64(r.IntN(4096))}
}

func randData(r *rand.Rand, nodesize uint32) []byte {
	var n int
	switch r.IntN(20) {
	case 0:
		n = format.MaxItemData(nodesize) - r.IntN(64) // forces multi-way splits
	case 1, 2:
		n = r.IntN(int(nodesize) / 3)
	default:
		n = r.IntN(48)
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestTreeModel runs thousands of random operations against a map model,
// with commits and reopens in between, checking contents and invariants.
func TestTreeModel(t *testing.T) {
	for _, tc := range []struct {
		nodesize uint32
		seed     uint64
		ops      int
	}{
		{4096, 1, 6000},
		{4096, 2, 6000},
		{16384, 3, 8000},
		{65536, 4, 3000},
	} {
		t.Run(fmt.Sprintf("ns%d-seed%d", tc.nodesize, tc.seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(tc.seed, 99))
			s := newMemStore(t, tc.nodesize)
			tr := New(s, format.FSTree, format.RootPtr{})
			model := map[format.Key][]byte{}
			maxLevel := uint8(0)
			for op := 0; op < tc.ops; op++ {
				k := randKey(r)
				switch x := r.IntN(10); {
				case x < 4:
					d := randData(r, tc.nodesize)
					err := tr.Insert(k, d)
					if _, ok := model[k]; ok {
						if !errors.Is(err, ErrExists) {
							t.Fatalf("op %d: insert of existing %v: %v", op, k, err)
						}
					} else if err != nil {
						t.Fatalf("op %d: insert %v: %v", op, k, err)
					} else {
						model[k] = d
					}
				case x < 6:
					d := randData(r, tc.nodesize)
					if err := tr.Put(k, d); err != nil {
						t.Fatalf("op %d: put: %v", op, err)
					}
					model[k] = d
				default:
					// Delete mostly keys that exist, to shrink the tree too.
					if len(model) > 0 && r.IntN(4) > 0 {
						for mk := range model {
							k = mk
							break
						}
					}
					err := tr.Delete(k)
					if _, ok := model[k]; ok {
						if err != nil {
							t.Fatalf("op %d: delete %v: %v", op, k, err)
						}
						delete(model, k)
					} else if !errors.Is(err, ErrNotFound) {
						t.Fatalf("op %d: delete missing %v: %v", op, k, err)
					}
				}
				maxLevel = max(maxLevel, tr.Root().Level)
				if op%97 == 0 {
					s.commit()
					if r.IntN(3) == 0 { // reopen: only the root pointer survives
						tr = New(s, format.FSTree, tr.Root())
					}
				}
				if op%500 == 0 {
					check(t, tr, model, r)
				}
			}
			s.commit()
			check(t, New(s, format.FSTree, tr.Root()), model, r)
			if got := reachable(t, tr); got != len(s.disk) {
				t.Fatalf("%d nodes reachable but %d on disk: leaked or lost nodes", got, len(s.disk))
			}
			if maxLevel < 1 {
				t.Fatalf("tree never grew past one leaf: test too weak")
			}
			// Drain: deleting everything must leave an empty root leaf.
			for k := range model {
				if err := tr.Delete(k); err != nil {
					t.Fatal(err)
				}
			}
			s.commit()
			if tr.Root().Level != 0 || reachable(t, tr) != 1 || len(s.disk) != 1 {
				t.Fatalf("after draining: level %d, %d nodes", tr.Root().Level, len(s.disk))
			}
		})
	}
}

func check(t *testing.T, tr *Tree, model map[format.Key][]byte, r *rand.Rand) {
	t.Helper()
	if err := tr.Verify(); err != nil {
		t.Fatal(err)
	}
	keys := make([]format.Key, 0, len(model))
	for k := range model {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].Less(keys[j]) })
	i := 0
	for it := tr.First(); it.Valid(); it.Next() {
		if i >= len(keys) || it.Key() != keys[i] || !bytes.Equal(it.Item().Data, model[keys[i]]) {
			t.Fatalf("scan item %d: got %v", i, it.Key())
		}
		i++
	}
	if i != len(keys) {
		t.Fatalf("scan saw %d items, model has %d", i, len(keys))
	}
	for j := 0; j < 50; j++ {
		k := randKey(r)
		v, err := tr.Get(k)
		if mv, ok := model[k]; ok != (err == nil) || (ok && !bytes.Equal(v, mv)) {
			t.Fatalf("get %v: %v (model has %v)", k, err, ok)
		}
		// SeekLE agrees with the model's predecessor.
		p := sort.Search(len(keys), func(i int) bool { return k.Less(keys[i]) }) - 1
		it, err := tr.SeekLE(k)
		if p < 0 {
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("SeekLE %v: want not found, got %v %v", k, it.Key, err)
			}
		} else if err != nil || it.Key != keys[p] {
			t.Fatalf("SeekLE %v: got %v %v want %v", k, it.Key, err, keys[p])
		}
		// Seek lands on the successor.
		sIdx := sort.Search(len(keys), func(i int) bool { return !keys[i].Less(k) })
		sit := tr.Seek(k)
		if (sIdx < len(keys)) != sit.Valid() || (sit.Valid() && sit.Key() != keys[sIdx]) {
			t.Fatalf("Seek %v wrong", k)
		}
	}
}

func TestTooLarge(t *testing.T) {
	s := newMemStore(t, 4096)
	tr := New(s, format.FSTree, format.RootPtr{})
	err := tr.Insert(format.Key{ObjectID: 1}, make([]byte, format.MaxItemData(4096)+1))
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v", err)
	}
	if tr.Root().Logical != 0 {
		t.Fatal("failed insert changed the tree")
	}
}

// TestLeafFill checks that shifting items to neighbours before splitting
// keeps leaves full: appends pack them, random keys (the dedupe tree's
// hashes) leave them well above the 69% of split-in-half trees.
func TestLeafFill(t *testing.T) {
	for _, tc := range []struct {
		name    string
		key     func(i int, r *rand.Rand) uint64
		minFill float64
	}{
		{"sequential", func(i int, _ *rand.Rand) uint64 { return uint64(i) }, 0.95},
		{"random", func(_ int, r *rand.Rand) uint64 { return r.Uint64() }, 0.78},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newMemStore(t, 4096)
			tr := New(s, format.DedupeTree, format.RootPtr{})
			r := rand.New(rand.NewPCG(7, 7))
			for i := range 20000 {
				if err := tr.Put(format.Key{ObjectID: tc.key(i, r), Type: format.DedupeItemKey}, make([]byte, format.DedupeItemSize)); err != nil {
					t.Fatal(err)
				}
				if i%1000 == 999 {
					tr = New(s, format.DedupeTree, tr.Root())
					s.commit()
				}
			}
			used, leaves := 0, 0
			if err := tr.WalkNodes(func(n *format.Node) error {
				if n.IsLeaf() {
					used += n.UsedBytes()
					leaves++
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			fill := float64(used) / float64(leaves*tr.capacity())
			t.Logf("%d leaves, %.1f%% full", leaves, 100*fill)
			if fill < tc.minFill {
				t.Errorf("leaves %.1f%% full, want ≥ %.0f%%", 100*fill, 100*tc.minFill)
			}
			if err := tr.Verify(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
