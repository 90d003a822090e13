package fsys

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"syscall"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
)

// maxSymlinkHops bounds symlink resolution, as Linux's ELOOP limit does.
const maxSymlinkHops = 40

func dirItemKey(dir uint64, name string) format.Key {
	return format.Key{ObjectID: dir, Type: format.DirItemKey, Offset: format.NameHash([]byte(name))}
}

// lookupChild finds name in directory dir.
func (f *FS) lookupChild(dir uint64, name string) (format.DirEntry, error) {
	b, err := f.rtree(format.FSTree).Get(dirItemKey(dir, name))
	if errors.Is(err, btree.ErrNotFound) {
		return format.DirEntry{}, syscall.ENOENT
	}
	if err != nil {
		return format.DirEntry{}, err
	}
	es, err := format.UnmarshalDirEntries(b)
	if err != nil {
		return format.DirEntry{}, fmt.Errorf("directory %d: %w", dir, err)
	}
	for _, e := range es {
		if e.Name == name {
			return e, nil
		}
	}
	return format.DirEntry{}, syscall.ENOENT
}

// entryInode reads the inode a directory entry names. The entry exists, so
// a missing inode is corruption, not ENOENT; so is an inode whose type
// disagrees with the entry's (fsck reports both).
func (f *FS) entryInode(dir uint64, e format.DirEntry) (*Inode, error) {
	in, err := f.Inode(e.Ino)
	if errors.Is(err, syscall.ENOENT) {
		return nil, fmt.Errorf("directory %d entry %q names inode %d, which does not exist: %w", dir, e.Name, e.Ino, format.ErrCorrupt)
	}
	if err != nil {
		return nil, err
	}
	if t := in.FileType(); t != e.Type {
		return nil, fmt.Errorf("directory %d entry %q says %v, inode %d is a %v: %w", dir, e.Name, e.Type, e.Ino, t, format.ErrCorrupt)
	}
	return in, nil
}

// lookupDir resolves name in dir as a path component: like entryInode,
// and a directory must name this entry as its one parent (so no path
// reaches a directory through a second entry fsck flags), any other
// inode must hold the name under dir (checkRef).
func (f *FS) lookupDir(dir uint64, e format.DirEntry) (*Inode, error) {
	in, err := f.entryInode(dir, e)
	switch {
	case err != nil:
	case in.IsDir():
		if err = f.checkParent(dir, nil, e); err != nil {
			err = fmt.Errorf("directory %d entry %q: %w", dir, e.Name, err)
		}
	default:
		err = f.checkRef(dir, e)
	}
	if err != nil {
		return nil, err
	}
	return in, nil
}

// getOptional returns the value under k, or nil if there is none; an
// error reading the tree is returned, never taken for absence.
func getOptional(t *btree.Tree, k format.Key) ([]byte, error) {
	b, err := t.Get(k)
	if errors.Is(err, btree.ErrNotFound) {
		return nil, nil
	}
	return b, err
}

// Resolve returns the inode a path names inside the image. Paths are
// absolute or relative to the root; ".." stops at the root. Symlinks in
// the middle are followed (relative to their directory, absolute ones
// from the image root); the last one only if follow is set.
func (f *FS) Resolve(p string, follow bool) (*Inode, error) {
	// A trailing slash names a directory (POSIX): a symlink before it is
	// followed, and anything else is ENOTDIR ("cat img:/file/").
	slash := DirOnly(p)
	in, _, err := f.resolve(p, follow || slash)
	if err == nil && slash && !in.IsDir() {
		err = syscall.ENOTDIR
	}
	if err != nil {
		return nil, &PathError{Op: "lookup", Path: p, Err: err}
	}
	return in, nil
}

// DirOnly reports whether p ends in a slash, which names a directory
// (POSIX): "f/" of a file is ENOTDIR, wherever it stands.
func DirOnly(p string) bool { return len(p) > 1 && strings.HasSuffix(p, "/") }

