package send

// Incremental streams: the changes from a base snapshot to a later one
// of the same image. A file is the same in both when its inode number,
// creation generation and type are (snapshots of one image share inode
// numbers); a name whose file is not the same is removed and made again
// (a rename travels as that, data included). The stream is proportional
// to what changed: a kept file sends only the ranges whose extents
// differ (fsys.ChangedRanges), its changed attributes and xattrs.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"syscall"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// SendIncremental writes the changes from base to snap (read-only views
// of two snapshots of one image) as a stream of snapshot s on parent,
// the base snapshot's UUID.
func SendIncremental(base, snap *fsys.FS, w io.Writer, s Snapshot, parent [16]byte, o SendOptions) (Stats, error) {
	x := &sender{o: o, f: snap, base: base, w: newAheadWriter(w), links: map[uint64]string{}, data: make([]byte, format.MaxWriteData),
		stash: map[uint64]stashed{}}
	defer x.w.Flush()
	if _, err := x.w.Write(format.AppendStreamHeader(nil)); err != nil {
		return x.st, err
	}
	x.st.Bytes = format.StreamHeaderSize
	if err := x.put(&format.Record{Type: format.RecBegin, Name: s.Name, UUID: s.UUID, ParentUUID: parent, Ctim: s.Ctime}); err != nil {
		return x.st, err
	}
	if err := x.findChanges(); err != nil {
		return x.st, err
	}
	br, err := base.Resolve("/", false)
	if err != nil {
		return x.st, err
	}
	sr, err := snap.Resolve("/", false)
	if err != nil {
		return x.st, err
	}
	if err := x.prune("", br, sr, 0); err != nil {
		return x.st, err
	}
	if err := x.change("", br, sr, 0); err != nil {
		return x.st, err
	}
	if err := x.dropStash(); err != nil {
		return x.st, err
	}
	if err := x.put(&format.Record{Type: format.RecEnd, Records: x.st.Records, Bytes: x.st.Bytes}); err != nil {
		return x.st, err
	}
	return x.st, x.w.Flush()
}

// findChanges finds the inodes whose items differ between the base and
// the snapshot by comparing their trees' shared nodes (a cost that
// follows the change), and marks them and every directory above them
// in either tree: the walks enter only those.
func (x *sender) findChanges() (err error) {
	x.changed, x.dirty, x.names, err = changes(x.base, x.f)
	return err
}

// Changes compares two views of one image's fs trees (snapshots, or a
// snapshot and the live tree): changed holds the inodes whose items
// differ, dirty those and every directory above them in either tree. An
// inode in neither tree's dirty set is, with everything below it, the
// same in both.
func Changes(a, b *fsys.FS) (changed, dirty map[uint64]bool, err error) {
	changed, dirty, _, err = changes(a, b)
	return changed, dirty, err
}

// changes is Changes that also returns, for each dirty directory, the
// names a walk must visit in it: those that lead to dirty inodes, in
// either tree. Any other name is in both trees with the same file, which
// is unchanged with everything below it (a name made, removed or
// pointed elsewhere changes its file's INODE_REF, so the file is
// changed and its names noted): a directory with one new entry costs
// that entry, not a listing.
func changes(a, b *fsys.FS) (changed, dirty map[uint64]bool, names map[uint64]map[string]bool, err error) {
	if a.Store() != b.Store() {
		return nil, nil, nil, fmt.Errorf("changes between two images: %w", syscall.EINVAL)
	}
	changed, err = b.Store().ChangedObjects(a.TreeRoot(), b.TreeRoot())
	if err != nil {
		return nil, nil, nil, err
	}
	dirty, names = map[uint64]bool{}, map[uint64]map[string]bool{}
	for ino := range changed {
		for _, f := range []*fsys.FS{a, b} {
			if err := markUp(dirty, names, f, ino); err != nil {
				return nil, nil, nil, err
			}
		}
	}
	return changed, dirty, names, nil
}

func noteName(names map[uint64]map[string]bool, dir uint64, name string) {
	if names[dir] == nil {
		names[dir] = map[string]bool{}
	}
	names[dir][name] = true
}

