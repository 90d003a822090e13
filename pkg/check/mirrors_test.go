package check

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
)

// TestNodeCopiesDiffer: copy 1 of a dup leaf rewritten with other bytes
// and a valid checksum (a reader may get either copy) is reported as
// NODE_COPIES_DIFFER at copy 1's place, naming copy 0's place; copy 0
// with the original bytes is no problem of its own.
func TestNodeCopiesDiffer(t *testing.T) {
	devs := build(t, layout{1, format.ProfileSingle, format.ProfileDup}, 60)
	var nc, first nodeCopy
	all := allNodeCopies(t, devs)
	for i, c := range all {
		if c.tree == format.FSTree && c.copy == 1 {
			nc, first = c, all[i-1]
		}
	}
	if nc.logical == 0 {
		t.Fatal("no second copy of an fs tree node")
	}
	d := devs[0]
	b := make([]byte, 4096)
	d.ReadAt(b, int64(nc.target.Physical))
	b[4095] ^= 1 // the last byte of item 0's value
	sum := format.Checksum(format.CsumCRC32C, b[format.CsumSize:])
	copy(b, sum[:])
	d.WriteAt(b, int64(nc.target.Physical))
	d.Flush()
	rep := checkDevs(t, devs)
	var got []Problem
	for _, p := range rep.Problems {
		if p.Code == NodeCopiesDiffer {
			got = append(got, p)
		}
		if p.Code == NodeCopyBad {
			t.Errorf("a copy that validates reported as bad: %v", p)
		}
	}
	want := fmt.Sprintf("differs from copy 0 (devid %d at offset %d)", first.target.DevID, first.target.Physical)
	if len(got) != 1 || got[0].Logical != nc.logical || !got[0].CopyIs(1) || got[0].DevID != nc.target.DevID || got[0].Offset != nc.target.Physical || !contains(got[0].Message, want) || got[0].Warning {
		t.Fatalf("want one NODE_COPIES_DIFFER at node %d copy 1 (offset %d) naming %q, got %v", nc.logical, nc.target.Physical, want, rep.Problems)
	}
	if rep.Clean() {
		t.Fatal("report clean")
	}
}

// TestDataCopiesDiffer: with crc32c, copy 1 of a dup data sector can
// differ and still match the sector's checksum; --check-data reports it
// with both places.
func TestDataCopiesDiffer(t *testing.T) {
	f, devs := newFS(t, layout{1, format.ProfileDup, format.ProfileDup})
	in, err := f.Create("/d", fsys.Attr{Mode: 0o644})
	must(t, err)
	must(t, f.WriteAt(in, pattern(3*4096, 1), 0))
	must(t, f.Sync())
	b, err := f.Store().Tree(format.FSTree).Get(format.Key{ObjectID: in.Ino, Type: format.FileExtentKey})
	must(t, err)
	x, err := format.UnmarshalFileExtentItem(b)
	must(t, err)
	logical := x.DiskLogical + 4096 // the second sector
	targets, err := f.Store().Vol.Locate(logical)
	if err != nil || len(targets) != 2 {
		t.Fatalf("targets %v: %v", targets, err)
	}
	d := devs[0]
	sector := make([]byte, 4096)
	d.ReadAt(sector, int64(targets[1].Physical))
	forged := forgeCRC32C(sector, 100)
	d.WriteAt(forged, int64(targets[1].Physical))
	d.Flush()
	rep := fsckDevs(t, devs, Options{CheckData: true})
	want := fmt.Sprintf("differs from copy 0 (devid %d at offset %d)", targets[0].DevID, targets[0].Physical)
	n := 0
	for _, p := range rep.Problems {
		switch {
		case p.Code == DataCopiesDiffer && p.Logical == logical && p.CopyIs(1) && p.Offset == targets[1].Physical && contains(p.Message, want):
			n++
		case p.Code == DataCopiesDiffer || p.Code == DataCopyBad:
			t.Errorf("unexpected %v", p)
		}
	}
	if n != 1 {
		t.Fatalf("want one DATA_COPIES_DIFFER at logical %d copy 1 naming %q: %v", logical, want, rep.Problems)
	}
	if rep := fsckDevs(t, devs, Options{}); hasCode(rep.Problems, DataCopiesDiffer) {
		t.Fatal("data copies compared without --check-data")
	}
}