// resolve also returns the parent directory of the result.
func (f *FS) resolve(p string, follow bool) (*Inode, *Inode, error) {
	parts := splitPath(p)
	if in, parent, ok, err := f.resolveCached(parts, follow); ok {
		return in, parent, err
	}
	root, err := f.Inode(format.RootDirIno)
	if err != nil {
		return nil, nil, err
	}
	stack := []*Inode{root} // the directories walked, for ".."
	hops := 0
	// pure: parts are still the caller's (no symlink followed), so each
	// directory walked can be remembered under its path.
	pure, prefix := cleanParts(parts), ""
	for i := 0; i < len(parts); i++ {
		name := parts[i]
		cur := stack[len(stack)-1]
		if !cur.IsDir() {
			return nil, nil, syscall.ENOTDIR
		}
		switch name {
		case ".":
			continue
		case "..":
			if len(stack) > 1 {
				stack = stack[:len(stack)-1]
			}
			continue
		}
		e, err := f.lookupChild(cur.Ino, name)
		if err != nil {
			return nil, nil, err
		}
		child, err := f.lookupDir(cur.Ino, e)
		if err != nil {
			return nil, nil, err
		}
		last := i == len(parts)-1
		if child.IsSymlink() && (!last || follow) {
			if hops++; hops > maxSymlinkHops {
				return nil, nil, syscall.ELOOP
			}
			target, err := f.readlinkIno(child)
			if err != nil {
				return nil, nil, err
			}
			if target == "" {
				return nil, nil, syscall.ENOENT // as Linux resolves an empty link
			}
			rest := append(splitPath(target), parts[i+1:]...)
			if strings.HasPrefix(target, "/") {
				stack = stack[:1]
			}
			parts = append(parts[:0:0], rest...)
			i = -1
			pure = false
			continue
		}
		if pure && child.IsDir() {
			prefix += "/" + name
			f.dirs.put(prefix, child.Ino)
		}
		stack = append(stack, child)
	}
	var parent *Inode
	if len(stack) > 1 {
		parent = stack[len(stack)-2]
	}
	return stack[len(stack)-1], parent, nil
}

// dirCache maps directory paths (no ".", "..", or symlink on the way) to
// inode numbers, so copying a tree in does not walk every path from the
// root: a path then costs one lookup per component below the deepest
// cached directory. Any remove or rename (and an abort) clears it.
type dirCache map[string]uint64

const dirCacheMax = 4096

func (c *dirCache) put(p string, ino uint64) {
	if *c == nil || len(*c) >= dirCacheMax {
		*c = dirCache{}
	}
	(*c)[p] = ino
}

func (c *dirCache) clear() { *c = nil }

// cleanParts reports whether parts hold no "." or "..".
func cleanParts(parts []string) bool {
	for _, s := range parts {
		if s == "." || s == ".." {
			return false
		}
	}
	return true
}

// resolveCached resolves parts from the deepest cached directory above
// the last component. ok is false when it cannot (nothing cached, "." or
// "..", a symlink on the way): the caller walks from the root.
func (f *FS) resolveCached(parts []string, follow bool) (in, parent *Inode, ok bool, err error) {
	if len(f.dirs) == 0 || len(parts) < 2 || !cleanParts(parts) {
		return nil, nil, false, nil
	}
	j, ino := len(parts)-1, uint64(0)
	for ; j > 0; j-- {
		if ino = f.dirs["/"+strings.Join(parts[:j], "/")]; ino != 0 {
			break
		}
	}
	if j == 0 {
		return nil, nil, false, nil
	}
	cur, err := f.Inode(ino)
	if err != nil || !cur.IsDir() {
		return nil, nil, false, nil
	}
	prefix := "/" + strings.Join(parts[:j], "/")
	for _, name := range parts[j:] {
		if !cur.IsDir() {
			return nil, nil, true, syscall.ENOTDIR
		}
		e, err := f.lookupChild(cur.Ino, name)
		if err != nil {
			return nil, nil, true, err
		}
		child, err := f.lookupDir(cur.Ino, e)
		if err != nil {
			return nil, nil, true, err
		}
		if child.IsSymlink() {
			return nil, nil, false, nil // symlinks: the full walk
		}
		if child.IsDir() {
			prefix += "/" + name
			f.dirs.put(prefix, child.Ino)
		}
		parent, cur = cur, child
	}
	return cur, parent, true, nil
}