// markUp marks ino and the directories above it in f dirty, noting the
// names that lead to them. A directory met dirty already had its names
// noted: in the other tree they are the same, or its own items changed
// and it is marked from its own inode in both trees.
func markUp(dirty map[uint64]bool, names map[uint64]map[string]bool, f *fsys.FS, ino uint64) error {
	todo := []uint64{ino}
	for steps := 0; len(todo) > 0; steps++ {
		if steps > 1<<20 {
			return fmt.Errorf("inode %d: parents do not end at the root: %w", ino, format.ErrCorrupt)
		}
		i := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if dirty[i] && i != ino || i == format.RootDirIno {
			dirty[i] = true
			continue
		}
		dirty[i] = true
		links, err := f.Links(i)
		if err != nil {
			return err
		}
		for _, l := range links {
			noteName(names, l.Parent, l.Name)
			if !dirty[l.Parent] {
				todo = append(todo, l.Parent)
			}
		}
	}
	return nil
}

// kids lists the entries of directory dir of f a walk must visit: the
// names changes noted in it (the other entries are the same in both
// trees, with nothing changed below them).
func (x *sender) kids(f *fsys.FS, dir *fsys.Inode) ([]fsys.Child, error) {
	names := make([]string, 0, len(x.names[dir.Ino]))
	for n := range x.names[dir.Ino] {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]fsys.Child, 0, len(names))
	for _, n := range names {
		in, err := child(f, dir, n)
		if err != nil {
			return nil, err
		}
		if in != nil {
			out = append(out, fsys.Child{Entry: fsys.DirEntry{Name: n, Ino: in.Ino}, Inode: in})
		}
	}
	if x.changed[dir.Ino] && len(out) > 1 {
		return out, inListingOrder(f, dir.Ino, out)
	}
	return out, nil
}

// inListingOrder sorts kids, entries of directory dir of f, as a listing
// of it has them (by DIR_INDEX index): files a stream makes in a
// directory are made in the order the snapshot lists them.
func inListingOrder(f *fsys.FS, dir uint64, kids []fsys.Child) error {
	at := make(map[string]uint64, len(kids))
	for _, k := range kids {
		links, err := f.Links(k.Inode.Ino)
		if err != nil {
			return err
		}
		for _, l := range links {
			if l.Parent == dir && l.Name == k.Entry.Name {
				at[l.Name] = l.Index
			}
		}
	}
	sort.SliceStable(kids, func(i, j int) bool { return at[kids[i].Entry.Name] < at[kids[j].Entry.Name] })
	return nil
}

// same reports whether b and s are the same file.
func same(b, s *fsys.Inode) bool {
	return b != nil && s != nil && b.Ino == s.Ino && b.Generation == s.Generation && b.Mode&syscall.S_IFMT == s.Mode&syscall.S_IFMT
}

// child finds name in directory dir of f (nil: not there).
func child(f *fsys.FS, dir *fsys.Inode, name string) (*fsys.Inode, error) {
	in, err := f.LookupAt(dir.Ino, name)
	if errors.Is(err, syscall.ENOENT) {
		return nil, nil
	}
	return in, err
}

