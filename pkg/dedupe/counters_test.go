package dedupe

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/device"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
)

// modelCounters recounts what the superblock counters (FORMAT.md §3.9)
// must hold by reading the trees in its own way: file extents decoded
// from the fs tree, extent items from the extent tree, and the dedupe
// tree's entries and nodes by walking it (not its METADATA_ITEMs).
func modelCounters(t *testing.T, st *store.FS) format.Counters {
	t.Helper()
	var c format.Counters
	scan := func(id format.TreeID, fn func(format.Item)) {
		err := st.Tree(id).Scan(format.Key{}, format.MaxKey, func(it format.Item) (bool, error) { fn(it); return true, nil })
		if err != nil {
			t.Fatal(err)
		}
	}
	scan(format.FSTree, func(it format.Item) {
		if it.Key.Type != format.FileExtentKey {
			return
		}
		x, err := format.UnmarshalFileExtentItem(it.Data)
		if err != nil {
			t.Fatal(err)
		}
		if x.Type == format.FileExtentInline {
			c.LogicalBytes += uint64(len(x.Inline))
		} else if x.DiskLogical != 0 {
			c.LogicalBytes += x.NumBytes
		}
	})
	scan(format.ExtentTree, func(it format.Item) {
		if it.Key.Type != format.ExtentItemKey {
			return
		}
		e, err := format.UnmarshalExtentItem(it.Data)
		if err != nil {
			t.Fatal(err)
		}
		c.PhysicalBytes += it.Key.Offset
		if e.Flags&format.ExtentFlagDeduped != 0 {
			c.DedupeSavedBytes += (e.Refs - 1) * e.RAMBytes
		}
		if e.Compression != format.CompressNone && e.RAMBytes > it.Key.Offset {
			c.CompressSavedBytes += e.RAMBytes - it.Key.Offset
		}
	})
	scan(format.DedupeTree, func(format.Item) { c.IndexEntries++ })
	if err := st.Tree(format.DedupeTree).WalkNodes(func(*format.Node) error { c.IndexNodes++; return nil }); err != nil {
		t.Fatal(err)
	}
	return c
}

func checkCounters(t *testing.T, st *store.FS, when string) {
	t.Helper()
	got, exact := st.Counters()
	if !exact {
		t.Fatalf("%s: counters not marked exact (ro_compat %#x)", when, st.Super().RoCompat)
	}
	if want := modelCounters(t, st); got != want {
		t.Fatalf("%s: counters\n%+v\nrecount\n%+v", when, got, want)
	}
}

// counterData is file content that dedupes (blocks from a small pool),
// compresses (runs of one byte) or neither (random), with holes.
func counterData(rng *rand.Rand, pool [][]byte, n int) []byte {
	b := make([]byte, 0, n)
	for len(b) < n {
		switch rng.IntN(4) {
		case 0, 1:
			b = append(b, pool[rng.IntN(len(pool))]...)
		case 2:
			b = append(b, make([]byte, 1+rng.IntN(3*4096))...)
		default:
			run := make([]byte, 1+rng.IntN(20000))
			for i := range run {
				run[i] = byte(i / 1000)
			}
			b = append(b, run...)
		}
	}
	return b[:n]
}

// TestCountersAfterRandomOps: after random writes, overwrites, truncates,
// removes, clones, hard links, commits, reopens and an offline dedupe run,
// with inband dedupe and compression on and off, the superblock counters
// equal a recount of the trees.
func TestCountersAfterRandomOps(t *testing.T) {
	settings := []format.Settings{
		{},
		{Dedupe: true, DedupeBlockLog2: 12},
		{Dedupe: true, DedupeBlockLog2: 13, Compression: format.CompressZstd},
		{Compression: format.CompressS2},
	}
	for si, s := range settings {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("settings%d/seed%d", si, seed), func(t *testing.T) {
				countersRun(t, s, seed)
			})
		}
	}
}

