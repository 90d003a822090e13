package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/alloc"
	"github.com/ddfs/ddfs/pkg/device"
)

func createWith(t *testing.T, devs []*device.MemDevice, data, meta format.Profile, s format.Settings) *FS {
	t.Helper()
	p := CreateParams{FSID: [16]byte{9, 9, 9}, Label: "t", Csum: format.CsumCRC32C, NodeSize: 4096, SectorSize: 4096, Data: data, Metadata: meta, Settings: s}
	for _, d := range devs {
		p.Devices = append(p.Devices, NewDevice{Dev: d, Path: d.Name()})
	}
	fs, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// copies reads every physical copy of a logical range straight from the
// memory devices (the volume would fail over; this must see each copy).
func copies(t *testing.T, fs *FS, devs []*device.MemDevice, r alloc.Range) [][]byte {
	t.Helper()
	bg := fs.blockGroup(r.Start)
	segs, err := bg.Chunk.Map(r.Start-bg.Chunk.Logical, r.Len)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, s := range segs {
		for _, tg := range s.Targets {
			b := make([]byte, s.Len)
			if _, err := devs[tg.DevID-1].ReadAt(b, int64(tg.Physical)); err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
		}
	}
	return out
}

func allZero(b []byte) bool { return bytes.Count(b, []byte{0}) == len(b) }

// TestDiscardPolicies writes 16 extents, frees every other one plus a run
// of four adjacent ones, and checks per policy which copies were discarded
// (a MemDevice zeroes discarded ranges) and how many requests it took.
func TestDiscardPolicies(t *testing.T) {
	const ext = 64 << 10
	for _, tc := range []struct {
		policy        format.DiscardPolicy
		wantDiscarded bool
		// data discards per copy: sync one per freed extent (8), async
		// one per free run (4 single extents and one run of 4)
		dataDiscards uint64
	}{
		{format.DiscardOff, false, 0},
		{format.DiscardSync, true, 8},
		{format.DiscardAsync, true, 5},
	} {
		t.Run(tc.policy.String(), func(t *testing.T) {
			devs := memDevs(2, 1<<30)
			fs := createWith(t, devs, format.ProfileRaid1, format.ProfileRaid1, format.Settings{Discard: tc.policy})
			tx, err := fs.Begin()
			if err != nil {
				t.Fatal(err)
			}
			var exts []alloc.Range
			for i := range 16 {
				l, err := tx.AllocData(ext)
				if err != nil {
					t.Fatal(err)
				}
				if err := fs.Vol.Write(l, bytes.Repeat([]byte{byte(i + 1)}, ext)); err != nil {
					t.Fatal(err)
				}
				exts = append(exts, alloc.Range{Start: l, Len: ext})
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			before := fs.DiscardStats()
			// Free 0,2,4,6 (apart) and 10..13 (one adjacent run).
			freed := map[int]bool{0: true, 2: true, 4: true, 6: true, 10: true, 11: true, 12: true, 13: true}
			tx, err = fs.Begin()
			if err != nil {
				t.Fatal(err)
			}
			for i := range freed {
				if err := tx.FreeData(exts[i].Start, ext, false); err != nil {
					t.Fatal(err)
				}
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			if tc.policy == format.DiscardAsync && fs.DiscardStats().Discards != before.Discards {
				t.Errorf("async discarded %d MiB of data before the batch threshold or the end", 8*ext>>20)
			}
			// The command ends: async discards what it batched.
			if err := fs.Close(); err != nil {
				t.Fatal(err)
			}
			st := fs.DiscardStats()
			for i, r := range exts {
				for c, b := range copies(t, fs, devs, r) {
					switch {
					case !freed[i] && !bytes.Equal(b, bytes.Repeat([]byte{byte(i + 1)}, ext)):
						t.Errorf("live extent %d copy %d damaged", i, c)
					case freed[i] && allZero(b) != tc.wantDiscarded:
						t.Errorf("freed extent %d copy %d: discarded %v, want %v", i, c, allZero(b), tc.wantDiscarded)
					}
				}
			}
			dataReqs := st.Discards - before.Discards
			if tc.policy == format.DiscardSync {
				// Sync also discards each freed metadata node on its own.
				if dataReqs < 2*tc.dataDiscards {
					t.Errorf("sync: %d discards, want ≥ %d", dataReqs, 2*tc.dataDiscards)
				}
			} else if dataReqs != 2*tc.dataDiscards {
				t.Errorf("%v: %d discard requests, want %d (merged, per copy; metadata held back)", tc.policy, dataReqs, 2*tc.dataDiscards)
			}
			fs = reopen(t, devs, true)
			if tc.policy == format.DiscardAsync {
				// What async held back is metadata only, recorded.
				if p := fs.DiscardStats().PendingBytes; p == 0 || p%4096 != 0 || p >= 8*ext {
					t.Errorf("pending after reopen: %d bytes, want a few metadata nodes", p)
				}
			}

		})
	}
}

// TestDiscardRecordsSurviveCrash holds data back with a tiny per-commit
// budget, power-cuts, and checks the next writer discards what was freed.
func TestDiscardRecordsSurviveCrash(t *testing.T) {
	const ext = 256 << 10
	devs := memDevs(1, 1<<30)
	fs := createWith(t, devs, format.ProfileSingle, format.ProfileDup,
		format.Settings{Discard: format.DiscardAsync, DiscardMaxPerCommit: 4096})
	tx, _ := fs.Begin()
	var exts []alloc.Range
	for i := range 4 {
		l, err := tx.AllocData(ext)
		if err != nil {
			t.Fatal(err)
		}
		if err := fs.Vol.Write(l, bytes.Repeat([]byte{0xA0 + byte(i)}, ext)); err != nil {
			t.Fatal(err)
		}
		exts = append(exts, alloc.Range{Start: l, Len: ext})
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	tx, _ = fs.Begin()
	for _, r := range exts[:3] {
		if err := tx.FreeData(r.Start, r.Len, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := fs.DiscardStats(); got.Bytes != 0 || got.PendingBytes < 3*ext {
		t.Fatalf("before the command ends: discarded %d, pending %d", got.Bytes, got.PendingBytes)
	}
	// Power cut right after the commit: the records are durable.
	fs = reopen(t, devs, true)
	if got := fs.DiscardStats(); got.PendingBytes < 3*ext {
		t.Fatalf("after crash: pending %d, want the freed data", got.PendingBytes)
	}
	// The next command ends within its budget: 4 KiB go, the rest waits.
	if err := fs.Close(); err != nil {
		t.Fatal(err)
	}
	if got := fs.DiscardStats(); got.Bytes != 4096 || got.PendingBytes < 3*ext-4096 {
		t.Fatalf("budget 4 KiB: discarded %d, pending %d", got.Bytes, got.PendingBytes)
	}
	fs = reopen(t, devs, false)
	if err := fs.UpdateSettings(func(s *format.Settings) error { s.DiscardMaxPerCommit = 0; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := fs.Close(); err != nil {
		t.Fatal(err)
	}
	for i, r := range exts {
		b := copies(t, fs, devs, r)[0]
		if i < 3 && !allZero(b) {
			t.Errorf("freed extent %d not discarded by the next command", i)
		}
		if i == 3 && !bytes.Equal(b, bytes.Repeat([]byte{0xA3}, ext)) {
			t.Errorf("live extent damaged")
		}
	}
	fs = reopen(t, devs, false)
	n := 0
	if err := fs.Tree(format.DiscardTree).Scan(format.Key{}, format.Key{ObjectID: ^uint64(0)}, func(it format.Item) (bool, error) {
		if it.Key.Type == format.DiscardItemKey && fs.blockGroup(it.Key.ObjectID).Chunk.Type == format.ChunkData {
			n++
		}
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d data discard records left after everything was discarded", n)
	}
	if fs.Super().Compat&format.CompatDiscardTree == 0 {
		t.Error("CompatDiscardTree not set")
	}
	if err := fs.ClearDiscardRecords(); err != nil {
		t.Fatal(err)
	}
	// Only the clearing commit's own freed nodes may be pending now.
	if p := fs.DiscardStats().PendingBytes; p > 16*4096 {
		t.Errorf("%d bytes still pending after ClearDiscardRecords", p)
	}
}

// TestDiscardNeverHitsLiveData runs random allocate/write/free sequences
// under both online policies and checks after every commit that every
// live extent reads back intact on every copy (a wrong discard zeroes it),
// against a model of what is allocated.
func TestDiscardNeverHitsLiveData(t *testing.T) {
	for _, policy := range []format.DiscardPolicy{format.DiscardSync, format.DiscardAsync} {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("%v-%d", policy, seed), func(t *testing.T) {
				devs := memDevs(2, 512<<20)
				s := format.Settings{Discard: policy, DiscardMetadataMin: 64 << 10}
				if seed == 2 {
					s.DiscardMaxPerCommit = 64 << 10
				}
				fs := createWith(t, devs, format.ProfileRaid1, format.ProfileDup, s)
				r := rand.New(rand.NewPCG(seed, uint64(policy)))
				live := map[alloc.Range]byte{}
				for round := range 40 {
					tx, err := fs.Begin()
					if err != nil {
						t.Fatal(err)
					}
					fresh := map[alloc.Range]bool{}
					for range r.IntN(20) {
						n := uint64(1+r.IntN(32)) * 4096
						l, err := tx.AllocData(n)
						if err != nil {
							t.Fatal(err)
						}
						v := byte(1 + r.IntN(255))
						if err := fs.Vol.Write(l, bytes.Repeat([]byte{v}, int(n))); err != nil {
							t.Fatal(err)
						}
						live[alloc.Range{Start: l, Len: n}] = v
						fresh[alloc.Range{Start: l, Len: n}] = true
					}
					for e := range live {
						if r.IntN(3) == 0 {
							if err := tx.FreeData(e.Start, e.Len, fresh[e]); err != nil {
								t.Fatal(err)
							}
							delete(live, e)
						}
					}
					if err := tx.Commit(); err != nil {
						t.Fatal(err)
					}
					checkRecords(t, fs)
					for e, v := range live {
						for c, b := range copies(t, fs, devs, e) {
							if !bytes.Equal(b, bytes.Repeat([]byte{v}, len(b))) {
								t.Fatalf("round %d: live extent %d+%d copy %d damaged", round, e.Start, e.Len, c)
							}
						}
					}
				}
				if fs.DiscardStats().Discards == 0 && policy == format.DiscardSync {
					t.Error("no discards issued")
				}

			})
		}
	}
}

// TestMergeInto checks the one-pass merge against a model: the merged
// result equals mergeRanges of everything, and applying gone/born to the
// old set gives the result.
func TestMergeInto(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	gen := func(n int) []alloc.Range {
		var rs []alloc.Range
		for range n {
			rs = append(rs, alloc.Range{Start: uint64(r.IntN(200)) * 4, Len: uint64(1+r.IntN(6)) * 4})
		}
		return mergeRanges(rs)
	}
	for range 2000 {
		old, add := gen(r.IntN(12)), gen(r.IntN(6))
		out, gone, born := mergeInto(old, add)
		want := mergeRanges(append(append([]alloc.Range(nil), old...), add...))
		if fmt.Sprint(out) != fmt.Sprint(want) {
			t.Fatalf("merge %v + %v = %v, want %v", old, add, out, want)
		}
		set := map[alloc.Range]bool{}
		for _, x := range old {
			set[x] = true
		}
		for _, x := range gone {
			if !set[x] {
				t.Fatalf("gone %v not in old %v", x, old)
			}
			delete(set, x)
		}
		for _, x := range born {
			set[x] = true
		}
		if len(set) != len(out) {
			t.Fatalf("old %v + add %v: gone %v born %v leaves %v, want %v", old, add, gone, born, set, out)
		}
		for _, x := range out {
			if !set[x] {
				t.Fatalf("old %v + add %v: %v missing after gone %v born %v", old, add, x, gone, born)
			}
		}
	}
}

// checkRecords compares the committed discard tree with the pending set
// (async): every pending range is recorded exactly, nothing else is.
func checkRecords(t *testing.T, fs *FS) {
	t.Helper()
	if fs.sb.Settings.Discard != format.DiscardAsync {
		return
	}
	var recs []alloc.Range
	if err := fs.Tree(format.DiscardTree).Scan(allKeys[0], allKeys[1], func(it format.Item) (bool, error) {
		recs = append(recs, alloc.Range{Start: it.Key.ObjectID, Len: it.Key.Offset})
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	var want []alloc.Range
	for _, k := range sortedKeys64(fs.disc.pending) {
		want = append(want, fs.disc.pending[k]...)
	}
	// Ranges discarded after the commit are still recorded until the
	// next one: records may be a superset, never miss a pending range.
	have := map[alloc.Range]bool{}
	for _, r := range recs {
		have[r] = true
	}
	for _, r := range want {
		if !have[r] && !fs.disc.toInsert[r] {
			t.Fatalf("pending %v neither recorded nor queued", r)
		}
	}
	for r := range fs.disc.toDelete {
		if !have[r] {
			t.Fatalf("queued delete of %v, which is not recorded", r)
		}
	}
}

// Shrink cuts a chunk tail that still holds async discard records: the
// records are clipped with it, so the image opens for writing afterwards
// (after a power cut, and after a clean close with the policy off).
func TestShrinkClipsDiscardRecords(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(map[bool]string{false: "async-crash", true: "off-close"}[off], func(t *testing.T) { shrinkCase(t, off) })
	}
}

// asyncFreedTail makes an async-discard image with two 8 MiB data
// extents, the second freed (so pending) in the last commit.
func asyncFreedTail(t *testing.T) (*FS, []*device.MemDevice, []alloc.Range) {
	t.Helper()
	devs := memDevs(1, 1<<30)
	fs := createWith(t, devs, format.ProfileSingle, format.ProfileDup, format.Settings{Discard: format.DiscardAsync})
	tx, _ := fs.Begin()
	var exts []alloc.Range
	for range 2 {
		l, err := tx.AllocData(8 << 20)
		if err != nil {
			t.Fatal(err)
		}
		exts = append(exts, alloc.Range{Start: l, Len: 8 << 20})
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	tx, _ = fs.Begin()
	if err := tx.FreeData(exts[1].Start, exts[1].Len, false); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return fs, devs, exts
}

func shrinkCase(t *testing.T, off bool) {
	fs, devs, _ := asyncFreedTail(t)
	if off {
		if err := fs.UpdateSettings(func(s *format.Settings) error { s.Discard = format.DiscardOff; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := fs.Shrink(); err != nil {
		t.Fatal(err)
	}
	if off { // clean Close: policy off, so Close does not drop the records
		if err := fs.Close(); err != nil {
			t.Fatal(err)
		}
	} else { // power cut right after Shrink
		for _, d := range devs {
			d.Crash()
		}
	}
	fs = reopen(t, devs, false)
	if got := fs.DiscardStats().PendingBytes; got >= 8<<20 {
		t.Errorf("%d bytes pending past the shrunk chunk", got)
	}
}

// Close drops an uncommitted transaction: async discard's cleanup commit
// at Close must not write the dropped one's in-memory state.
func TestCloseDropsOpenTransaction(t *testing.T) {
	fs, devs, exts := asyncFreedTail(t)
	bg := fs.blockGroup(exts[0].Start)
	committed := bg.Used
	tx, _ := fs.Begin()
	if _, err := tx.AllocData(1 << 20); err != nil { // never committed
		t.Fatal(err)
	}
	if err := fs.Close(); err != nil { // "An uncommitted transaction is dropped."
		t.Fatal(err)
	}
	fs = reopen(t, devs, false)
	if got := fs.blockGroup(exts[0].Start).Used; got != committed {
		t.Fatalf("data block group used %d after reopen, last commit said %d: Close committed the dropped transaction's usage", got, committed)
	}
}

// TestDiscardDeviceErrors: a device that fails discards does not fail the
// (already durable) commit; its ranges stay recorded and the next command
// on a healthy device discards them. A device without discard support
// gets none, and its ranges are dropped.
func TestDiscardDeviceErrors(t *testing.T) {
	for _, tc := range []struct {
		name        string
		err         error
		wantPending bool
	}{
		{"failing", syscall.EIO, true},
		{"unsupported", device.ErrNotSupported, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := device.NewMemDevice("mem0", 1<<30)
			faulty := device.NewFaulty(mem, nil)
			p := CreateParams{FSID: [16]byte{9}, Label: "t", Csum: format.CsumCRC32C, NodeSize: 4096, SectorSize: 4096,
				Data: format.ProfileSingle, Metadata: format.ProfileDup, Settings: format.Settings{Discard: format.DiscardAsync},
				Devices: []NewDevice{{Dev: faulty, Path: "mem0"}}}
			fs, err := Create(p)
			if err != nil {
				t.Fatal(err)
			}
			tx, _ := fs.Begin()
			l, err := tx.AllocData(1 << 20)
			if err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			faulty.SetRule(device.FailAfter(0, device.OpDiscard, tc.err))
			tx, _ = fs.Begin()
			if err := tx.FreeData(l, 1<<20, false); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatalf("commit with a %s discard device: %v", tc.name, err)
			}
			if err := fs.Close(); err != nil {
				t.Fatalf("close: %v", err)
			}
			st := fs.DiscardStats()
			if st.Discards != 0 || (st.PendingBytes >= 1<<20) != tc.wantPending {
				t.Fatalf("%s: %d discards, %d bytes pending", tc.name, st.Discards, st.PendingBytes)
			}
			faulty.SetRule(nil)
			fs = reopen(t, []*device.MemDevice{mem}, false)
			if err := fs.Close(); err != nil {
				t.Fatal(err)
			}
			if got := fs.DiscardStats(); tc.wantPending && got.Bytes < 1<<20 {
				t.Fatalf("next command discarded %d bytes of the 1 MiB left pending", got.Bytes)
			}
		})
	}
}
