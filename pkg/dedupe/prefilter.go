package dedupe

import (
	"cmp"
	"slices"

	"github.com/ddfs/ddfs/pkg/fsys"
)

// maxPrints bounds the block prints a run holds at once (16 bytes each:
// 8 MiB). Images with more blocks take several passes, each over the
// prints of one share of the print space. A variable for tests.
var maxPrints uint64 = 1 << 19

// maxPlan bounds the blocks planned for reading ahead (24 bytes each: 3
// MiB); blocks past it are read in turn. A variable for tests.
var maxPlan = 1 << 17

// printed is a block print and where its data lies (prints at one place
// are one copy: reflinks and shared extents).
type printed struct{ print, disk uint64 }

// prefilter picks, from the stored sector checksums alone and in one
// walk of the files, the data extents pass part of parts must read: those
// holding the first stored sector of a block whose print another copy
// elsewhere has, and those of a block the sums cannot tell (compressed,
// unaligned). A block that runs on into a next extent is read whole with
// its first one (Rededupe widens runs to blocks). The prints of the other
// parts are not held.
func prefilter(f *fsys.FS, o RunOptions, files *fileList, block, part, parts uint64, strong bool) (*wantSet, error) {
	var ps []printed
	var prints []uint32 // of w.plan, with strong sums
	w := &wantSet{}
	err := walkPrints(f, files, o.MinSize, block, func(seq int, bp *fsys.BlockPrint) error {
		switch {
		case bp.Known && bp.Print%parts == part:
			ps = append(ps, printed{bp.Print, bp.Disk})
			if parts == 1 && len(w.plan) < maxPlan && !bp.Indexed && len(bp.Extents) == 1 && bp.Disk != 0 {
				w.plan = append(w.plan, planned{seq: uint32(seq), n: uint32(bp.Len), off: bp.Off, disk: bp.Disk})
				if strong {
					prints = append(prints, uint32(bp.Print))
				}
			}
		case !bp.Known && part == 0 && !bp.Indexed:
			w.odd = append(w.odd, bp.Extents...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ps, func(a, b printed) int {
		if c := cmp.Compare(a.print, b.print); c != 0 {
			return c
		}
		return cmp.Compare(a.disk, b.disk)
	})
	// Keep, in place, every place of a print found at two places or more,
	// then order them by place: no memory beyond the prints'.
	dups := ps[:0]
	for i := 0; i < len(ps); {
		j, places := i+1, 1
		for ; j < len(ps) && ps[j].print == ps[i].print; j++ {
			if ps[j].disk != ps[j-1].disk {
				places++
			}
		}
		if places > 1 {
			dups = append(dups, ps[i:j]...)
		}
		i = j
	}
	slices.SortFunc(dups, func(a, b printed) int { return cmp.Compare(a.disk, b.disk) })
	// A copy of its own: the walk's array, grown by appending, is up to
	// twice the prints, and the pass holds w for its whole run.
	w.disks = slices.Clone(dups)
	slices.Sort(w.odd)
	w.odd = slices.Compact(w.odd)
	w.plan = w.readPlan(prints)
	return w, nil
}

// planned is a block the run will likely read, for fsys.BlockAhead: the
// file's place in the walk, the block's offset, length and first byte
// (24 bytes).
type planned struct {
	seq, n    uint32
	off, disk uint64
}

// readPlan keeps, in walk order, the planned blocks that are wanted (a
// repeated print); given their prints (strong sums), only the first of
// each print, as the later ones are shared unread (fsys.SumShares). 32
// bits of the print are enough here: a collision only leaves a block to
// be read in turn.
func (w *wantSet) readPlan(prints []uint32) []planned {
	wanted := func(p planned) bool {
		_, ok := slices.BinarySearchFunc(w.disks, p.disk, func(d printed, t uint64) int { return cmp.Compare(d.disk, t) })
		return ok
	}
	keep := w.plan[:0]
	if prints == nil {
		for _, p := range w.plan {
			if wanted(p) {
				keep = append(keep, p)
			}
		}
		return exact(keep)
	}
	// The first of each print in walk order: sort indexes by print (stable
	// keeps walk order within a print), mark, keep the marked in order.
	idx := make([]int32, len(w.plan))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortStableFunc(idx, func(a, b int32) int { return cmp.Compare(prints[a], prints[b]) })
	first := make([]bool, len(w.plan))
	for k, i := range idx {
		first[i] = k == 0 || prints[i] != prints[idx[k-1]]
	}
	for i, p := range w.plan {
		if first[i] && wanted(p) {
			keep = append(keep, p)
		}
	}
	return exact(keep)
}

// exact copies the plan kept out of the walk's array, grown by appending
// and up to 4x as big (on the bench set 1.2 MB for the 0.3 MB kept): a
// pass holds the plan for its whole run.
func exact(keep []planned) []planned {
	return append(make([]planned, 0, len(keep)), keep...)
}

// wantSet is what a pass reads: the extents holding a repeated block's
// first sector (found by disk address; the prints' own memory) and the
// extents of blocks whose sums tell nothing (8 bytes each).
type wantSet struct {
	disks []printed // repeated blocks, sorted by their first sector's logical
	odd   []uint64  // sorted extent logicals
	plan  []planned // blocks to read ahead, in walk order (one pass only)
}

// has reports whether the data extent of diskLen bytes at logical holds
// a wanted block start or is wanted whole.
func (w *wantSet) has(logical, diskLen uint64) bool {
	if _, ok := slices.BinarySearch(w.odd, logical); ok {
		return true
	}
	i, _ := slices.BinarySearchFunc(w.disks, logical, func(p printed, t uint64) int { return cmp.Compare(p.disk, t) })
	return i < len(w.disks) && w.disks[i].disk-logical < diskLen
}

// walkPrints calls fn for every block of files (of at least minSize
// bytes), with the file's place in files.
func walkPrints(f *fsys.FS, files *fileList, minSize, block uint64, fn func(int, *fsys.BlockPrint) error) error {
	return files.each(f, minSize, func(seq int, in *fsys.Inode) error {
		return f.BlockPrints(in, block, func(bp *fsys.BlockPrint) error { return fn(seq, bp) })
	})
}
