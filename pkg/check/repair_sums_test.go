package check

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// TestRepairSumsLongExtent: the checksums of a data extent of two full
// batches (2 × 64 sectors), left missing by -y, are made by
// --rebuild-csums from its bytes: every sector's
// CRC32C, in items that end where the extent ends (none past it), and a
// second check is clean.
func TestRepairSumsLongExtent(t *testing.T) {
	const ss, sectors = 4096, 2 * sumBatch
	f, base := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	data := pattern(sectors*ss, 11)
	in, err := f.Create("/long", fsys.Attr{Mode: 0o644})
	must(t, err)
	must(t, f.WriteAt(in, data, 0))
	must(t, f.Sync())

	s := newSurgeon(t, base)
	l, n := s.diskExtent(s.ino("/long"))
	if n != sectors*ss {
		t.Fatalf("extent of %d bytes, want one of %d", n, sectors*ss)
	}
	from := csumKey(l)
	to := csumKey(l + n + 1)
	for _, it := range s.items(format.CsumTree, from, to) {
		s.del(format.CsumTree, it.Key)
	}
	expect(t, s.check(Options{}), want{code: CsumMissing, logical: l})

	rep := repairDevs(t, s.devs, ModeRepair)
	if got := codesOf(rep.Problems, false); len(got) != 1 || got[0] != "CSUM_MISSING" {
		t.Fatalf("repair: %v, want CSUM_MISSING left (no invented sums)", rep.Problems)
	}
	if rebuilt, _, err := RebuildCsums(opener(s.devs), Options{}); err != nil || len(rebuilt) != 1 {
		t.Fatalf("rebuild: %v %v", rebuilt, err)
	}
	// The sums as the data's bytes make them, not as the checker does.
	var wantSums []byte
	for i := 0; i < sectors; i++ {
		wantSums = binary.LittleEndian.AppendUint32(wantSums, crc32.Checksum(data[i*ss:(i+1)*ss], crc32.MakeTable(crc32.Castagnoli)))
	}
	after := newSurgeon(t, s.devs)
	var got []byte
	for _, it := range after.items(format.CsumTree, from, csumKey(l+n+ss)) {
		if it.Key.Offset >= l+n || len(it.Data) == 0 {
			t.Errorf("csum item at %d of %d bytes: past the extent [%d, %d) or empty", it.Key.Offset, len(it.Data), l, l+n)
			continue
		}
		got = append(got, it.Data...)
	}
	if string(got) != string(wantSums) {
		t.Errorf("sums of %d bytes, want %d bytes of the data's CRC32C", len(got), len(wantSums))
	}
	after.tx.Abort()
	cleanAfter(t, s.devs, "after the rebuild")
}

// TestRepairDropsIndexedExtent: a deduped data extent no file uses any
// more is dropped with its dedupe index entry in the same round: the
// report holds only what the damage made and the dedupe tree is empty.
func TestRepairDropsIndexedExtent(t *testing.T) {
	s := newSurgeon(t, newDedupeBase(t))
	c := s.ino("/c")
	if n := len(s.items(format.DedupeTree, format.Key{}, format.Key{ObjectID: ^uint64(0)})); n == 0 {
		t.Fatalf("base image has no dedupe entries")
	}
	for _, it := range s.extents(c) {
		s.del(format.FSTree, it.Key)
	}
	s.inode(c, func(in *format.InodeItem) { in.Size, in.NBytes = 0, 0 })
	must(t, s.tx.Commit())
	rep := repairDevs(t, s.devs, ModeRepair)
	if len(rep.Problems) == 0 {
		t.Fatalf("nothing found")
	}
	for _, p := range rep.Problems {
		if p.Code != ExtentUnreferenced || !p.Fixed {
			t.Errorf("unexpected %v", p)
		}
	}
	after := newSurgeon(t, s.devs)
	defer after.tx.Abort()
	if left := after.items(format.DedupeTree, format.Key{}, format.Key{ObjectID: ^uint64(0)}); len(left) != 0 {
		t.Errorf("%d dedupe entries left", len(left))
	}
	cleanAfter(t, s.devs, "after the rebuild")
}

// TestRepairXattrKeepsRightCopy: with user.comment of /dir also under a
// wrong key (another value), -y keeps the value its hash keys ("a
// directory", as populate set it) and removes the wrong item.
func TestRepairXattrKeepsRightCopy(t *testing.T) {
	f, base := newFS(t, layout{1, format.ProfileSingle, format.ProfileDup})
	populate(t, f)
	s := newSurgeon(t, base)
	dir := s.ino("/dir")
	k := format.Key{ObjectID: dir, Type: format.XattrItemKey, Offset: format.NameHash([]byte("user.comment"))}
	wrong := k
	wrong.Offset--
	s.put(format.FSTree, wrong, format.MarshalXattrs([]format.Xattr{{Name: "user.comment", Value: []byte("another")}}))
	after := repairWants(t, s, "XATTR_HASH+")
	defer after.tx.Abort()
	items := after.items(format.FSTree, format.Key{ObjectID: dir, Type: format.XattrItemKey}, format.Key{ObjectID: dir, Type: format.XattrItemKey + 1})
	if len(items) != 1 || items[0].Key != k {
		t.Fatalf("xattr items %v, want one at %v", items, k)
	}
	xs, err := format.UnmarshalXattrs(items[0].Data)
	must(t, err)
	if len(xs) != 1 || xs[0].Name != "user.comment" || string(xs[0].Value) != "a directory" {
		t.Errorf("xattrs %+v, want user.comment = \"a directory\"", xs)
	}
}