func splitPath(p string) []string {
	var out []string
	for _, s := range strings.Split(p, "/") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// resolveParent resolves the directory of p and returns it with the
// final name (which must be a valid entry name).
func (f *FS) resolveParent(p string) (*Inode, string, error) {
	clean := path.Clean("/" + p)
	if clean == "/" {
		return nil, "", syscall.EEXIST
	}
	dir, name := path.Split(clean)
	if !format.ValidName(name) {
		if len(name) > 255 {
			return nil, "", syscall.ENAMETOOLONG
		}
		return nil, "", syscall.EINVAL
	}
	d, _, err := f.resolve(dir, true)
	if err != nil {
		return nil, "", err
	}
	if !d.IsDir() {
		return nil, "", syscall.ENOTDIR
	}
	return d, name, nil
}

// addEntry links child into dir under name: DIR_ITEM, DIR_INDEX and
// INODE_REF, and bumps the directory's size and times.
func (f *FS) addEntry(dir *Inode, name string, child *Inode) error {
	t, err := f.tree()
	if err != nil {
		return err
	}
	if _, err := f.lookupChild(dir.Ino, name); err == nil {
		return syscall.EEXIST
	} else if !errors.Is(err, syscall.ENOENT) {
		return err
	}
	e := format.DirEntry{Ino: child.Ino, Type: format.FileTypeOfMode(child.Mode), Name: name}
	k := dirItemKey(dir.Ino, name)
	var es []format.DirEntry
	if b, err := getOptional(t, k); err != nil {
		return err
	} else if b != nil { // a hash collision: keep both
		if es, err = format.UnmarshalDirEntries(b); err != nil {
			return err
		}
	}
	if err := t.Put(k, format.MarshalDirEntries(append(es, e))); err != nil {
		return err
	}
	idx := dir.Seq
	dir.Seq++
	if err := t.Insert(format.Key{ObjectID: dir.Ino, Type: format.DirIndexKey, Offset: idx}, format.MarshalDirEntry(e)); err != nil {
		return err
	}
	rk := format.Key{ObjectID: child.Ino, Type: format.InodeRefKey, Offset: dir.Ino}
	var refs []format.InodeRef
	if b, err := getOptional(t, rk); err != nil {
		return err
	} else if b != nil {
		if refs, err = format.UnmarshalInodeRefs(b); err != nil {
			return err
		}
	}
	if err := t.Put(rk, format.MarshalInodeRefs(append(refs, format.InodeRef{Index: idx, Name: name}))); err != nil {
		return err
	}
	dir.Size++
	dir.Mtime = f.Now()
	dir.Ctime = dir.Mtime
	return f.putInode(dir)
}

// removeEntry unlinks name from dir (the inode itself is untouched).
func (f *FS) removeEntry(dir *Inode, name string, child uint64) error {
	t, err := f.tree()
	if err != nil {
		return err
	}
	k := dirItemKey(dir.Ino, name)
	b, err := t.Get(k)
	if err != nil {
		return err
	}
	es, err := format.UnmarshalDirEntries(b)
	if err != nil {
		return err
	}
	kept := es[:0]
	for _, e := range es {
		if e.Name != name {
			kept = append(kept, e)
		}
	}
	if len(kept) == 0 {
		err = t.Delete(k)
	} else {
		err = t.Put(k, format.MarshalDirEntries(kept))
	}
	if err != nil {
		return err
	}
	rk := format.Key{ObjectID: child, Type: format.InodeRefKey, Offset: dir.Ino}
	rb, err := getOptional(t, rk)
	if err != nil {
		return err
	}
	if rb == nil {
		return fmt.Errorf("inode %d has no back reference to directory %d: %w", child, dir.Ino, format.ErrCorrupt)
	}
	refs, err := format.UnmarshalInodeRefs(rb)
	if err != nil {
		return err
	}
	var idx uint64
	keptRefs := refs[:0]
	found := false
	for _, r := range refs {
		if r.Name == name && !found {
			idx, found = r.Index, true
			continue
		}
		keptRefs = append(keptRefs, r)
	}
	if !found {
		return fmt.Errorf("inode %d: no back reference named %q: %w", child, name, format.ErrCorrupt)
	}
	if len(keptRefs) == 0 {
		err = t.Delete(rk)
	} else {
		err = t.Put(rk, format.MarshalInodeRefs(keptRefs))
	}
	if err != nil {
		return err
	}
	if err := t.Delete(format.Key{ObjectID: dir.Ino, Type: format.DirIndexKey, Offset: idx}); err != nil {
		return err
	}
	dir.Size--
	dir.Mtime = f.Now()
	dir.Ctime = dir.Mtime
	return f.putInode(dir)
}

// DirEntry is one entry of a directory listing.
type DirEntry struct {
	Name string
	Ino  uint64
	Type format.FileType
}

// EntryError is a directory entry a walker must not follow because fsck
// flags it: its DIR_INDEX does not decode or disagrees with its DIR_ITEM,
// it names a missing inode or one of another type, or it leads to a
// directory that does not name it as its one parent (a directory reachable
// from two entries, hard-linked, or looping). Err wraps format.ErrCorrupt.
type EntryError struct {
	Dir   uint64 // directory inode
	Index uint64 // DIR_INDEX key offset
	Name  string // "" if the entry does not decode
	Err   error
}

func (e *EntryError) Error() string {
	return fmt.Sprintf("directory %d entry %q (index %d): %v", e.Dir, e.Name, e.Index, e.Err)
}

func (e *EntryError) Unwrap() error { return e.Err }

// ReadDir lists a directory in creation order, calling fn per entry until
// it returns false. Entries a walker must not follow (EntryError) are not
// passed to fn: the listing goes on and ReadDir then returns the first of
// them (errors.Is(err, format.ErrCorrupt)). A tree that cannot be read
// stops the listing with that error.
func (f *FS) ReadDir(dir *Inode, fn func(DirEntry) bool) error {
	if !dir.IsDir() {
		return syscall.ENOTDIR
	}
	var bad []*EntryError
	start := format.Key{ObjectID: dir.Ino, Type: format.DirIndexKey}
	end := format.Key{ObjectID: dir.Ino, Type: format.DirIndexKey + 1}
	err := f.rtree(format.FSTree).Scan(start, end, func(it format.Item) (bool, error) {
		e, err := format.UnmarshalDirEntry(it.Data)
		if err == nil {
			err = f.checkEntry(dir.Ino, it.Key.Offset, e)
		}
		if errors.Is(err, format.ErrCorrupt) {
			bad = append(bad, &EntryError{Dir: dir.Ino, Index: it.Key.Offset, Name: e.Name, Err: err})
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("directory %d index %d: %w", dir.Ino, it.Key.Offset, err)
		}
		return fn(DirEntry{Name: e.Name, Ino: e.Ino, Type: e.Type}), nil
	})
	if err != nil {
		return err
	}
	if len(bad) > 0 {
		return bad[0]
	}
	return nil
}

// checkEntry holds a DIR_INDEX entry against what fsck checks of it: the
// DIR_ITEM of its name agrees, and a directory names this entry (name and
// index) as its only one. Otherwise a crafted image could make a
// recursive walk (cp -r, tar-out, ls -R, du, rm -r) visit a directory
// twice, loop, or emit one name twice as different things.
func (f *FS) checkEntry(dir, idx uint64, e format.DirEntry) error {
	de, err := f.lookupChild(dir, e.Name)
	if errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("no DIR_ITEM for the name: %w", format.ErrCorrupt)
	}
	if err != nil {
		return err
	}
	if de.Ino != e.Ino || de.Type != e.Type {
		return fmt.Errorf("DIR_INDEX names inode %d (%v), DIR_ITEM inode %d (%v): %w", e.Ino, e.Type, de.Ino, de.Type, format.ErrCorrupt)
	}
	if e.Type != format.FileTypeDir {
		return nil
	}
	return f.checkParent(dir, &idx, e)
}

