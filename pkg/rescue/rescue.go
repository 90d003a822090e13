// Package rescue salvages the files of a damaged filesystem into a host
// folder without writing to the image, as btrfs restore does.
//
// It opens the set read-only and finds each tree's root the way
// btrfs-find-root would: the superblock's root set, then its backup root
// sets, newest first (FORMAT.md §3.3); a root that reads from none of
// them, and any subtree of the fs tree that does not read, is made up
// from the fs-tree leaves a scan of the metadata chunks finds (header
// fsid, owner and checksum valid, generation no newer than the pointer
// that named the lost node; the newest leaf wins where two cover the
// same keys). The namespace is rebuilt from the items themselves: a
// name from either a DIR_ITEM or a DIR_INDEX counts, so one lost index
// does not hide a file; inodes no name reaches go to lost+found/INO.
//
// Data is verified against the csum tree, sector by sector, every copy
// tried: a file with a sector no copy verifies is not written (what was
// written of it is removed) and is listed instead, as is every entry that
// could not be read. Existing host files are never overwritten (btrfs
// restore without -o): such an entry is listed too; existing folders are
// merged into.
package rescue

import (
	"fmt"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/volume"
)

// DefaultScanLimit bounds the metadata bytes a node scan reads.
const DefaultScanLimit = 64 << 30

// Options tune a rescue.
type Options struct {
	// Degraded opens a set with members missing (their copies unread).
	Degraded bool
	// ScanLimit bounds the metadata bytes the node scan reads
	// (0: DefaultScanLimit); the scan runs only when a root or a subtree
	// of the fs tree does not read.
	ScanLimit uint64
	// Copied, when set, is called with each image path written (-v).
	Copied func(path string)
}

// Report is what a rescue did.
type Report struct {
	// RootsFrom names where the fs tree's root came from: "superblock",
	// "backup" or "scan".
	RootsFrom string
	// Generation of the fs-tree root used (the scan's: the superblock's).
	Generation uint64
	// Counts of what was written; Bytes counts file bytes (holes too).
	Files, Dirs, Symlinks, HardLinks, Specials int
	Bytes                                      uint64
	// LostFound counts inodes no name reaches, put in lost+found.
	LostFound int
	// NodesLost counts fs-tree nodes no copy of which read.
	NodesLost int
	// Problems lists every entry not restored, and why.
	Problems []Problem
}

// Problem is an entry (or a part of the tree) that was not restored.
type Problem struct {
	Path string // image path ("" when only the inode is known)
	Ino  uint64 // 0 for a node of a tree
	Err  error
}

func (p Problem) Error() string {
	switch {
	case p.Path == "" && p.Ino == 0:
		return p.Err.Error()
	case p.Path == "":
		return fmt.Sprintf("inode %d: %v", p.Ino, p.Err)
	}
	return fmt.Sprintf("%s: %v", p.Path, p.Err)
}

// Run copies everything readable from vol (opened read-only) into the
// host folder dst, which is created if missing. It fails outright only
// when the set cannot be mapped at all or dst cannot be used.
func Run(vol *volume.Volume, dst string, opt Options) (*Report, error) {
	if vol.Writable() {
		return nil, fmt.Errorf("rescue: the set must be opened read-only")
	}
	st, err := openStore(vol, opt.Degraded)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	rep := &Report{}
	ns, err := gather(st, opt, rep)
	if err != nil {
		return nil, err
	}
	out, err := newHost(dst)
	if err != nil {
		return nil, err
	}
	defer out.close()
	w := &writer{st: st, ns: ns, out: out, rep: rep, opt: opt, sums: newSums(st), links: map[uint64]string{}}
	w.restore()
	return rep, nil
}

// epochFor is format.Timespec as the host's clock wants it.
func epochFor(t format.Timespec) (sec, nsec int64) { return t.Sec, int64(t.Nsec) }
