package check

// fsck.ddfs --rebuild-csums: checksums for data that has none (as btrfs
// check --init-csum-tree, but only where none exist and saying what it
// vouches for). A sum made now vouches for the bytes as they read now,
// which nothing verified: so no repair mode makes one (CSUM_MISSING is
// reported only), it is an explicit choice, and it names every file it
// covers. Sums that exist and fail are never replaced (that would hide
// the corruption they catch), and mirrored copies that differ are not
// chosen between.

import (
	"bytes"
	"errors"
	"fmt"
	"sort"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
	"github.com/ddfs/ddfs/pkg/store"
	"github.com/ddfs/ddfs/pkg/volume"
)

// CsumRebuilt is a file whose missing data checksums --rebuild-csums
// made from its data as it read.
type CsumRebuilt struct {
	Path string `json:"path"` // "" when no name leads to it
	Ino  uint64 `json:"ino"`
}

// CsumRefused is a data extent --rebuild-csums left without checksums.
type CsumRefused struct {
	Logical uint64 `json:"logical"`
	Message string `json:"message"`
}

// ErrRebuildRefused: the checksums were not rebuilt because the mapping
// or a tree is damaged (a file found through a damaged tree, data read
// through a damaged mapping, is nothing to vouch for).
var ErrRebuildRefused = errors.New("checksums not rebuilt: the chunk mapping or a tree is damaged (repair that first)")

// missingSums is the unsummed ranges of one data extent.
type missingSums struct {
	extent uint64
	ranges [][2]uint64
}

// RebuildCsums sums the data extents that files use and that have no
// checksum (CSUM_MISSING), in one transaction, and returns the files it
// vouches for (by path) and the extents it refused.
func RebuildCsums(open func() (*volume.Volume, error), opt Options) ([]CsumRebuilt, []CsumRefused, error) {
	vol, err := open()
	if err != nil {
		return nil, nil, err
	}
	defer vol.Close()
	rep, err := CheckVolume(vol, Options{Context: opt.Context, Degraded: opt.Degraded})
	if err != nil {
		return nil, nil, err
	}
	if mappingBroken(rep.Problems) || len(rep.Incomplete) > 0 || hasCode(rep.Problems, DevMissing) {
		return nil, nil, ErrRebuildRefused
	}
	missing := missingByExtent(rep.Problems)
	if len(missing) == 0 {
		return nil, nil, nil
	}
	st, err := store.OpenForRepair(vol)
	if err != nil {
		return nil, nil, fmt.Errorf("rebuild checksums: %w", err)
	}
	tx, err := st.Begin()
	if err != nil {
		return nil, nil, err
	}
	users, err := extentUsers(tx.Tree(format.FSTree), missing)
	if err != nil {
		tx.Abort()
		return nil, nil, fmt.Errorf("rebuild checksums: %w", err)
	}
	inos, refused, err := sumExtents(st, tx, missing, users)
	if err == nil {
		err = tx.Commit()
	} else {
		tx.Abort()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("rebuild checksums: %w", err)
	}
	return vouched(st.Tree(format.FSTree), inos), refused, nil
}

// missingByExtent gathers the CSUM_MISSING ranges by data extent.
func missingByExtent(ps []Problem) []*missingSums {
	by := map[uint64]*missingSums{}
	var out []*missingSums
	for _, p := range ps {
		if p.Code != CsumMissing || p.fix == nil {
			continue
		}
		m := by[p.Logical]
		if m == nil {
			m = &missingSums{extent: p.Logical}
			by[p.Logical] = m
			out = append(out, m)
		}
		m.ranges = append(m.ranges, [2]uint64{p.fix.index, p.fix.end})
	}
	return out
}

