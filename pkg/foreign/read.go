package foreign

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"path"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/diskfs/go-diskfs/filesystem"
	"github.com/diskfs/go-diskfs/filesystem/squashfs"
)

// Bounds of a path walk and a directory.
const (
	maxSymlinks = 40      // as Linux: ELOOP past it
	maxSteps    = 4096    // path components walked for one lookup
	maxEntries  = 1 << 20 // entries of one directory
	maxName     = 4096    // bytes of one name or link target
)

// Stat is what a foreign format keeps of a file. A time the format does
// not keep is the zero time; owners the format does not keep are 0.
type Stat struct {
	Name   string
	Mode   uint32 // S_IFMT type bits | permission bits (07777)
	Size   int64  // bytes of a regular file or a symlink's target
	UID    uint32
	GID    uint32
	Nlink  uint32 // 1 where the format keeps no count
	Ino    uint64 // 0 where the format keeps no number
	Rdev   uint64 // device number of a device node (Linux encoding)
	Mtime  time.Time
	Atime  time.Time
	Ctime  time.Time
	Btime  time.Time
	Target string // a symlink's target

	// How Open reads a regular file without go-diskfs's Open, which
	// reads the whole parent directory again (every inode of it, for
	// squashfs) per file: quadratic in a directory's size.
	opener  entryOpener // squashfs: the listing's entry
	isoData int64       // ISO 9660: the data's byte offset (its extent's LBA x 2048) + 1; 0 none; -1 a file in several extents (not read)
	isoLen  uint32      // ISO 9660: the extent's length (a directory's records)
	xattrs  []Xattr     // squashfs: go-diskfs reads them with the inode
	xerr    error       // squashfs: why the root's xattrs did not read (Xattrs says it)
}

// entryOpener is go-diskfs's squashfs directory entry, which opens its
// file from the inode the listing read.
type entryOpener interface {
	Open() (filesystem.File, error)
}

// IsDir reports a directory.
func (s *Stat) IsDir() bool { return s.Mode&syscall.S_IFMT == syscall.S_IFDIR }

// IsRegular reports a regular file.
func (s *Stat) IsRegular() bool { return s.Mode&syscall.S_IFMT == syscall.S_IFREG }

// IsSymlink reports a symbolic link.
func (s *Stat) IsSymlink() bool { return s.Mode&syscall.S_IFMT == syscall.S_IFLNK }

// unixMode turns go-diskfs's io/fs mode into st_mode bits.
func unixMode(m iofs.FileMode) uint32 {
	u := uint32(m.Perm())
	switch {
	case m&iofs.ModeDir != 0:
		u |= syscall.S_IFDIR
	case m&iofs.ModeSymlink != 0:
		u |= syscall.S_IFLNK
	case m&iofs.ModeCharDevice != 0:
		u |= syscall.S_IFCHR
	case m&iofs.ModeDevice != 0:
		u |= syscall.S_IFBLK
	case m&iofs.ModeNamedPipe != 0:
		u |= syscall.S_IFIFO
	case m&iofs.ModeSocket != 0:
		u |= syscall.S_IFSOCK
	default:
		u |= syscall.S_IFREG
	}
	for _, b := range specialBits {
		if m&b.g != 0 {
			u |= b.u
		}
	}
	return u
}

// specialBits pairs io/fs's set-id and sticky bits with st_mode's.
var specialBits = [...]struct {
	g iofs.FileMode
	u uint32
}{{iofs.ModeSetuid, syscall.S_ISUID}, {iofs.ModeSetgid, syscall.S_ISGID}, {iofs.ModeSticky, syscall.S_ISVTX}}

// statOf converts one go-diskfs FileInfo, with what its format's Sys adds.
func statOf(fi iofs.FileInfo, name string) (*Stat, error) {
	s := &Stat{Name: name, Mode: unixMode(fi.Mode()), Size: fi.Size(), Nlink: 1, Mtime: fi.ModTime()}
	if fi.IsDir() { // go-diskfs's FAT FileInfo says IsDir without ModeDir
		s.Mode = s.Mode&^syscall.S_IFMT | syscall.S_IFDIR
	}
	if fi.Sys() == nil && s.Mode&0o7777 == 0 {
		// FAT keeps no permissions (go-diskfs gives none): as Linux's
		// vfat shows them with umask 022.
		s.Mode |= 0o755
	}
	switch x := fi.Sys().(type) {
	case *squashfs.StatT:
		s.UID, s.GID, s.Ino, s.Target = x.UID, x.GID, uint64(x.Inode), x.LinkTarget
	}
	if s.Size < 0 {
		return nil, corruptf("%s: size %d", name, s.Size)
	}
	if s.IsSymlink() {
		if len(s.Target) > maxName {
			return nil, corruptf("%s: symlink target of %d bytes", name, len(s.Target))
		}
		s.Size = int64(len(s.Target))
	}
	return s, nil
}