// checkParent requires directory entry e of dir to lead to a directory
// that names it (name, and index unless idx is nil) as its one name.
func (f *FS) checkParent(dir uint64, idx *uint64, e format.DirEntry) error {
	if e.Ino == dir || e.Ino == format.RootDirIno {
		return fmt.Errorf("directory %d as its own descendant (a loop): %w", e.Ino, format.ErrCorrupt)
	}
	var refs []format.Item
	t := f.rtree(format.FSTree)
	err := t.Scan(format.Key{ObjectID: e.Ino, Type: format.InodeRefKey}, format.Key{ObjectID: e.Ino, Type: format.InodeRefKey + 1},
		func(it format.Item) (bool, error) {
			refs = append(refs, it)
			return len(refs) < 2, nil
		})
	if err != nil {
		return err
	}
	if len(refs) != 1 || refs[0].Key.Offset != dir {
		return fmt.Errorf("directory %d does not name directory %d as its only parent: %w", e.Ino, dir, format.ErrCorrupt)
	}
	rs, err := format.UnmarshalInodeRefs(refs[0].Data)
	if err != nil {
		return err
	}
	if len(rs) != 1 || rs[0].Name != e.Name || (idx != nil && rs[0].Index != *idx) {
		return fmt.Errorf("directory %d has %d names here, not just %q (a hard-linked directory): %w", e.Ino, len(rs), e.Name, format.ErrCorrupt)
	}
	return nil
}

