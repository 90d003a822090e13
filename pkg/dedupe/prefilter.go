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

// prefilter picks, from the stored sector checksums alone, the data
// extents pass part of parts must read: those holding a block whose print
// another copy elsewhere has, or one the sums cannot tell (compressed,
// unaligned). The prints of the other parts are not held.
func prefilter(f *fsys.FS, o RunOptions, block, part, parts uint64) (extentSet, error) {
	var ps []printed
	err := walkPrints(f, o, block, func(bp *fsys.BlockPrint) error {
		if bp.Known && bp.Print%parts == part {
			ps = append(ps, printed{bp.Print, bp.Disk})
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
	// Keep, in place, the prints found at two places or more.
	dups := ps[:0]
	for i := 0; i < len(ps); {
		j, places := i+1, 1
		for ; j < len(ps) && ps[j].print == ps[i].print; j++ {
			if ps[j].disk != ps[j-1].disk {
				places++
			}
		}
		if places > 1 {
			dups = append(dups, ps[i])
		}
		i = j
	}
	var want extentSet
	err = walkPrints(f, o, block, func(bp *fsys.BlockPrint) error {
		if bp.Indexed {
			return nil
		}
		mine := bp.Known && bp.Print%parts == part
		if !mine && (bp.Known || part != 0) {
			return nil
		}
		if mine {
			if _, dup := slices.BinarySearchFunc(dups, bp.Print, func(p printed, t uint64) int { return cmp.Compare(p.print, t) }); !dup {
				return nil
			}
		}
		want = append(want, bp.Extents...)
		return nil
	})
	slices.Sort(want)
	return slices.Compact(want), err
}

// extentSet is a sorted set of extent logicals: 8 bytes an extent, a
// fifth of a map's.
type extentSet []uint64

func (s extentSet) has(l uint64) bool {
	_, ok := slices.BinarySearch(s, l)
	return ok
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