// fsPath is go-diskfs's spelling of a walked path: "." for the root,
// "a/b" below it.
func fsPath(real string) string {
	if real == "" {
		return "."
	}
	return real
}

// pathErr is an error of path p (as the user named it) with errno e.
func (im *Image) pathErr(op, p string, e error) error {
	return &iofs.PathError{Op: op, Path: im.where(p), Err: e}
}

// call is guard for a go-diskfs call whose every error means the image
// does not read as its format says: ErrCorrupt, naming the path.
func (im *Image) call(op, p string, fn func() error) error {
	err := im.guard(op, p, fn)
	if err == nil || errors.Is(err, ErrCorrupt) {
		return err
	}
	return im.pathErr(op, p, fmt.Errorf("%w: %w", ErrCorrupt, err))
}

// readDir lists directory real (a walked path without symlinks).
func (im *Image) readDir(p, real string) ([]*Stat, error) {
	if ents, ok := im.dirs[real]; ok {
		return ents, nil
	}
	ents, err := im.listDir(p, real)
	if err != nil {
		return nil, err
	}
	// The image never changes under us: a listing is kept, so a walk
	// reads each directory once (not once per path through it), up to
	// maxEntries entries kept in all.
	if im.cached += len(ents); im.dirs == nil || im.cached > maxEntries {
		im.dirs, im.cached = map[string][]*Stat{}, len(ents)
	}
	im.dirs[real] = ents
	return ents, nil
}

