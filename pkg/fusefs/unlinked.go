package fusefs

import (
	"errors"
	"strconv"
	"syscall"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/fsys"
)

// An unlinked file that is still open must stay readable and writable
// until its last close (POSIX). The format has no orphan list, so, as
// NFS's "silly rename" does, its last name moves to a hidden directory
// of the root instead of going, and it is deleted at its last release.
// The image stays fsck-clean at every commit; a crash leaves the files
// there, and the next read-write mount deletes them.
const hiddenDir = ".ddfs-unlinked"

// hidden reports a name the mount does not show (the root's hiddenDir).
func hidden(dir uint64, name string) bool {
	return dir == format.RootDirIno && name == hiddenDir
}

// opened counts an open of ino (under mu).
func (s *Server) opened(ino uint64) {
	s.mu.Lock()
	s.opens[ino]++
	s.mu.Unlock()
}

// released ends an open of ino; the last one deletes a hidden file.
func (s *Server) released(ino uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opens[ino]--; s.opens[ino] > 0 {
		return
	}
	delete(s.opens, ino)
	name, ok := s.unlinked[ino]
	if !ok || s.broken != nil || s.closed {
		return
	}
	delete(s.unlinked, ino)
	s.writeLocked("release", func() error { return s.dropHidden(name) })
}

// keepIfOpen moves name of dir (a non-directory with one link, open) to
// the hidden directory and reports whether it did: the caller then
// unlinks nothing.
func (s *Server) keepIfOpen(dir uint64, name string) (bool, error) {
	in, err := s.f.LookupAt(dir, name)
	if err != nil || in.IsDir() || in.Nlink != 1 || s.opens[in.Ino] == 0 {
		return false, nil // the unlink itself reports any error
	}
	hid, err := s.f.LookupAt(format.RootDirIno, hiddenDir)
	if errors.Is(err, syscall.ENOENT) {
		hid, err = s.f.CreateAt(format.RootDirIno, hiddenDir, fsys.Attr{Mode: syscall.S_IFDIR | 0o700})
	}
	if err != nil {
		return false, err
	}
	hname := strconv.FormatUint(in.Ino, 10)
	if err := s.f.RenameAt(dir, name, hid.Ino, hname, 0); err != nil {
		return false, err
	}
	s.unlinked[in.Ino] = hname
	return true, nil
}

// dropHidden deletes one hidden file, and the directory once empty.
func (s *Server) dropHidden(name string) error {
	hid, err := s.f.LookupAt(format.RootDirIno, hiddenDir)
	if err != nil {
		return err
	}
	if err := s.f.UnlinkAt(hid.Ino, name, false); err != nil {
		return err
	}
	if err := s.f.UnlinkAt(format.RootDirIno, hiddenDir, true); err != nil && !errors.Is(err, syscall.ENOTEMPTY) {
		return err
	}
	return nil
}

// dropAllHidden deletes what a crash (or an unmount with files still
// open) left in the hidden directory.
func (s *Server) dropAllHidden() error {
	hid, err := s.f.LookupAt(format.RootDirIno, hiddenDir)
	if errors.Is(err, syscall.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	ents, err := s.f.List(hid)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := s.f.UnlinkAt(hid.Ino, e.Name, false); err != nil {
			return err
		}
	}
	return s.f.UnlinkAt(format.RootDirIno, hiddenDir, true)
}
