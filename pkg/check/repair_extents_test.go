package check

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/ddfs/ddfs/format"
)

// TestRepairOverlapRestoresExtents: an extent that overlaps the one
// before it is cut back to where that one ends, or dropped when it lies
// wholly inside it; either way /big's extent items come out exactly as
// they were before the damage (keys and bytes), and a second check is
// clean.
func TestRepairOverlapRestoresExtents(t *testing.T) {
	f, base := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	populate(t, f)
	orig := newSurgeon(t, base)
	big := orig.ino("/big")
	want := orig.extents(big)
	orig.tx.Abort()
	last := want[len(want)-1]
	lx, err := format.UnmarshalFileExtentItem(last.Data)
	must(t, err)
	lastEnd := last.Key.Offset + lx.Len()
	for _, tc := range []struct {
		name   string
		damage func(s *surgeon)
		codes  string
		extra  []format.Item // extents after -y beyond /big's own
	}{
		{"head 4 KiB early", func(s *surgeon) {
			x := *lx
			x.Offset -= 4096
			x.NumBytes += 4096
			s.del(format.FSTree, last.Key)
			k := last.Key
			k.Offset -= 4096
			s.put(format.FSTree, k, format.MarshalFileExtentItem(&x))
		}, "FILE_EXTENT_OVERLAP+ NBYTES+", nil},
		{"a hole ending where the last extent ends", func(s *surgeon) {
			hole := &format.FileExtentItem{Type: format.FileExtentRegular, NumBytes: 4096, RAMBytes: 4096}
			s.put(format.FSTree, format.Key{ObjectID: big, Type: format.FileExtentKey, Offset: lastEnd - 4096}, format.MarshalFileExtentItem(hole))
		}, "FILE_EXTENT_OVERLAP+", nil},
		{"a hole whose head overlaps the last extent", func(s *surgeon) {
			// [lastEnd-4K, lastEnd+4K), the file grown to cover it: the
			// head is cut, [lastEnd, lastEnd+4K) of the hole stays.
			hole := &format.FileExtentItem{Type: format.FileExtentRegular, NumBytes: 8192, RAMBytes: 8192}
			s.put(format.FSTree, format.Key{ObjectID: big, Type: format.FileExtentKey, Offset: lastEnd - 4096}, format.MarshalFileExtentItem(hole))
			s.inode(big, func(in *format.InodeItem) { in.Size = lastEnd + 4096 })
		}, "FILE_EXTENT_OVERLAP+", []format.Item{{
			Key:  format.Key{ObjectID: big, Type: format.FileExtentKey, Offset: lastEnd},
			Data: format.MarshalFileExtentItem(&format.FileExtentItem{Type: format.FileExtentRegular, Offset: 4096, NumBytes: 4096, RAMBytes: 8192}),
		}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSurgeon(t, base)
			tc.damage(s)
			must(t, s.tx.Commit())
			rep := repairDevs(t, s.devs, ModeRepair)
			if got := strings.Join(codesOf(rep.Problems, false), " "); got != tc.codes {
				t.Errorf("repair %s, want %s\n%v", got, tc.codes, rep.Problems)
			}
			after := newSurgeon(t, s.devs)
			got := after.extents(big)
			after.tx.Abort()
			want := append(slices.Clone(want), tc.extra...)
			if len(got) != len(want) {
				t.Fatalf("%d extents after -y, want %d: %v", len(got), len(want), got)
			}
			for i := range want {
				if got[i].Key != want[i].Key || !bytes.Equal(got[i].Data, want[i].Data) {
					t.Errorf("extent %d: %v %x, want %v %x", i, got[i].Key, got[i].Data, want[i].Key, want[i].Data)
				}
			}
			if rep := fsckDevs(t, s.devs, Options{CheckData: true}); !rep.Clean() {
				t.Errorf("after -y: %v", rep.Problems)
			}
		})
	}
}
