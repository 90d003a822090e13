package btree

import (
	"errors"
	"syscall"
	"testing"

	"github.com/ddfs/ddfs/format"
)

// TestReadErrorIsNotAbsence: when a node on the way down cannot be read
// (an I/O error, a bad checksum), every lookup fails with that error and
// never with ErrNotFound, so no caller takes "could not read" for "absent".
func TestReadErrorIsNotAbsence(t *testing.T) {
	s, tr := committedTree(t)
	root, err := tr.readRoot()
	if err != nil || root.IsLeaf() {
		t.Fatalf("want a tree of several levels: %v", err)
	}
	leaf := root.Ptrs[1].Logical // holds keys around the second child's first key
	probe := root.Ptrs[1].Key
	absent := format.Key{ObjectID: probe.ObjectID, Type: 1, Offset: 1}
	for _, tc := range []struct {
		name    string
		logical uint64
		ioErr   error // nil: flip a byte of the stored node instead
		want    error
	}{
		{"root EIO", root.Logical, syscall.EIO, syscall.EIO},
		{"leaf EIO", leaf, syscall.EIO, syscall.EIO},
		{"root checksum", root.Logical, nil, format.ErrChecksum},
		{"leaf checksum", leaf, nil, format.ErrChecksum},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saved := append([]byte(nil), s.disk[tc.logical]...)
			defer func() { s.disk[tc.logical] = saved }()
			var st Store = &failStore{memStore: s, bad: tc.logical, err: tc.ioErr}
			if tc.ioErr == nil {
				s.disk[tc.logical][100] ^= 0xff
				st = s
			}
			tr := New(st, format.FSTree, tr.Root())
			_, getErr := tr.Get(probe)
			_, absErr := tr.Get(absent)
			_, leErr := tr.SeekLE(absent)
			it := tr.Seek(probe)
			scanErr := tr.Scan(probe, format.MaxKey, func(format.Item) (bool, error) { return true, nil })
			for name, err := range map[string]error{
				"Get": getErr, "Get absent": absErr, "SeekLE": leErr, "Seek": it.Err(), "Scan": scanErr,
				"Delete": tr.Delete(probe), "Delete absent": tr.Delete(absent),
			} {
				if !errors.Is(err, tc.want) || errors.Is(err, ErrNotFound) {
					t.Errorf("%s: %v, want %v and not ErrNotFound", name, err, tc.want)
				}
			}
		})
	}
}

// failStore fails reads of one node with err and serves the others.
type failStore struct {
	*memStore
	bad uint64
	err error
}

func (f *failStore) ReadNode(owner format.TreeID, logical, gen uint64, level int) (*format.Node, error) {
	if logical == f.bad {
		return nil, f.err
	}
	return f.memStore.ReadNode(owner, logical, gen, level)
}