// forgeCRC32C returns a copy of b with byte at changed and bytes
// len-4..len-1 rewritten so that its crc32c is b's (CRC is affine over
// GF(2): the last 32 bits are solved for).
func forgeCRC32C(b []byte, at int) []byte {
	crc := func(p []byte) uint32 {
		s := format.Checksum(format.CsumCRC32C, p)
		return binary.LittleEndian.Uint32(s[:])
	}
	target := crc(b)
	out := append([]byte(nil), b...)
	out[at] ^= 0xff
	tail := len(out) - 4
	binary.LittleEndian.PutUint32(out[tail:], 0)
	base := crc(out)
	// Column k: how bit k of the tail changes the crc.
	var cols [32]uint32
	for k := 0; k < 32; k++ {
		binary.LittleEndian.PutUint32(out[tail:], 1<<k)
		cols[k] = crc(out) ^ base
	}
	// Solve sum(x_k cols[k]) = target ^ base by Gaussian elimination.
	want := target ^ base
	var rows [32]uint32 // rows[k]: combination of bits giving pivot k
	var pivot [32]uint32
	for k := 0; k < 32; k++ {
		v, comb := cols[k], uint32(1)<<k
		for bit := 31; bit >= 0; bit-- {
			if v>>bit&1 == 0 {
				continue
			}
			if pivot[bit] == 0 {
				pivot[bit], rows[bit] = v, comb
				break
			}
			v, comb = v^pivot[bit], comb^rows[bit]
		}
	}
	var x uint32
	for bit := 31; bit >= 0; bit-- {
		if want>>bit&1 != 0 {
			want, x = want^pivot[bit], x^rows[bit]
		}
	}
	binary.LittleEndian.PutUint32(out[tail:], x)
	if crc(out) != target {
		panic("forgeCRC32C: no solution")
	}
	return out
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// runMember is an fs tree node that is not the first of a run of sibling
// nodes back to back (nodes.go reads such a run with one request per
// copy), with where its copies live.
func runMember(t *testing.T, devs []*device.MemDevice) []nodeCopy {
	t.Helper()
	vol := volumeOf(t, devs)
	fs, err := store.OpenVolume(vol)
	if err != nil {
		t.Fatal(err)
	}
	sb := fs.Super()
	var member uint64
	var walk func(l, g uint64, level int)
	walk = func(l, g uint64, level int) {
		n, err := fs.ReadNodeCopy(format.NodeExpect{FSID: sb.FSID, Logical: l, Generation: g, Owner: format.FSTree, Level: level}, -1)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range n.Ptrs {
			if i > 0 && p.Logical == n.Ptrs[i-1].Logical+uint64(sb.NodeSize) && member == 0 {
				member = p.Logical
			}
			walk(p.Logical, p.Generation, level-1)
		}
	}
	root := sb.Roots.Root(format.FSTree)
	walk(root.Logical, root.Generation, int(root.Level))
	var out []nodeCopy
	for _, nc := range allNodeCopies(t, devs) {
		if nc.logical == member {
			out = append(out, nc)
		}
	}
	if member == 0 || len(out) < 2 {
		t.Fatalf("no fs tree node inside a run of siblings with two copies (%d copies)", len(out))
	}
	return out
}

// TestRunLaterCopyChecked: a node read as part of a run of siblings has
// its later copies checked, not copy 0 again: copy 1 damaged is
// NODE_COPY_BAD, copy 1 forged with other bytes and a valid checksum is
// NODE_COPIES_DIFFER, each the only problem, at copy 1's place.
func TestRunLaterCopyChecked(t *testing.T) {
	for _, l := range []layout{{1, format.ProfileSingle, format.ProfileDup}, {2, format.ProfileSingle, format.ProfileRaid1}} {
		for _, forged := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d-%v-forged=%v", l.devs, l.meta, forged), func(t *testing.T) {
				devs := build(t, l, 600)
				nc := runMember(t, devs)[1]
				d := devs[nc.target.DevID-1]
				b := make([]byte, 4096)
				d.ReadAt(b, int64(nc.target.Physical))
				b[4095] ^= 1 // the last byte of item 0's value
				want := NodeCopyBad
				if forged {
					sum := format.Checksum(format.CsumCRC32C, b[format.CsumSize:])
					copy(b, sum[:])
					want = NodeCopiesDiffer
				}
				d.WriteAt(b, int64(nc.target.Physical))
				d.Flush()
				rep := checkDevs(t, devs)
				if len(rep.Problems) != 1 {
					t.Fatalf("want one %s at node %d copy 1, got %v", want, nc.logical, rep.Problems)
				}
				p := rep.Problems[0]
				if p.Code != want || p.Logical != nc.logical || !p.CopyIs(1) || p.DevID != nc.target.DevID || p.Offset != nc.target.Physical {
					t.Fatalf("want %s at node %d copy 1 (devid %d offset %d), got %v", want, nc.logical, nc.target.DevID, nc.target.Physical, p)
				}
			})
		}
	}
}
