package btree

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/ddfs/ddfs/format"
)

// FuzzTreeOps reads the input as a script of tree operations (insert,
// put, delete, get, commit, reopen) on 4 KiB nodes and checks each result,
// and then the whole tree, against a map model. Each operation takes 4
// bytes: opcode, key object id, key offset, value length class.
func FuzzTreeOps(f *testing.F) {
	f.Add([]byte{0, 1, 1, 0, 0, 2, 2, 9, 2, 1, 1, 0, 4, 0, 0, 0, 3, 2, 2, 0})
	grow := make([]byte, 0, 4*300)
	for i := 0; i < 300; i++ {
		grow = append(grow, byte(i%3), byte(i*7), byte(i*13), byte(i))
	}
	f.Add(grow)
	shrink := append([]byte(nil), grow...)
	for i := 0; i < 300; i++ {
		shrink = append(shrink, 2, byte(i*7), byte(i*13), 0, 4, 0, 0, 0)
	}
	f.Add(shrink)
	f.Fuzz(func(t *testing.T, script []byte) {
		if len(script) > 4*2000 {
			script = script[:4*2000] // bounded work per input
		}
		s := newMemStore(t, 4096)
		tr := New(s, format.FSTree, format.RootPtr{})
		model := map[format.Key][]byte{}
		for i := 0; i+4 <= len(script); i += 4 {
			op, k, d := script[i]%6, fuzzKey(script[i+1], script[i+2]), fuzzValue(script[i+3], i)
			_, had := model[k]
			switch op {
			case 0:
				err := tr.Insert(k, d)
				if had != errors.Is(err, ErrExists) || (!had && err != nil) {
					t.Fatalf("op %d: insert %v (present %v): %v", i/4, k, had, err)
				}
				if !had {
					model[k] = d
				}
			case 1:
				if err := tr.Put(k, d); err != nil {
					t.Fatalf("op %d: put %v: %v", i/4, k, err)
				}
				model[k] = d
			case 2:
				err := tr.Delete(k)
				if had != (err == nil) || (!had && !errors.Is(err, ErrNotFound)) {
					t.Fatalf("op %d: delete %v (present %v): %v", i/4, k, had, err)
				}
				delete(model, k)
			case 3:
				v, err := tr.Get(k)
				if had != (err == nil) || (had && !bytes.Equal(v, model[k])) || (!had && !errors.Is(err, ErrNotFound)) {
					t.Fatalf("op %d: get %v (present %v): %v", i/4, k, had, err)
				}
			case 4:
				s.commit()
			case 5:
				s.commit() // reopen: only the root pointer survives
				tr = New(s, format.FSTree, tr.Root())
			}
		}
		check(t, tr, model, rand.New(rand.NewPCG(uint64(len(script)), 1)))
		s.commit()
		if got := reachable(t, tr); got != len(s.disk) {
			t.Fatalf("%d nodes reachable but %d on disk: leaked or lost nodes", got, len(s.disk))
		}
	})
}

// fuzzKey maps two script bytes onto a small key space, so that
// operations meet the same keys again.
func fuzzKey(a, b byte) format.Key {
	return format.Key{ObjectID: uint64(a % 64), Type: format.KeyType(b % 3), Offset: uint64(b) * 16}
}

// fuzzValue is a value of a length class: mostly small, some a third of a
// node, some as large as an item can be (forcing splits); its bytes
// depend on pos so that a Put is seen to replace.
func fuzzValue(class byte, pos int) []byte {
	n := int(class % 48)
	switch {
	case class >= 250:
		n = format.MaxItemData(4096) - int(class-250)
	case class >= 220:
		n = 1300 + int(class)
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(pos + i)
	}
	return b
}