// prune removes the names of directory dir (at p in the base; sdir is
// the same directory in the snapshot) whose file is not the same in the
// snapshot, and notes the kept files with several names, which LINK
// records may name.
func (x *sender) prune(p string, dir, sdir *fsys.Inode, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%s: directories nested over %d deep: %w", p, maxDepth, format.ErrCorrupt)
	}
	kids, err := x.kids(x.base, dir)
	if err != nil {
		return fmt.Errorf("/%s: %w", p, err)
	}
	for _, k := range kids {
		kp := path.Join(p, k.Entry.Name)
		s, err := child(x.f, sdir, k.Entry.Name)
		if err != nil {
			return err
		}
		switch {
		case !same(k.Inode, s):
			err = x.removeTree(kp, k.Inode, depth+1)
		case k.Inode.IsDir():
			if x.dirty[k.Inode.Ino] {
				err = x.prune(kp, k.Inode, s, depth+1)
			}
		case s.Nlink > 1:
			if _, ok := x.links[s.Ino]; !ok {
				x.links[s.Ino] = kp
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// removeTree removes p of the base, a directory's entries first.
func (x *sender) removeTree(p string, in *fsys.Inode, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%s: directories nested over %d deep: %w", p, maxDepth, format.ErrCorrupt)
	}
	if moved, err := x.stashIt(p, in, depth); moved || err != nil {
		return err
	}
	if !in.IsDir() {
		return x.put(&format.Record{Type: format.RecUnlink, Path: p})
	}
	kids, err := x.base.Children(in)
	if err != nil {
		return fmt.Errorf("/%s: %w", p, err)
	}
	for _, k := range kids {
		if err := x.removeTree(path.Join(p, k.Entry.Name), k.Inode, depth+1); err != nil {
			return err
		}
	}
	return x.put(&format.Record{Type: format.RecRmdir, Path: p})
}

// change sends what differs between the same file b (base) and s
// (snapshot) at p: a directory's new entries made whole and kept ones
// compared in turn, attributes, xattrs, changed data, then times.
func (x *sender) change(p string, b, s *fsys.Inode, depth int) error {
	if !x.changed[s.Ino] {
		if s.IsDir() && x.dirty[s.Ino] {
			return x.changeDir(p, b, s, depth)
		}
		return nil // every item of the file is the base's
	}
	if b.Mode != s.Mode || b.UID != s.UID || b.GID != s.GID {
		if err := x.put(&format.Record{Type: format.RecSetAttr, Path: p, Mode: s.Mode & 0o7777, UID: s.UID, GID: s.GID}); err != nil {
			return err
		}
	}
	var err error
	switch {
	case s.IsDir():
		err = x.changeDir(p, b, s, depth)
	case s.IsRegular():
		err = x.changeData(p, b, s)
	}
	if err == nil {
		err = x.changeXattrs(p, b, s)
	}
	if err != nil || b.Atime == s.Atime && b.Mtime == s.Mtime {
		return err
	}
	return x.put(&format.Record{Type: format.RecUtimes, Path: p, Atime: s.Atime, Mtime: s.Mtime, Ctim: s.Ctime})
}

func (x *sender) changeDir(p string, bdir, dir *fsys.Inode, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%s: directories nested over %d deep: %w", p, maxDepth, format.ErrCorrupt)
	}
	kids, err := x.kids(x.f, dir)
	if err != nil {
		return fmt.Errorf("/%s: %w", p, err)
	}
	for _, k := range kids {
		kp := path.Join(p, k.Entry.Name)
		b, err := child(x.base, bdir, k.Entry.Name)
		if err != nil {
			return err
		}
		if same(b, k.Inode) {
			err = x.change(kp, b, k.Inode, depth+1)
		} else {
			err = x.entry(kp, k.Inode, depth+1)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// changeData sends a kept file's new size, then its changed ranges:
// bytes where the snapshot's file has data, holes where it has none.
func (x *sender) changeData(p string, b, s *fsys.Inode) error {
	if b.Size != s.Size {
		if err := x.put(&format.Record{Type: format.RecTruncate, Path: p, Offset: s.Size}); err != nil {
			return err
		}
	}
	changed, err := fsys.ChangedRanges(x.base, b, x.f, s)
	if err != nil {
		return fmt.Errorf("/%s: %w", p, err)
	}
	data, err := x.f.DataRanges(s)
	if err != nil {
		return fmt.Errorf("/%s: %w", p, err)
	}
	for _, c := range changed {
		at := c.Off
		for _, d := range data {
			lo, hi := max(d.Off, c.Off), min(d.Off+d.Len, c.Off+c.Len)
			if lo >= hi {
				continue
			}
			if lo > at {
				if err := x.put(&format.Record{Type: format.RecPunch, Path: p, Offset: at, Length: lo - at}); err != nil {
					return err
				}
			}
			if err := x.write(p, s, fsys.Range{Off: lo, Len: hi - lo}); err != nil {
				return err
			}
			at = hi
		}
		if end := c.Off + c.Len; at < end {
			if err := x.put(&format.Record{Type: format.RecPunch, Path: p, Offset: at, Length: end - at}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (x *sender) changeXattrs(p string, b, s *fsys.Inode) error {
	xb, err := x.base.ListXattrs(b)
	if err != nil {
		return err
	}
	xs, err := x.f.ListXattrs(s)
	if err != nil {
		return err
	}
	had := map[string][]byte{}
	for _, a := range xb {
		had[a.Name] = a.Value
	}
	for _, a := range xs {
		if v, ok := had[a.Name]; !ok || !bytes.Equal(v, a.Value) {
			if err := x.put(&format.Record{Type: format.RecSetXattr, Path: p, Name: a.Name, Data: a.Value}); err != nil {
				return err
			}
		}
		delete(had, a.Name)
	}
	for _, a := range xb { // in the base's order
		if _, gone := had[a.Name]; gone {
			if err := x.put(&format.Record{Type: format.RecRemoveXattr, Path: p, Name: a.Name}); err != nil {
				return err
			}
		}
	}
	return nil
}

// A file that moved travels as RENAMEs, its data staying where it is:
// the removal walk moves it out of the way to a stash name in the root,
// and the snapshot walk moves it from there to its new path and sends
// what else changed. A file with several names stashes the first name
// removed (its other removed names are unlinked); the snapshot walk's
// first name of it takes the stash back, the others LINK to that one,
// and where a name was kept the new ones LINK to it and the stash goes.
type stashed struct {
	path string
	base *fsys.Inode
}

// stashIt moves the base's entry in at p to a stash name when the
// snapshot still has it, elsewhere (a directory's entries move with it);
// it reports whether it did. A moved directory's own removals follow,
// under the stash name.
func (x *sender) stashIt(p string, in *fsys.Inode, depth int) (bool, error) {
	if _, ok := x.stash[in.Ino]; ok {
		return false, nil // another name of the file is stashed: this one goes
	}
	s, err := x.f.Inode(in.Ino)
	if errors.Is(err, syscall.ENOENT) || err == nil && !same(in, s) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	name := fmt.Sprintf(".ddfs-send-%d-%d", in.Ino, in.Generation)
	for _, f := range []*fsys.FS{x.base, x.f} {
		if _, err := f.LookupAt(format.RootDirIno, name); !errors.Is(err, syscall.ENOENT) {
			return false, err // the name is taken (or cannot be looked up): send the entry whole
		}
	}
	x.stash[in.Ino] = stashed{name, in}
	if err := x.put(&format.Record{Type: format.RecRename, Path: p, Target: name}); err != nil {
		return true, err
	}
	if in.IsDir() && x.dirty[in.Ino] {
		return true, x.prune(name, in, s, depth)
	}
	return true, nil
}

// unstash moves a stashed entry to p, its place in the snapshot, then
// sends how it changed. Paths noted under a stashed directory (the first
// names of files with several) move with it.
func (x *sender) unstash(p string, st stashed, in *fsys.Inode, depth int) error {
	delete(x.stash, in.Ino)
	if err := x.put(&format.Record{Type: format.RecRename, Path: st.path, Target: p}); err != nil {
		return err
	}
	if !in.IsDir() && in.Nlink > 1 {
		x.links[in.Ino] = p // its other new names LINK to this one
	}
	if in.IsDir() {
		for ino, l := range x.links {
			if strings.HasPrefix(l, st.path+"/") {
				x.links[ino] = p + l[len(st.path):]
			}
		}
	}
	return x.change(p, st.base, in, depth)
}

// dropStash removes what the snapshot walk did not take back (nothing,
// when the trees agree with their inodes' link counts); a directory left
// is a snapshot whose walk does not reach one of its directories.
func (x *sender) dropStash() error {
	paths := make([]string, 0, len(x.stash))
	for ino, st := range x.stash {
		if st.base.IsDir() {
			return fmt.Errorf("directory %d moved where the snapshot's walk does not reach it: %w", ino, format.ErrCorrupt)
		}
		paths = append(paths, st.path)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if err := x.put(&format.Record{Type: format.RecUnlink, Path: p}); err != nil {
			return err
		}
	}
	return nil
}