// EntryInode reads the inode entry e of directory dir names, refusing
// (format.ErrCorrupt) a missing inode or one whose type disagrees with
// the entry's, as fsck does.
func (f *FS) EntryInode(dir *Inode, e DirEntry) (*Inode, error) {
	return f.entryInode(dir.Ino, format.DirEntry{Ino: e.Ino, Type: e.Type, Name: e.Name})
}

// List returns a directory's entries in creation order. It holds them all
// in memory: for very large directories, ReadDir streams. Like ReadDir,
// it lists the good entries even when it returns an EntryError.
func (f *FS) List(dir *Inode) ([]DirEntry, error) {
	var ents []DirEntry
	err := f.ReadDir(dir, func(e DirEntry) bool { ents = append(ents, e); return true })
	return ents, err
}

// Child is a directory entry with its inode, for recursive walkers.
type Child struct {
	Entry DirEntry
	Inode *Inode
}

// Children lists dir's entries with their inodes. Entries fsck flags
// (EntryError: see ReadDir and EntryInode) are left out and the first of
// them is returned as err with the good children, so a walker can copy
// the rest and then fail; any other error stops the listing.
func (f *FS) Children(dir *Inode) ([]Child, error) {
	ents, bad := f.List(dir)
	if bad != nil && !errors.As(bad, new(*EntryError)) {
		return nil, bad
	}
	kids := make([]Child, 0, len(ents))
	for _, e := range ents {
		in, err := f.EntryInode(dir, e)
		if errors.Is(err, format.ErrCorrupt) {
			if bad == nil {
				bad = &EntryError{Dir: dir.Ino, Name: e.Name, Err: err}
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		kids = append(kids, Child{e, in})
	}
	return kids, bad
}

// Refused remembers the first directory entry a recursive walk refused
// (an EntryError: what fsck flags), with its image path, so the walk can
// go on with everything else and fail with it at the end.
type Refused struct{ first error }

// Note takes the error of listing directory dir (an image path): nil, an
// EntryError (remembered; Note returns nil and the walk goes on) or an
// error that stops the walk (returned).
func (r *Refused) Note(dir string, err error) error {
	var ee *EntryError
	if err == nil || !errors.As(err, &ee) {
		return err
	}
	r.Add(&fs.PathError{Op: "read", Path: path.Join(dir, ee.Name), Err: ee})
	return nil
}

// Add remembers err if it is the first refusal.
func (r *Refused) Add(err error) {
	if r.first == nil {
		r.first = err
	}
}

// Done returns err, or the first refusal when the walk itself succeeded.
func (r *Refused) Done(err error) error {
	if err != nil {
		return err
	}
	return r.first
}
