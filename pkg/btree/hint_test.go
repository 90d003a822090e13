package btree

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"sort"
	"syscall"
	"testing"

	"github.com/ddfs/ddfs/format"
)

// hintModel is a committed tree, the sorted keys and values it holds, and
// the keys where leaves meet (pointer keys and the keys just before them).
type hintModel struct {
	s      *memStore
	root   format.RootPtr
	keys   []format.Key
	vals   map[format.Key][]byte
	bounds []format.Key
}

func (m *hintModel) index(k format.Key) int {
	return sort.Search(len(m.keys), func(i int) bool { return !m.keys[i].Less(k) })
}

// change inserts and deletes n random keys through a writable handle
// and commits: a new root, and leaves the old hints may still point at.
func (m *hintModel) change(t *testing.T, r *rand.Rand, n int) {
	tr := New(m.s, format.FSTree, m.root)
	for range n {
		k := format.Key{ObjectID: uint64(r.IntN(300)), Type: format.KeyType(r.IntN(4)), Offset: uint64(r.IntN(64))}
		if _, ok := m.vals[k]; ok && r.IntN(2) == 0 {
			must(t, tr.Delete(k))
			delete(m.vals, k)
			continue
		}
		d := []byte{byte(r.Uint32()), byte(len(m.vals))}
		must(t, tr.Put(k, d))
		m.vals[k] = d
	}
	m.s.commit()
	m.root = tr.Root()
	m.keys = m.keys[:0]
	for k := range m.vals {
		m.keys = append(m.keys, k)
	}
	sort.Slice(m.keys, func(i, j int) bool { return m.keys[i].Less(m.keys[j]) })
	m.bounds = m.bounds[:0]
	must(t, New(m.s, format.FSTree, m.root).WalkNodes(func(n *format.Node) error {
		for _, p := range n.Ptrs {
			m.bounds = append(m.bounds, p.Key, format.Key{ObjectID: p.Key.ObjectID, Type: p.Key.Type, Offset: p.Key.Offset - 1})
		}
		return nil
	}))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestHintsModel: Get, SeekLE, Seek and Scan through shared hints answer
// as the model does, on keys near each other (hint hits), at the keys
// where leaves meet, and after commits that change the tree under the
// hints (a new root: the old hints must not answer).
func TestHintsModel(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 2))
	m := &hintModel{s: newMemStore(t, 4096), vals: map[format.Key][]byte{}}
	m.change(t, r, 4000)
	h := &Hints{}
	key := m.keys[0]
	hits, ops := 0, 0
	for round := range 8 {
		for range 3000 {
			switch x := r.IntN(10); {
			case x < 5: // near the last key: the next inode of a walk
				key.Offset += uint64(r.IntN(40))
				if r.IntN(4) == 0 {
					key = format.Key{ObjectID: key.ObjectID + 1, Type: format.KeyType(r.IntN(4))}
				}
			case x < 8:
				key = m.bounds[r.IntN(len(m.bounds))]
			default:
				key = format.Key{ObjectID: uint64(r.IntN(310)), Type: format.KeyType(r.IntN(5)), Offset: uint64(r.IntN(70))}
			}
			if h.find(m.root, key) != nil {
				hits++
			}
			ops++
			tr := New(m.s, format.FSTree, m.root) // a handle per lookup, as store.FS gives
			tr.UseHints(h)
			m.check(t, tr, key, r.IntN(4))
		}
		m.change(t, r, 50+round*20)
	}
	if hits < ops/2 || len(m.bounds) < 40 {
		t.Fatalf("%d of %d lookups hinted, %d leaf bounds: test too weak", hits, ops, len(m.bounds))
	}
}

// check runs lookup op (0 Get, 1 SeekLE, 2 Seek and 5 steps, 3 Scan of
// a short range) of key on tr and compares with the model.
func (m *hintModel) check(t *testing.T, tr *Tree, key format.Key, op int) {
	t.Helper()
	i := m.index(key)
	switch op {
	case 0:
		v, err := tr.Get(key)
		want, ok := m.vals[key]
		if ok != (err == nil) || !bytes.Equal(v, want) || (!ok && !errors.Is(err, ErrNotFound)) {
			t.Fatalf("Get %v: %x %v, model has %v", key, v, err, ok)
		}
	case 1:
		j := i
		if j == len(m.keys) || m.keys[j] != key {
			j--
		}
		it, err := tr.SeekLE(key)
		if (j < 0) != errors.Is(err, ErrNotFound) || (j >= 0 && (err != nil || it.Key != m.keys[j])) {
			t.Fatalf("SeekLE %v: %v %v, model index %d", key, it.Key, err, j)
		}
	case 2:
		it := tr.Seek(key)
		for j := i; j < i+5; j++ {
			if (j < len(m.keys)) != it.Valid() || (it.Valid() && it.Key() != m.keys[j]) {
				t.Fatalf("Seek %v step %d: valid %v err %v", key, j-i, it.Valid(), it.Err())
			}
			it.Next()
		}
	default:
		end := format.Key{ObjectID: key.ObjectID + 2}
		var got []format.Key
		must(t, tr.Scan(key, end, func(it format.Item) (bool, error) { got = append(got, it.Key); return true, nil }))
		want := m.keys[i:m.index(end)]
		if len(got) != len(want) {
			t.Fatalf("Scan [%v, %v): %d items, model %d", key, end, len(got), len(want))
		}
		for j := range got {
			if got[j] != want[j] {
				t.Fatalf("Scan [%v, %v) item %d: %v, model %v", key, end, j, got[j], want[j])
			}
		}
	}
}

