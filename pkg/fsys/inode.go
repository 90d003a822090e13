package fsys

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/btree"
)

// Inode is an inode number with its item.
type Inode struct {
	Ino uint64
	format.InodeItem
}

// IsDir reports a directory.
func (in *Inode) IsDir() bool { return in.Mode&syscall.S_IFMT == syscall.S_IFDIR }

// IsRegular reports a regular file.
func (in *Inode) IsRegular() bool { return in.Mode&syscall.S_IFMT == syscall.S_IFREG }

// IsSymlink reports a symbolic link.
func (in *Inode) IsSymlink() bool { return in.Mode&syscall.S_IFMT == syscall.S_IFLNK }

func inodeKey(ino uint64) format.Key { return format.Key{ObjectID: ino, Type: format.InodeItemKey} }

// Inode reads inode ino.
func (f *FS) Inode(ino uint64) (*Inode, error) {
	b, err := f.rtree(format.FSTree).Get(inodeKey(ino))
	if errors.Is(err, btree.ErrNotFound) {
		return nil, fmt.Errorf("inode %d: %w", ino, syscall.ENOENT)
	}
	if err != nil {
		return nil, fmt.Errorf("inode %d: %w", ino, err)
	}
	item, err := format.UnmarshalInodeItem(b)
	if err != nil {
		return nil, fmt.Errorf("inode %d: %w", ino, err)
	}
	return &Inode{Ino: ino, InodeItem: *item}, nil
}

// putInode writes an inode back.
func (f *FS) putInode(in *Inode) error {
	t, err := f.tree()
	if err != nil {
		return err
	}
	return t.Put(inodeKey(in.Ino), format.MarshalInodeItem(&in.InodeItem))
}

// Attr are the attributes of a new inode.
type Attr struct {
	Mode       uint32 // with type bits
	UID, GID   uint32
	Rdev       uint64
	Atime      format.Timespec
	Mtime      format.Timespec
	Ctime      format.Timespec
	Btime      format.Timespec
	HasTimes   bool // use the times above instead of now
	InheritDir *Inode
	symlink    bool // set by Symlink, which writes the target
}

// newInode creates an inode item (nlink 0; the caller links it).
func (f *FS) newInode(a Attr) (*Inode, error) {
	tx, err := f.txn()
	if err != nil {
		return nil, err
	}
	now := f.Now()
	in := &Inode{Ino: f.nextIno}
	in.Generation = tx.Generation()
	in.Mode, in.UID, in.GID = a.Mode, a.UID, a.GID
	if t := a.Mode & syscall.S_IFMT; t == syscall.S_IFCHR || t == syscall.S_IFBLK {
		in.Rdev = a.Rdev // as mknod(2), a device number only for a device (fsck's RDEV)
	}
	in.Atime, in.Mtime, in.Ctime, in.Btime = now, now, now, now
	if a.HasTimes {
		in.Atime, in.Mtime, in.Ctime, in.Btime = a.Atime, a.Mtime, a.Ctime, a.Btime
	}
	if in.IsDir() {
		in.Seq = 2 // FORMAT.md: directory index sequence starts at 2
	}
	if p := a.InheritDir; p != nil {
		// Properties pass from a directory to new children.
		in.Compression, in.Dedupe, in.DataTier = p.Compression, p.Dedupe, p.DataTier
	}
	f.nextIno++
	f.noteUnloggable(in.Ino)
	return in, nil
}

// InitRoot creates the root directory (mkfs).
func (f *FS) InitRoot(a Attr) error {
	if _, err := f.Inode(format.RootDirIno); err == nil {
		return fmt.Errorf("root directory exists: %w", syscall.EEXIST)
	}
	a.Mode = a.Mode&^syscall.S_IFMT | syscall.S_IFDIR
	in, err := f.newInode(a)
	if err != nil {
		return err
	}
	f.nextIno--
	in.Ino = format.RootDirIno
	in.Nlink = 2
	return f.putInode(in)
}
