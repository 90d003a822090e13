package rescue

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/store"
)

// maxDepth bounds how deep folders are followed: a host path of PATH_MAX
// (4096 bytes) holds at most 2048 names.
const maxDepth = 2048

// LostFound is the folder, in the destination, of inodes no name reaches.
const LostFound = "lost+found"

// writer lays the namespace out on the host.
type writer struct {
	st     *store.FS
	ns     *namespace
	out    *host
	rep    *Report
	opt    Options
	sums   *sums
	buf    []byte
	placed map[uint64]bool   // inodes written (or refused) once
	dirs   map[uint64]string // folder ino -> image path, for names by INODE_REF
	links  map[uint64]string // regular file ino -> host path of its first name
}

// restore writes the tree under the root directory, then the inodes no
// name reached under lost+found.
func (w *writer) restore() {
	w.buf = make([]byte, pieceBytes)
	w.placed, w.dirs = map[uint64]bool{}, map[uint64]string{}
	w.dir(format.RootDirIno, "/", ".", 0)
	w.orphans()
}

func (w *writer) problem(p string, ino uint64, err error) {
	w.rep.Problems = append(w.rep.Problems, Problem{Path: p, Ino: ino, Err: err})
}

// dir writes the entries of directory ino, then its own attributes
// (the destination folder itself keeps its own).
func (w *writer) dir(ino uint64, p, rel string, depth int) {
	w.placed[ino] = true
	w.dirs[ino] = p
	if depth > maxDepth {
		w.problem(p, ino, fmt.Errorf("more than %d folders deep: not followed", maxDepth))
		return
	}
	if rel != "." {
		if err := w.out.mkdir(rel); err != nil {
			w.problem(p, ino, err)
			return
		}
		w.rep.Dirs++
	}
	m := w.ns.entries[ino]
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		cp := path.Join(p, n)
		if !format.ValidName(n) {
			w.problem(cp, m[n].Ino, fmt.Errorf("invalid name: %w", format.ErrCorrupt))
			continue
		}
		w.entry(m[n].Ino, cp, path.Join(rel, n), depth+1)
	}
	if in := w.ns.inodes[ino]; in != nil && rel != "." {
		if err := w.out.dirAttrs(rel, in, w.ns.xattrs[ino]); err != nil {
			w.problem(p, ino, fmt.Errorf("attributes: %w", err))
		}
	}
}

// entry writes one name of inode ino.
func (w *writer) entry(ino uint64, p, rel string, depth int) {
	in := w.ns.inodes[ino]
	if in == nil && w.ns.entries[ino] != nil {
		w.problem(p, ino, errors.New("no inode item: made as a folder with mode 0700"))
		w.dir(ino, p, rel, depth)
		return
	}
	switch {
	case in == nil:
		w.problem(p, ino, errors.New("no inode item"))
	case in.FileType() == format.FileTypeDir:
		if w.placed[ino] {
			w.problem(p, ino, errors.New("directory reached twice (a loop or a second name): not followed"))
			return
		}
		w.dir(ino, p, rel, depth)
	case in.FileType() == format.FileTypeRegular:
		w.regular(ino, in, p, rel)
	case in.FileType() == format.FileTypeSymlink:
		w.placed[ino] = true
		w.symlink(ino, in, p, rel)
	default:
		w.placed[ino] = true
		if err := w.out.special(rel, in); err != nil {
			w.problem(p, ino, err)
			return
		}
		w.rep.Specials++
	}
}

// regular writes a file, or a hard link to its first name.
func (w *writer) regular(ino uint64, in *format.InodeItem, p, rel string) {
	if first, ok := w.links[ino]; ok {
		if err := w.out.link(first, rel); err != nil {
			w.problem(p, ino, err)
			return
		}
		w.rep.HardLinks++
		return
	}
	w.placed[ino] = true
	f, err := w.out.create(rel)
	if err != nil {
		w.problem(p, ino, err)
		return
	}
	err = w.readFile(ino, in.Size, func(b []byte, off uint64) error {
		_, err := f.WriteAt(b, int64(off))
		return err
	})
	if err == nil {
		err = f.Truncate(int64(in.Size))
	}
	if err != nil {
		// Never left looking complete: what was written is removed.
		f.Close()
		w.out.root.Remove(rel)
		w.problem(p, ino, err)
		return
	}
	aerr := w.out.attrs(f, rel, in, w.ns.xattrs[ino])
	if err := errors.Join(aerr, f.Close()); err != nil {
		w.problem(p, ino, fmt.Errorf("attributes: %w", err))
	}
	w.links[ino] = rel
	w.rep.Files++
	w.rep.Bytes += in.Size
	if w.opt.Copied != nil {
		w.opt.Copied(p)
	}
}

// symlink reads a link's target (bounded, verified) and makes the link.
func (w *writer) symlink(ino uint64, in *format.InodeItem, p, rel string) {
	if in.Size == 0 || in.Size > format.MaxSymlinkTarget {
		w.problem(p, ino, fmt.Errorf("symlink target of %d bytes: %w", in.Size, format.ErrCorrupt))
		return
	}
	target := make([]byte, in.Size)
	err := w.readFile(ino, in.Size, func(b []byte, off uint64) error {
		copy(target[off:], b)
		return nil
	})
	if err == nil && bytes.IndexByte(target, 0) >= 0 {
		err = fmt.Errorf("symlink target holds a NUL byte or a hole: %w", format.ErrCorrupt)
	}
	if err == nil {
		err = w.out.symlink(string(target), rel, in)
	}
	if err != nil {
		w.problem(p, ino, err)
		return
	}
	w.rep.Symlinks++
	if w.opt.Copied != nil {
		w.opt.Copied(p)
	}
}

// orphans places the inodes no entry reached: at the name an INODE_REF
// gives them in a folder that was written (their entries were lost),
// else in lost+found/INO: first those no entry names at all (a folder
// brings what is in it along), then the rest (named only from folders
// that were not reached).
func (w *writer) orphans() {
	named := w.ns.named()
	made := false
	for _, pass := range []bool{false, true} {
		for _, ino := range slices.Sorted(maps.Keys(w.ns.inodes)) {
			in := w.ns.inodes[ino]
			if w.placed[ino] || ino < format.RootDirIno || in.Nlink == 0 || (named[ino] && !pass) {
				continue // an inode without links is one being deleted
			}
			if w.byRef(ino) {
				continue
			}
			if !made {
				if err := w.out.mkdir(LostFound); err != nil {
					w.problem("", 0, fmt.Errorf("%s: %w", LostFound, err))
					return
				}
				made = true
			}
			w.rep.LostFound++
			name := strconv.FormatUint(ino, 10)
			w.entry(ino, path.Join("/"+LostFound, name), path.Join(LostFound, name), 1)
		}
	}
}

// byRef writes ino at the first name its INODE_REFs give in a folder
// already written, if one is free there.
func (w *writer) byRef(ino uint64) bool {
	for _, r := range w.ns.refs[ino] {
		dp, ok := w.dirs[r.parent]
		if !ok || !format.ValidName(r.name) {
			continue
		}
		if _, taken := w.ns.entries[r.parent][r.name]; taken {
			continue // the folder has another inode of that name
		}
		p := path.Join(dp, r.name)
		w.entry(ino, p, path.Join(".", strings.TrimPrefix(p, "/")), strings.Count(p, "/"))
		return true
	}
	return false
}