// TestHintsReadErrors: with the hints warm on the leaves either side of
// an unreadable one, every lookup that needs the unreadable leaf (at its
// first key, which ends the left leaf's range, inside it, at its last
// key, and a scan running into it) fails with the read error, never with
// ErrNotFound; lookups in the readable leaves are answered.
func TestHintsReadErrors(t *testing.T) {
	s, tr := committedTree(t)
	root, err := tr.readRoot()
	if err != nil || root.IsLeaf() || len(root.Ptrs) < 3 || root.Level != 1 {
		t.Fatalf("want a root over 3 leaves or more: %v", err)
	}
	h := &Hints{}
	warm := New(s, format.FSTree, tr.Root())
	warm.UseHints(h)
	left, bad, right := root.Ptrs[0].Key, root.Ptrs[1].Key, root.Ptrs[2].Key
	for _, k := range []format.Key{left, right} {
		if _, err := warm.Get(k); err != nil {
			t.Fatal(err)
		}
	}
	badLeaf, err := tr.readChild(root, 1)
	if err != nil {
		t.Fatal(err)
	}
	ft := New(&failStore{memStore: s, bad: root.Ptrs[1].Logical, err: syscall.EIO}, format.FSTree, tr.Root())
	ft.UseHints(h)
	if h.find(ft.root, left) == nil || h.find(ft.root, right) == nil || h.find(ft.root, bad) != nil {
		t.Fatal("hints not warm on the readable leaves only: test too weak")
	}
	inside := format.Key{ObjectID: bad.ObjectID, Type: bad.Type, Offset: bad.Offset + 1}
	last := badLeaf.Items[len(badLeaf.Items)-1].Key
	below := format.Key{ObjectID: right.ObjectID, Type: right.Type - 1, Offset: ^uint64(0)}
	for _, k := range []format.Key{bad, inside, last, below} {
		_, getErr := ft.Get(k)
		_, leErr := ft.SeekLE(k)
		for name, err := range map[string]error{"Get": getErr, "SeekLE": leErr, "Seek": ft.Seek(k).Err()} {
			if !errors.Is(err, syscall.EIO) || errors.Is(err, ErrNotFound) {
				t.Errorf("%s %v: %v, want EIO and not ErrNotFound", name, k, err)
			}
		}
	}
	scanErr := ft.Scan(left, format.MaxKey, func(format.Item) (bool, error) { return true, nil })
	if !errors.Is(scanErr, syscall.EIO) {
		t.Errorf("Scan from the hinted left leaf into the unreadable one: %v, want EIO", scanErr)
	}
	for _, k := range []format.Key{left, right} {
		if _, err := ft.Get(k); err != nil {
			t.Errorf("Get %v from a hinted readable leaf: %v", k, err)
		}
	}
}

// TestHintsDroppedOnWrite: a tree changed through its handle stops using
// its hints. Its dirty leaves change in place and split under the same
// root pointer, so a hint could otherwise send a key to a leaf it moved
// out of.
func TestHintsDroppedOnWrite(t *testing.T) {
	s := newMemStore(t, 4096)
	tr := New(s, format.FSTree, format.RootPtr{})
	tr.UseHints(&Hints{})
	key := func(i int) format.Key { return format.Key{ObjectID: uint64(i), Type: 1} }
	for i := range 400 {
		must(t, tr.Insert(key(i), make([]byte, 40)))
		if _, err := tr.Get(key(i / 2)); err != nil { // warms a hint, if any is kept
			t.Fatal(err)
		}
	}
	if tr.Root().Level < 1 {
		t.Fatal("no split: test too weak")
	}
	for i := range 400 {
		if _, err := tr.Get(key(i)); err != nil {
			t.Fatalf("Get %v after the writes: %v", key(i), err)
		}
	}
}