func countersRun(t *testing.T, s format.Settings, seed uint64) {
	d := newImage(t, s)
	rng := rand.New(rand.NewPCG(seed, 16))
	pool := make([][]byte, 6)
	for i := range pool {
		pool[i] = make([]byte, 8192)
		for j := range pool[i] {
			pool[i][j] = byte(rng.Uint32())
		}
	}
	f := openImage(t, d, 1<<20)
	var files []string
	pick := func() (string, *fsys.Inode) {
		p := files[rng.IntN(len(files))]
		in, err := f.Resolve(p, false)
		if err != nil {
			t.Fatalf("resolve %s: %v", p, err)
		}
		return p, in
	}
	for step := 0; step < 120; step++ {
		op := rng.IntN(10)
		if len(files) == 0 {
			op = 0
		}
		switch op {
		case 0, 1, 2: // new file
			p := fmt.Sprintf("/f%d", step)
			in, err := f.Create(p, fsys.Attr{Mode: 0o644})
			if err != nil {
				t.Fatal(err)
			}
			if err := f.WriteAt(in, counterData(rng, pool, rng.IntN(100000)), 0); err != nil {
				t.Fatal(err)
			}
			files = append(files, p)
		case 3: // overwrite inside or past the end
			_, in := pick()
			if err := f.WriteAt(in, counterData(rng, pool, 1+rng.IntN(30000)), uint64(rng.IntN(120000))); err != nil {
				t.Fatal(err)
			}
		case 4: // truncate down or up
			_, in := pick()
			if err := f.Truncate(in, uint64(rng.IntN(150000))); err != nil {
				t.Fatal(err)
			}
		case 5: // remove
			i := rng.IntN(len(files))
			if err := f.Remove(files[i]); err != nil {
				t.Fatal(err)
			}
			files = append(files[:i], files[i+1:]...)
		case 6: // clone (reflink) into a new file
			_, src := pick()
			p := fmt.Sprintf("/c%d", step)
			dst, err := f.Create(p, fsys.Attr{Mode: 0o644})
			if err != nil {
				t.Fatal(err)
			}
			if err := f.CloneData(src, dst); err != nil {
				t.Fatal(err)
			}
			files = append(files, p)
		case 7: // hard link: shares the inode, not the extents
			p, _ := pick()
			np := fmt.Sprintf("/l%d", step)
			if err := f.Link(p, np); err != nil {
				t.Fatal(err)
			}
			files = append(files, np)
		case 8:
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
			checkCounters(t, f.Store(), fmt.Sprintf("step %d", step))
		case 9: // reopen: the counters come from the superblock
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			f = openImage(t, d, 1<<20)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	checkCounters(t, f.Store(), "after the operations")
	if c, _ := f.Store().Counters(); c.LogicalBytes == 0 || (s.Compression != 0) != (c.CompressSavedBytes != 0) || s.Dedupe != (c.IndexEntries != 0) {
		t.Fatalf("counters left at zero: %+v", c)
	}
	if _, err := Run(f, RunOptions{Block: 4096, Hash: format.CsumSHA256}); err != nil {
		t.Fatal(err)
	}
	checkCounters(t, f.Store(), "after an offline dedupe run")
	// The run must have exercised every counter it can.
	c, _ := f.Store().Counters()
	if c.DedupeSavedBytes == 0 || c.IndexEntries == 0 || c.IndexNodes == 0 {
		t.Fatalf("counters left at zero: %+v", c)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	checkCounters(t, openImage(t, d, 0).Store(), "reopened")
}

// TestCountersOnOldImage: an image written before the counters (flag
// clear, counters zero) still opens, reads recount, and the first commit
// stores exact counters and sets the flag.
func TestCountersOnOldImage(t *testing.T) {
	d := newImage(t, format.Settings{Dedupe: true, DedupeBlockLog2: 12})
	f := openImage(t, d, 0)
	rng := rand.New(rand.NewPCG(3, 3))
	pool := [][]byte{make([]byte, 4096), make([]byte, 4096)}
	for i := range pool[0] {
		pool[0][i], pool[1][i] = byte(rng.Uint32()), byte(rng.Uint32())
	}
	for i := 0; i < 5; i++ {
		in, err := f.Create(fmt.Sprintf("/f%d", i), fsys.Attr{Mode: 0o644})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.WriteAt(in, counterData(rng, pool, 50000), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	forgetCounters(t, d)
	f = openImage(t, d, 0)
	if _, exact := f.Store().Counters(); exact {
		t.Fatal("counters exact after the flag was cleared")
	}
	want := modelCounters(t, f.Store())
	if got, err := f.Store().Recount(); err != nil || got != want {
		t.Fatalf("recount %+v (%v), want %+v", got, err, want)
	}
	if err := f.Store().UpdateSettings(func(*format.Settings) error { return nil }); err != nil {
		t.Fatal(err)
	}
	checkCounters(t, f.Store(), "first commit")
}

// forgetCounters rewrites every superblock copy as an image from before
// the counters: flag clear, counters zero.
func forgetCounters(t *testing.T, d *device.MemDevice) {
	t.Helper()
	for _, off := range format.SuperblockOffsets {
		b := make([]byte, format.SuperblockSize)
		if _, err := d.ReadAt(b, int64(off)); err != nil {
			continue
		}
		sb, err := format.UnmarshalSuperblock(b)
		if err != nil {
			continue
		}
		sb.RoCompat &^= format.RoCompatCounters
		sb.Counters = format.Counters{}
		nb, err := format.MarshalSuperblock(sb)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.WriteAt(nb, int64(off)); err != nil {
			t.Fatal(err)
		}
	}
}
