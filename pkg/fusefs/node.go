package fusefs

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/ddfs/ddfs/pkg/fsys"
)

// node is one inode as the kernel knows it; it holds only the inode
// number (StableAttr.Ino): every call reads the inode afresh.
type node struct {
	fs.Inode
	s *Server
	// readIn is the inode as of Server.epoch readEpoch, for Read alone
	// (fsys.ReadAt changes nothing in it): a 4K read looked it up each
	// time, a tree descent and an allocation.
	readIn    *fsys.Inode
	readEpoch uint64
}

func (n *node) ino() uint64 { return n.StableAttr().Ino }

// load reads this node's inode (ESTALE once it is gone: an unlinked
// file still open).
func (n *node) load() (*fsys.Inode, error) {
	in, err := n.s.f.Inode(n.ino())
	if errnoOf(err) == syscall.ENOENT {
		return nil, fmt.Errorf("%w: %w", syscall.ESTALE, err)
	}
	return in, err
}

// readInode is load for Read: the cached inode while nothing changed.
func (n *node) readInode() (*fsys.Inode, error) {
	if n.readIn != nil && n.readEpoch == n.s.epoch {
		return n.readIn, nil
	}
	in, err := n.load()
	if err == nil {
		n.readIn, n.readEpoch = in, n.s.epoch
	}
	return in, err
}

func fillAttr(in *fsys.Inode, a *fuse.Attr) {
	a.Ino = in.Ino
	a.Size = in.Size
	a.Blocks = (in.NBytes + 511) / 512
	a.Atime, a.Atimensec = uint64(in.Atime.Sec), in.Atime.Nsec
	a.Mtime, a.Mtimensec = uint64(in.Mtime.Sec), in.Mtime.Nsec
	a.Ctime, a.Ctimensec = uint64(in.Ctime.Sec), in.Ctime.Nsec
	a.Mode = in.Mode
	a.Nlink = in.Nlink
	a.Uid, a.Gid = in.UID, in.GID
	a.Rdev = uint32(in.Rdev)
	a.Blksize = 4096
}

// child is the kernel's node for inode in, a new entry of n.
func (n *node) child(ctx context.Context, in *fsys.Inode, out *fuse.EntryOut) *fs.Inode {
	fillAttr(in, &out.Attr)
	out.Generation = in.Generation
	return n.NewInode(ctx, &node{s: n.s}, fs.StableAttr{Mode: in.Mode & syscall.S_IFMT, Ino: in.Ino, Gen: in.Generation})
}

// newAttr is a new inode's owner and mode: the caller's, with the group
// of a set-group-ID directory (which passes the bit on to directories).
func (n *node) newAttr(ctx context.Context, mode uint32) (fsys.Attr, error) {
	a := fsys.Attr{Mode: mode}
	if c, ok := ctx.(*fuse.Context); ok {
		a.UID, a.GID = c.Uid, c.Gid
	}
	dir, err := n.load()
	if err != nil {
		return a, err
	}
	if dir.Mode&syscall.S_ISGID != 0 {
		a.GID = dir.GID
		if mode&syscall.S_IFMT == syscall.S_IFDIR {
			a.Mode |= syscall.S_ISGID
		}
	}
	return a, nil
}

var (
	_ fs.NodeGetattrer  = (*node)(nil)
	_ fs.NodeSetattrer  = (*node)(nil)
	_ fs.NodeLookuper   = (*node)(nil)
	_ fs.NodeReaddirer  = (*node)(nil)
	_ fs.NodeCreater    = (*node)(nil)
	_ fs.NodeMkdirer    = (*node)(nil)
	_ fs.NodeMknoder    = (*node)(nil)
	_ fs.NodeSymlinker  = (*node)(nil)
	_ fs.NodeLinker     = (*node)(nil)
	_ fs.NodeUnlinker   = (*node)(nil)
	_ fs.NodeRmdirer    = (*node)(nil)
	_ fs.NodeRenamer    = (*node)(nil)
	_ fs.NodeReadlinker = (*node)(nil)
)

func (n *node) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	return n.s.read("getattr", func() error {
		in, err := n.load()
		if err == nil {
			fillAttr(in, &out.Attr)
			if _, gone := n.s.unlinked[in.Ino]; gone {
				out.Nlink = 0
			}
		}
		return err
	})
}

func (n *node) Setattr(ctx context.Context, fh fs.FileHandle, sa *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	return n.s.write("setattr", func() error {
		in, err := n.load()
		if err != nil {
			return err
		}
		if size, ok := sa.GetSize(); ok {
			if err := n.s.f.Truncate(in, size); err != nil {
				return err
			}
		}
		var a fsys.SetAttr
		change := false
		if m, ok := sa.GetMode(); ok {
			a.Mode, change = &m, true
		}
		if sa.Valid&fuse.FATTR_KILL_SUIDGID != 0 {
			m := in.Mode
			if a.Mode != nil {
				m = *a.Mode
			}
			var caller fuse.Caller
			if c, ok := ctx.(*fuse.Context); ok {
				caller = c.Caller
			}
			if k := killedMode(m, in.GID, caller); k != m {
				a.Mode, change = &k, true
			}
		}
		if u, ok := sa.GetUID(); ok {
			a.UID, change = &u, true
		}
		if g, ok := sa.GetGID(); ok {
			a.GID, change = &g, true
		}
		if t, ok := sa.GetATime(); ok {
			ts := fsys.TimespecOf(t)
			a.Atime, change = &ts, true
		}
		if t, ok := sa.GetMTime(); ok {
			ts := fsys.TimespecOf(t)
			a.Mtime, change = &ts, true
		}
		if change {
			if err := n.s.f.SetattrInode(in, a); err != nil {
				return err
			}
		}
		fillAttr(in, &out.Attr)
		return nil
	})
}

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	var ch *fs.Inode
	errno := n.s.read("lookup "+name, func() error {
		if hidden(n.ino(), name) {
			return syscall.ENOENT
		}
		in, err := n.s.f.LookupAt(n.ino(), name)
		if err == nil {
			ch = n.child(ctx, in, out)
		}
		return err
	})
	return ch, errno
}

