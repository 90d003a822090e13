package fusefs

import (
	"context"
	"io"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/ddfs/ddfs/pkg/fsys"
)

var (
	_ fs.NodeOpener        = (*node)(nil)
	_ fs.NodeReleaser      = (*node)(nil)
	_ fs.NodeReader        = (*node)(nil)
	_ fs.NodeWriter        = (*node)(nil)
	_ fs.NodeFsyncer       = (*node)(nil)
	_ fs.NodeAllocater     = (*node)(nil)
	_ fs.NodeLseeker       = (*node)(nil)
	_ fs.NodeStatfser      = (*node)(nil)
	_ fs.NodeGetxattrer    = (*node)(nil)
	_ fs.NodeSetxattrer    = (*node)(nil)
	_ fs.NodeListxattrer   = (*node)(nil)
	_ fs.NodeRemovexattrer = (*node)(nil)
)

// handle is an open file: reads and writes go by inode number, but
// go-fuse calls Release only for an open that returned a handle.
type handle struct{}

// Open counts the open (see unlinked.go).
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if n.s.opt.ReadOnly && flags&(syscall.O_WRONLY|syscall.O_RDWR|syscall.O_TRUNC) != 0 {
		return nil, 0, syscall.EROFS
	}
	n.s.opened(n.ino())
	return &handle{}, 0, 0
}

// Release ends an open: the last one of an unlinked file deletes it.
func (n *node) Release(ctx context.Context, fh fs.FileHandle) syscall.Errno {
	n.s.released(n.ino())
	return 0
}

func (n *node) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	var got int
	errno := n.s.read("read", func() error {
		in, err := n.readInode()
		if err != nil {
			return err
		}
		got, err = n.s.f.ReadAt(in, dest, uint64(off))
		if err == io.EOF {
			err = nil
		}
		return err
	})
	if errno != 0 {
		return nil, errno
	}
	return fuse.ReadResultData(dest[:got]), 0
}

func (n *node) Write(ctx context.Context, fh fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	errno := n.s.write("write", func() error {
		if err := n.s.haveSpace(uint64(len(data))); err != nil {
			return err
		}
		in, err := n.load()
		if err != nil {
			return err
		}
		return n.s.f.WriteAt(in, data, uint64(off))
	})
	if errno != 0 {
		return 0, errno
	}
	return uint32(len(data)), 0
}

// Fsync (fsync, fdatasync) of a regular file writes the fsync log when
// it can say what changed (fsys.Fsync), else commits; an fsync of a
// directory commits the running transaction.
func (n *node) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	n.s.mu.Lock()
	defer n.s.mu.Unlock()
	if n.s.broken != nil {
		return syscall.EIO
	}
	in, err := n.load()
	if err != nil || !in.IsRegular() || n.s.opt.ReadOnly || n.s.closed {
		return n.s.commitLocked("fsync")
	}
	n.s.epoch++ // pending data writes land
	if err := n.s.f.Fsync(in); err != nil {
		return n.s.abort("fsync", err)
	}
	return 0
}

// fallocate(2) modes.
const (
	fallocKeepSize  = 0x01
	fallocPunchHole = 0x02
	fallocZeroRange = 0x10
)

// Allocate: punching a hole and zeroing a range free the bytes (they read
// as zeros); plain allocation checks the space and sets the size but
// reserves nothing (copy-on-write gives no overwrite-in-place to
// reserve for). Collapse, insert and unshare are EOPNOTSUPP.
func (n *node) Allocate(ctx context.Context, fh fs.FileHandle, off, size uint64, mode uint32) syscall.Errno {
	if mode&^(fallocKeepSize|fallocPunchHole|fallocZeroRange) != 0 ||
		mode&fallocPunchHole != 0 && mode&fallocKeepSize == 0 || mode&fallocPunchHole != 0 && mode&fallocZeroRange != 0 {
		return syscall.EOPNOTSUPP
	}
	return n.s.write("fallocate", func() error {
		in, err := n.load()
		if err != nil {
			return err
		}
		if !in.IsRegular() {
			return syscall.ENODEV
		}
		if mode&(fallocPunchHole|fallocZeroRange) != 0 {
			if err := n.s.f.PunchHole(in, off, size); err != nil {
				return err
			}
		} else if err := n.s.haveSpace(size); err != nil {
			return err
		}
		if mode&fallocKeepSize == 0 && off+size > in.Size {
			return n.s.f.Truncate(in, off+size)
		}
		return nil
	})
}

