package store

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/alloc"
	"github.com/ddfs/ddfs/pkg/device"
)

// TestCopiesThatDiffer: copy 0 of a raid1 fs leaf (not the first child,
// so its pointer's key says something) is rewritten with other content
// and a valid checksum (issue 36). A reader never returns the altered
// items: when the alteration leaves the leaf fitting its place (same
// generation, owner, level, first key) both copies fit and the read
// fails with ErrCopiesDiffer; when it moves the first key or the
// generation, copy 1 alone fits, serves the read and, on a writable
// open, is written over copy 0. Read-only opens (served by the read-ahead
// window) and writable ones (single reads) alike.
func TestCopiesThatDiffer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		alter func(n *format.Node)
		fits  bool // the altered copy still fits the leaf's place
	}{
		{"value byte", func(n *format.Node) { n.Items[1].Data = flipped(n.Items[1].Data) }, true},
		{"first key", func(n *format.Node) { n.Items[0].Key.Offset++ }, false},
		{"generation", func(n *format.Node) { n.Generation++ }, false},
	} {
		for _, write := range []bool{false, true} {
			devs := memDevs(2, 1<<30)
			fs := create(t, devs, format.ProfileRaid1, format.ProfileRaid1)
			model := map[format.Key][]byte{}
			fillTree(t, fs, rand.New(rand.NewPCG(5, 6)), 3000, model)
			leaf := secondLeaf(t, fs)
			ts, _ := fs.Vol.Locate(leaf)
			good := copies(t, fs, devs, alloc.Range{Start: leaf, Len: uint64(fs.sb.NodeSize)})[1]
			n, err := format.UnmarshalNode(good, format.CsumCRC32C, format.NodeExpect{FSID: fs.sb.FSID, Logical: leaf, Level: -1})
			if err != nil {
				t.Fatal(err)
			}
			tc.alter(n)
			bad := format.MarshalNode(n, fs.sb.NodeSize, format.CsumCRC32C)
			fs.Close()
			devs[ts[0].DevID-1].WriteAt(bad, int64(ts[0].Physical))
			fs, healed := reopenHealing(t, devs, write)
			err = scanAll(fs, model)
			heals := *healed
			switch {
			case tc.fits && !errors.Is(err, ErrCopiesDiffer):
				t.Errorf("%s, write %v: read gave %v, want ErrCopiesDiffer", tc.name, write, err)
			case tc.fits && len(heals) != 0:
				t.Errorf("%s, write %v: a copy healed when the place cannot decide: %+v", tc.name, write, heals)
			case !tc.fits && err != nil:
				t.Errorf("%s, write %v: read gave %v, want copy 1's items", tc.name, write, err)
			case !tc.fits && (len(heals) != 1 || heals[0].Logical != leaf || heals[0].Copy != 0 || heals[0].Repaired != write):
				t.Errorf("%s, write %v: heals %+v, want copy 0 of %d", tc.name, write, heals, leaf)
			}
			got := copies(t, fs, devs, alloc.Range{Start: leaf, Len: uint64(fs.sb.NodeSize)})
			if healed := bytes.Equal(got[0], good); healed != (write && !tc.fits) || !bytes.Equal(got[1], good) {
				t.Errorf("%s, write %v: copy 0 rewritten %v, copy 1 intact %v", tc.name, write, healed, bytes.Equal(got[1], good))
			}
			fs.Close()
		}
	}
}

// reopenHealing opens devs again and records the heals its reads make.
func reopenHealing(t *testing.T, devs []*device.MemDevice, write bool) (*FS, *[]Heal) {
	t.Helper()
	ds := make([]device.Device, len(devs))
	for i, d := range devs {
		ds[i] = d
	}
	fs := openOn(t, ds, write)
	heals := new([]Heal)
	fs.OnHeal(func(h Heal) { *heals = append(*heals, h) })
	return fs, heals
}

// flipped is b with its last byte changed.
func flipped(b []byte) []byte {
	out := append([]byte(nil), b...)
	out[len(out)-1] ^= 0x5a
	return out
}

// secondLeaf is the logical address of the fs tree's second leaf.
func secondLeaf(t *testing.T, fs *FS) uint64 {
	t.Helper()
	r := fs.sb.Roots.Root(format.FSTree)
	n, err := fs.readNode(format.FSTree, r.Logical, r.Generation, int(r.Level), nil)
	for err == nil && n.Level > 1 {
		n, err = fs.readNode(format.FSTree, n.Ptrs[0].Logical, n.Ptrs[0].Generation, int(n.Level)-1, &n.Ptrs[0].Key)
	}
	if err != nil || n.Level != 1 || len(n.Ptrs) < 2 {
		t.Fatalf("want a level 1 node with two children: %v", err)
	}
	return n.Ptrs[1].Logical
}

// scanAll reads the whole fs tree and checks every item against model:
// an item that is not the model's is an error of its own (never nil).
func scanAll(fs *FS, model map[format.Key][]byte) error {
	n := 0
	err := fs.Tree(format.FSTree).Scan(format.Key{}, format.MaxKey, func(it format.Item) (bool, error) {
		if want, ok := model[it.Key]; !ok || !bytes.Equal(want, it.Data) {
			return false, errors.New("an item that is not the model's: the altered copy was read")
		}
		n++
		return true, nil
	})
	if err == nil && n != len(model) {
		err = errors.New("items missing")
	}
	return err
}