func (n *node) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	var ents []fuse.DirEntry
	errno := n.s.read("readdir", func() error {
		dir, err := n.load()
		if err != nil {
			return err
		}
		// "." and ".." first, as readdir(3) callers (ls -a, find) expect.
		up := dir.Ino
		if _, p := n.Parent(); p != nil {
			up = p.StableAttr().Ino
		}
		ents = []fuse.DirEntry{{Name: ".", Ino: dir.Ino, Mode: syscall.S_IFDIR}, {Name: "..", Ino: up, Mode: syscall.S_IFDIR}}
		// A corrupt entry is left out (and logged); the good ones list.
		err = n.s.f.ReadDir(dir, func(e fsys.DirEntry) bool {
			if hidden(dir.Ino, e.Name) {
				return true
			}
			ents = append(ents, fuse.DirEntry{Name: e.Name, Ino: e.Ino, Mode: e.Type.Mode()})
			return true
		})
		if errors.As(err, new(*fsys.EntryError)) {
			n.s.opt.Log.Printf("readdir of inode %d: %v (listed the rest)", dir.Ino, err)
			return nil
		}
		return err
	})
	if errno != 0 {
		return nil, errno
	}
	return fs.NewListDirStream(ents), 0
}

// create runs mk (which makes the new inode) as a change and returns
// the kernel's node for it.
func (n *node) create(ctx context.Context, what string, mode uint32, out *fuse.EntryOut, mk func(a fsys.Attr) (*fsys.Inode, error)) (*fs.Inode, syscall.Errno) {
	var ch *fs.Inode
	errno := n.s.write(what, func() error {
		if err := n.s.haveSpace(0); err != nil {
			return err
		}
		a, err := n.newAttr(ctx, mode)
		if err != nil {
			return err
		}
		in, err := mk(a)
		if err == nil {
			ch = n.child(ctx, in, out)
		}
		return err
	})
	return ch, errno
}

func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	ch, errno := n.create(ctx, "create "+name, mode, out, func(a fsys.Attr) (*fsys.Inode, error) {
		in, err := n.s.f.CreateAt(n.ino(), name, a)
		if err == nil {
			n.s.opens[in.Ino]++ // create opens it
		}
		return in, err
	})
	if errno != 0 {
		return nil, nil, 0, errno
	}
	return ch, &handle{}, 0, 0
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.create(ctx, "mkdir "+name, mode&^syscall.S_IFMT|syscall.S_IFDIR, out, func(a fsys.Attr) (*fsys.Inode, error) {
		return n.s.f.CreateAt(n.ino(), name, a)
	})
}

func (n *node) Mknod(ctx context.Context, name string, mode, dev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.create(ctx, "mknod "+name, mode, out, func(a fsys.Attr) (*fsys.Inode, error) {
		a.Rdev = uint64(dev)
		return n.s.f.CreateAt(n.ino(), name, a)
	})
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.create(ctx, "symlink "+name, syscall.S_IFLNK|0o777, out, func(a fsys.Attr) (*fsys.Inode, error) {
		return n.s.f.SymlinkAt(n.ino(), name, target, a)
	})
}

func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	var ch *fs.Inode
	errno := n.s.write("link "+name, func() error {
		in, err := n.s.f.LinkAt(target.EmbeddedInode().StableAttr().Ino, n.ino(), name)
		if err == nil {
			ch = n.child(ctx, in, out)
		}
		return err
	})
	return ch, errno
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	return n.s.write("unlink "+name, func() error {
		if kept, err := n.s.keepIfOpen(n.ino(), name); kept || err != nil {
			return err
		}
		return n.s.f.UnlinkAt(n.ino(), name, false)
	})
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	return n.s.write("rmdir "+name, func() error { return n.s.f.UnlinkAt(n.ino(), name, true) })
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	to := newParent.EmbeddedInode().StableAttr().Ino
	return n.s.write("rename "+name, func() error {
		// A file renamed over an open one: that one lives on hidden.
		if src, err := n.s.f.LookupAt(n.ino(), name); flags == 0 && err == nil && !src.IsDir() {
			if dst, err := n.s.f.LookupAt(to, newName); err == nil && dst.Ino != src.Ino {
				if _, err := n.s.keepIfOpen(to, newName); err != nil {
					return err
				}
			}
		}
		return n.s.f.RenameAt(n.ino(), name, to, newName, flags)
	})
}

func (n *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	var t string
	errno := n.s.read("readlink", func() error {
		in, err := n.load()
		if err == nil {
			t, err = n.s.f.ReadlinkInode(in)
		}
		return err
	})
	return []byte(t), errno
}