// extentUsers maps each extent of missing to the inodes whose file
// extents point at it.
func extentUsers(fs *btree.Tree, missing []*missingSums) (map[uint64][]uint64, error) {
	want := map[uint64]bool{}
	for _, m := range missing {
		want[m.extent] = true
	}
	users := map[uint64][]uint64{}
	var fe format.FileExtentItem
	err := fs.Scan(format.Key{}, format.MaxKey, func(it format.Item) (bool, error) {
		if it.Key.Type != format.FileExtentKey || format.DecodeFileExtentItem(it.Data, &fe) != nil {
			return true, nil
		}
		if fe.Type != format.FileExtentInline && want[fe.DiskLogical] {
			u := users[fe.DiskLogical]
			if len(u) == 0 || u[len(u)-1] != it.Key.ObjectID {
				users[fe.DiskLogical] = append(u, it.Key.ObjectID)
			}
		}
		return true, nil
	})
	return users, err
}

// sumExtents puts the sums of every extent a file uses whose copies
// read alike; it returns the inodes it vouches for and the extents it
// refused.
func sumExtents(st *store.FS, tx *store.Txn, missing []*missingSums, users map[uint64][]uint64) (map[uint64]bool, []CsumRefused, error) {
	inos := map[uint64]bool{}
	var refused []CsumRefused
	for _, m := range missing {
		if len(users[m.extent]) == 0 {
			refused = append(refused, CsumRefused{m.extent, "no file points at it"})
			continue
		}
		items, why := sumRanges(st, m.ranges)
		if why != "" {
			refused = append(refused, CsumRefused{m.extent, why})
			continue
		}
		for _, it := range items {
			if err := tx.Tree(format.CsumTree).Put(it.Key, it.Data); err != nil {
				return nil, nil, err
			}
		}
		for _, ino := range users[m.extent] {
			inos[ino] = true
		}
	}
	return inos, refused, nil
}

// sumRanges makes the csum items of ranges from the data, every copy
// of which must read and be the same; else it says why not.
func sumRanges(st *store.FS, ranges [][2]uint64) ([]format.Item, string) {
	sb := st.Super()
	ss := uint64(sb.SectorSize)
	var items []format.Item
	for _, r := range ranges {
		// The range comes from an extent item: only whole sectors of one
		// data chunk (a crafted length must not make this loop for ever).
		ch, ok := st.Vol.Chunks.Lookup(r[0])
		if r[0]%ss != 0 || r[1]%ss != 0 || r[1] <= r[0] || !ok || ch.Type != format.ChunkData || r[1] > ch.End() {
			return nil, fmt.Sprintf("[%d, %d) is not whole sectors of one data chunk", r[0], r[1])
		}
		for at := r[0]; at < r[1]; at += sumBatch * ss {
			b, why := readAlike(st.Vol, at, min(r[1]-at, sumBatch*ss))
			if why != "" {
				return nil, why
			}
			sums := make([]byte, 0, uint64(len(b))/ss*uint64(sb.CsumType.Len()))
			for i := uint64(0); i < uint64(len(b)); i += ss {
				sum := format.Checksum(sb.CsumType, b[i:i+ss])
				sums = append(sums, sum[:sb.CsumType.Len()]...)
			}
			items = append(items, format.Item{Key: csumKey(at), Data: sums})
		}
	}
	return items, ""
}

// readAlike reads n bytes at logical from every copy; they must all
// read and agree.
func readAlike(vol *volume.Volume, logical, n uint64) ([]byte, string) {
	first := make([]byte, n)
	other := make([]byte, n)
	for m := 0; m < vol.Copies(logical); m++ {
		buf := first
		if m > 0 {
			buf = other
		}
		if err := vol.ReadCopy(logical, buf, m); err != nil {
			return nil, fmt.Sprintf("copy %d does not read at %d: %v", m, logical, err)
		}
		if m > 0 && !bytes.Equal(first, other) {
			return nil, fmt.Sprintf("copies 0 and %d differ in [%d, %d): cannot choose", m, logical, logical+n)
		}
	}
	return first, ""
}

// vouched lists the inodes with their paths, by path.
func vouched(fs *btree.Tree, inos map[uint64]bool) []CsumRebuilt {
	out := make([]CsumRebuilt, 0, len(inos))
	for ino := range inos {
		// A path that does not read leaves the file named by its inode
		// only: the sums are committed, and the check before refused an
		// incomplete fs tree.
		path, _ := pathOf(fs, ino)
		out = append(out, CsumRebuilt{Path: path, Ino: ino})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Ino < out[j].Ino
	})
	return out
}