// listDir reads directory real from the image.
func (im *Image) listDir(p, real string) ([]*Stat, error) {
	if im.kind.isExt() { // read by ddfs alone (extdir.go says why)
		var out []*Stat
		err := im.guard("read directory", p, func() (err error) {
			out, err = im.listExt(p, real)
			return err
		})
		return out, err
	}
	if im.kind == ISO9660 {
		return im.listISO(p, real)
	}
	var ents []iofs.DirEntry
	err := im.call("read directory", p, func() (err error) {
		ents, err = im.fs.ReadDir(fsPath(real))
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(ents) > maxEntries {
		return nil, im.pathErr("read directory", p, corruptf("%d entries", len(ents)))
	}
	out := make([]*Stat, 0, len(ents))
	for _, e := range ents {
		name := e.Name()
		if name == "" || name == "." || name == ".." || len(name) > maxName || strings.ContainsAny(name, "/\x00") {
			return nil, im.pathErr("read directory", p, corruptf("entry named %q", name))
		}
		var st *Stat
		err := im.guard("stat", path.Join(p, name), func() error {
			fi, err := e.Info()
			if err != nil {
				return err
			}
			if st, err = statOf(fi, name); err != nil {
				return err
			}
			if x, ok := fi.Sys().(*squashfs.StatT); ok {
				if st.xattrs, err = im.sqXattrsOf(x.Xattrs); err == nil {
					err = im.sqPerm(st)
				}
				st.opener, _ = e.(entryOpener)
			}
			return err
		})
		if err != nil {
			return nil, im.pathErr("stat", path.Join(p, name), err)
		}
		out = append(out, st)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// subdir is directory real's entry in its parent's listing (the readers
// of our own find a directory by its inode or extent, not its path).
func (im *Image) subdir(p, real string) (*Stat, error) {
	parent, base := path.Split(real)
	ents, err := im.readDir(p, strings.TrimSuffix(parent, "/"))
	if err != nil {
		return nil, err
	}
	i := sort.Search(len(ents), func(i int) bool { return ents[i].Name >= base })
	if i == len(ents) || ents[i].Name != base || !ents[i].IsDir() {
		return nil, im.pathErr("read directory", p, syscall.ENOENT)
	}
	return ents[i], nil
}

// rootStat is the root directory's: go-diskfs's own where it gives one,
// else a 0755 directory.
func (im *Image) rootStat() *Stat {
	if im.root != nil { // asked on every walk: go-diskfs's Stat reads the root again
		c := *im.root
		return &c
	}
	st := &Stat{Name: "/", Mode: syscall.S_IFDIR | 0o755, Nlink: 2}
	defer func() { c := *st; im.root = &c }()
	if im.kind == ISO9660 {
		_ = im.guard("stat", "/", func() error {
			if s, err := im.isoRoot(); err == nil {
				st = s
			}
			return nil
		})
		return st
	}
	if im.kind.isExt() {
		_ = im.guard("stat", "/", func() error {
			x, err := im.extInodes()
			if err != nil {
				return err
			}
			if s, err := x.stat(extRootIno, "/"); err == nil && s.IsDir() {
				st = s
			}
			return nil
		})
		return st
	}
	_ = im.guard("stat", "/", func() error {
		fi, err := im.fs.Stat(".")
		if err != nil || fi == nil || !fi.IsDir() {
			return err
		}
		if s, err := statOf(fi, "/"); err == nil {
			st = s
			if x, ok := fi.Sys().(*squashfs.StatT); ok {
				st.xattrs, st.xerr = im.sqXattrsOf(x.Xattrs)
				_ = im.sqPerm(st) // a broken export table: go-diskfs's bits here; every entry's listing says why
			}
		}
		return nil
	})
	return st
}

// walk resolves image path p: the symlink-free path go-diskfs uses and
// its Stat. follow: a symlink as the last component is followed too.
func (im *Image) walk(op, p string, follow bool) (string, *Stat, error) {
	if !im.kind.IsFilesystem() {
		return "", nil, im.pathErr(op, p, ErrPartitionTable)
	}
	todo := splitPath(p)
	real, st := "", im.rootStat()
	hops, steps := 0, 0
	for len(todo) > 0 {
		if steps++; steps > maxSteps {
			return "", nil, im.pathErr(op, p, syscall.ENAMETOOLONG)
		}
		name := todo[0]
		todo = todo[1:]
		if name == ".." {
			real, st = path.Dir("/" + real)[1:], nil
			continue
		}
		if st != nil && !st.IsDir() {
			return "", nil, im.pathErr(op, p, syscall.ENOTDIR)
		}
		ents, err := im.readDir(p, real)
		if err != nil {
			return "", nil, err
		}
		i := sort.Search(len(ents), func(i int) bool { return ents[i].Name >= name })
		if i == len(ents) || ents[i].Name != name {
			return "", nil, im.pathErr(op, p, syscall.ENOENT)
		}
		e := ents[i]
		if e.IsSymlink() && (len(todo) > 0 || follow) {
			if hops++; hops > maxSymlinks {
				return "", nil, im.pathErr(op, p, syscall.ELOOP)
			}
			if strings.HasPrefix(e.Target, "/") {
				real = ""
			}
			todo = append(splitPath(e.Target), todo...)
			st = nil
			continue
		}
		real, st = path.Join(real, name), e
	}
	if st == nil { // ended on ".." or a followed link to a directory
		if real == "" {
			return real, im.rootStat(), nil
		}
		parent, base := path.Split(real)
		ents, err := im.readDir(p, strings.TrimSuffix(parent, "/"))
		if err != nil {
			return "", nil, err
		}
		for _, e := range ents {
			if e.Name == base {
				return real, e, nil
			}
		}
		return "", nil, im.pathErr(op, p, syscall.ENOENT)
	}
	return real, st, nil
}

func splitPath(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

// Lstat describes p without following a final symlink.
func (im *Image) Lstat(p string) (*Stat, error) {
	_, st, err := im.walk("lstat", p, false)
	return st, err
}

// Stat describes p, following symlinks.
func (im *Image) Stat(p string) (*Stat, error) {
	_, st, err := im.walk("stat", p, true)
	return st, err
}

// Readlink is the target of symlink p.
func (im *Image) Readlink(p string) (string, error) {
	st, err := im.Lstat(p)
	if err != nil {
		return "", err
	}
	if !st.IsSymlink() {
		return "", im.pathErr("readlink", p, syscall.EINVAL)
	}
	return st.Target, nil
}

// ReadDir lists directory p (symlinks followed), sorted bytewise by name.
func (im *Image) ReadDir(p string) ([]*Stat, error) {
	real, st, err := im.walk("read directory", p, true)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, im.pathErr("read directory", p, syscall.ENOTDIR)
	}
	return im.readDir(p, real)
}

// File is an open regular file of a foreign image.
type File struct {
	im   *Image
	p    string
	f    io.ReadCloser
	st   *Stat
	left int64
	sq   []sqCompressed // a squashfs file's compressed data blocks, checked as read (sqbomb.go)
}

// Open opens regular file p (symlinks followed) for reading.
func (im *Image) Open(p string) (*File, error) {
	real, st, err := im.walk("open", p, true)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, im.pathErr("open", p, syscall.EISDIR)
	}
	if !st.IsRegular() {
		return nil, im.pathErr("open", p, fmt.Errorf("%w: not a regular file", ErrUnsupported))
	}
	if im.kind.isExt() && st.Ino != 0 {
		// go-diskfs v1.9.4's ext4 File.Read maps a hole onto the blocks
		// before the next extent, and its Open walks the path from the
		// root again (a third of an import's time): ext files are read
		// through their own extent tree or block map (extmap.go).
		return im.openExt(p, st)
	}
	if st.isoData != 0 {
		return im.openISO(p, st)
	}
	var sq []sqCompressed
	if s := im.be.sniff; s != nil && im.sqm != nil { // squashfs: this file's compressed blocks get checked
		err := im.guard("open", p, func() (err error) {
			sq, err = im.sqm.dataBlocks(st.Ino, s.block)
			return err
		})
		if err != nil {
			return nil, im.pathErr("open", p, err)
		}
	}
	var f iofs.File
	err = im.call("open", p, func() (err error) {
		if st.opener != nil {
			f, err = st.opener.Open()
			return err
		}
		f, err = im.fs.Open(fsPath(real))
		return err
	})
	if err != nil {
		return nil, err
	}
	return &File{im: im, p: p, f: f, st: st, left: st.Size, sq: sq}, nil
}

// extInodes is the ext image's inode reader, made once.
func (im *Image) extInodes() (*extInodes, error) {
	if im.ext == nil {
		g, err := extGeometry(im.be.r, im.be.size)
		if err != nil {
			return nil, err
		}
		im.ext = &extInodes{r: im.be.r, g: g, tables: map[uint64]uint64{}}
	}
	return im.ext, nil
}

// openExt opens ext file p (inode st.Ino) through its own runs.
func (im *Image) openExt(p string, st *Stat) (*File, error) {
	x, err := im.extInodes()
	if err != nil {
		return nil, im.pathErr("open", p, err)
	}
	raw, err := x.inode(st.Ino)
	if err != nil {
		return nil, im.pathErr("open", p, err)
	}
	if binary.LittleEndian.Uint32(raw[0x20:])&extInlineDataFl != 0 {
		b, err := extInlineData(raw, st.Size)
		if err != nil {
			return nil, im.pathErr("open", p, fmt.Errorf("inode %d: %w", st.Ino, err))
		}
		return &File{im: im, p: p, f: &inlineReader{data: b, size: st.Size}, st: st, left: st.Size}, nil
	}
	runs, err := extRuns(im.be.r, x.g, st.Ino, raw, st.Size)
	if err != nil {
		return nil, im.pathErr("open", p, err)
	}
	return &File{im: im, p: p, f: &extReader{r: im.be.r, bs: x.g.bs, runs: runs, size: uint64(st.Size)}, st: st, left: st.Size}, nil
}

// isoBlock is ISO 9660's logical block size (bounds.go refuses others).
const isoBlock = 2048

// openISO reads ISO file p from the extent its listing's record names.
func (im *Image) openISO(p string, st *Stat) (*File, error) {
	at := st.isoData - 1
	if at < 0 {
		return nil, im.pathErr("open", p, fmt.Errorf("%w: a file in several extents (over 4 GiB)", ErrUnsupported))
	}
	if st.Size > im.be.size || at > im.be.size-st.Size {
		return nil, im.pathErr("open", p, corruptf("data at %d+%d outside the image", at, st.Size))
	}
	return &File{im: im, p: p, f: io.NopCloser(io.NewSectionReader(im.be.r, at, st.Size)), st: st, left: st.Size}, nil
}

// Stat is the file's.
func (f *File) Stat() *Stat { return f.st }

// Read reads the file's bytes: never more than its size, and a reader
// that stops short of it (or stops making progress) is ErrCorrupt.
func (f *File) Read(b []byte) (int, error) {
	if f.left == 0 {
		return 0, io.EOF
	}
	if int64(len(b)) > f.left {
		b = b[:f.left]
	}
	n, stalls := 0, 0
	for n < len(b) {
		var m int
		var rerr error
		err := f.im.guard("read", f.p, func() error {
			if s := f.im.be.sniff; s != nil {
				s.data = f.sq // this file's blocks, whatever file was read last
			}
			m, rerr = f.f.Read(b[n:])
			return nil
		})
		if err != nil {
			return n, err
		}
		if m < 0 || m > len(b)-n {
			return n, f.im.pathErr("read", f.p, corruptf("reader returned %d bytes", m))
		}
		n += m
		f.left -= int64(m)
		if rerr != nil && !(rerr == io.EOF && f.left == 0) {
			if rerr == io.EOF {
				rerr = fmt.Errorf("%w: file ends %d bytes short of its size %d", ErrCorrupt, f.left, f.st.Size)
			}
			return n, f.im.pathErr("read", f.p, rerr)
		}
		if m == 0 {
			if stalls++; stalls > 3 {
				return n, f.im.pathErr("read", f.p, fmt.Errorf("%w: %w", ErrCorrupt, io.ErrNoProgress))
			}
		}
		if f.left == 0 {
			break
		}
	}
	return n, nil
}

// Close releases the file.
func (f *File) Close() error { return f.f.Close() }