// SEEK_DATA and SEEK_HOLE whences (lseek(2)).
const (
	seekData = 3
	seekHole = 4
)

// Lseek finds data and holes from the file's extents (fsys.DataRanges);
// zero sectors that were written are holes too.
func (n *node) Lseek(ctx context.Context, fh fs.FileHandle, off uint64, whence uint32) (uint64, syscall.Errno) {
	var pos uint64
	errno := n.s.read("lseek", func() error {
		in, err := n.load()
		if err != nil {
			return err
		}
		if off >= in.Size {
			return syscall.ENXIO
		}
		rs, err := n.s.f.DataRanges(in)
		if err != nil {
			return err
		}
		pos, err = seek(rs, in.Size, off, whence)
		return err
	})
	return pos, errno
}

// seek answers SEEK_DATA or SEEK_HOLE at off (< size) from the data ranges.
func seek(rs []fsys.Range, size, off uint64, whence uint32) (uint64, error) {
	switch whence {
	case seekData:
		for _, r := range rs {
			if r.Off+r.Len > off {
				return max(off, r.Off), nil
			}
		}
		return 0, syscall.ENXIO
	case seekHole:
		pos := off
		for _, r := range rs {
			if r.Off > pos {
				break
			}
			pos = max(pos, r.Off+r.Len)
		}
		return min(pos, size), nil
	}
	return 0, syscall.EINVAL
}

func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	n.s.mu.Lock()
	defer n.s.mu.Unlock()
	st := n.s.f.Statfs()
	bs := max(st.BlockSize, 512)
	out.Bsize, out.Frsize = uint32(bs), uint32(bs)
	// Available is what writes may still take (haveSpace's reserve kept).
	out.Blocks, out.Bfree = st.TotalBytes/bs, st.FreeBytes/bs
	out.Bavail = (st.FreeBytes - min(st.FreeBytes, reserve(st))) / bs
	// Inodes take no fixed table: as many more as free space holds.
	out.Ffree = st.FreeBytes / 256
	out.Files = st.Inodes + out.Ffree
	out.NameLen = 255
	return 0
}

// Getxattr: a POSIX ACL name is absent, as Listxattr leaves it out and
// Setxattr refuses it (fsys.ErrNoACL); one already in the image is ignored.
func (n *node) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	if fsys.IsACLXattr(attr) {
		return 0, syscall.ENODATA
	}
	var v []byte
	errno := n.s.read("getxattr", func() error {
		in, err := n.load()
		if err == nil {
			v, err = n.s.f.GetXattr(in, attr)
		}
		return err
	})
	if errno != 0 {
		return 0, errno
	}
	if len(dest) < len(v) {
		return uint32(len(v)), syscall.ERANGE
	}
	return uint32(copy(dest, v)), 0
}

// setxattr(2) flags.
const (
	xattrCreate  = 1
	xattrReplace = 2
)

func (n *node) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	if fsys.IsACLXattr(attr) {
		return syscall.EOPNOTSUPP
	}
	return n.s.write("setxattr", func() error {
		if err := n.s.haveSpace(uint64(len(data))); err != nil {
			return err
		}
		in, err := n.load()
		if err != nil {
			return err
		}
		_, err = n.s.f.GetXattr(in, attr)
		switch {
		case err == nil && flags&xattrCreate != 0:
			return syscall.EEXIST
		case errnoOf(err) == syscall.ENODATA && flags&xattrReplace != 0:
			return err
		case err != nil && errnoOf(err) != syscall.ENODATA:
			return err
		}
		return n.s.f.SetXattr(in, attr, data)
	})
}

func (n *node) Removexattr(ctx context.Context, attr string) syscall.Errno {
	return n.s.write("removexattr", func() error {
		in, err := n.load()
		if err == nil {
			err = n.s.f.RemoveXattr(in, attr)
		}
		return err
	})
}

func (n *node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	var names strings.Builder
	errno := n.s.read("listxattr", func() error {
		in, err := n.load()
		if err != nil {
			return err
		}
		xs, err := n.s.f.ListXattrs(in)
		for _, x := range xs {
			if !fsys.IsACLXattr(x.Name) {
				names.WriteString(x.Name)
				names.WriteByte(0)
			}
		}
		return err
	})
	if errno != 0 {
		return 0, errno
	}
	if len(dest) < names.Len() {
		return uint32(names.Len()), syscall.ERANGE
	}
	return uint32(copy(dest, names.String())), 0
}
