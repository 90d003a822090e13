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
func prefilter(f *fsys.FS, o RunOptions, block, part, parts uint64) (*wantSet, error) {
	var ps []printed
	w := &wantSet{}
	err := walkPrints(f, o, block, func(bp *fsys.BlockPrint) error {
		switch {
		case bp.Known && bp.Print%parts == part:
			ps = append(ps, printed{bp.Print, bp.Disk})
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
	w.disks = dups
	slices.Sort(w.odd)
	w.odd = slices.Compact(w.odd)
	return w, nil
}

// wantSet is what a pass reads: the extents holding a repeated block's
// first sector (found by disk address; the prints' own memory) and the
// extents of blocks whose sums tell nothing (8 bytes each).
type wantSet struct {
	disks []printed // repeated blocks, sorted by their first sector's logical
	odd   []uint64  // sorted extent logicals
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

// walkPrints calls fn for every block of the files Run visits.
func walkPrints(f *fsys.FS, o RunOptions, block uint64, fn func(*fsys.BlockPrint) error) error {
	return walkFiles(f, o.Dir, func(in *fsys.Inode) error {
		if in.Size < o.MinSize {
			return nil
		}
		return f.BlockPrints(in, block, fn)
	})
}
