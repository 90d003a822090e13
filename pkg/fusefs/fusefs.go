// Package fusefs serves a ddfs filesystem (pkg/fsys) to the kernel over
// FUSE (github.com/hanwen/go-fuse/v2, its node API), so everyday tools
// and foreign test suites can use an image as a mounted directory.
//
// pkg/fsys is not safe for concurrent use, and go-fuse answers requests
// on many goroutines: every operation holds Server.mu for its whole run,
// so the filesystem sees one call at a time (the commit timer too).
//
// Durability: fsync and fsyncdir commit the running transaction before
// they return; otherwise a timer commits every Options.Commit, and
// unmounting commits. A killed server leaves the image at its last
// commit. A failure that may leave the running transaction half-changed
// (no space found mid-write, an I/O error) aborts it, as btrfs does: the
// image keeps its last commit and the mount turns read-only (EROFS).
package fusefs

import (
	"errors"
	"fmt"
	"io"
	"log"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
)

// Options tune a mount.
type Options struct {
	ReadOnly   bool
	AllowOther bool
	// Commit is the longest time a change waits for its commit (0: 5 s).
	Commit time.Duration
	// Name shows as the mount's source in /proc/mounts.
	Name  string
	Debug bool
	// ReadAheadKB is the kernel's read-ahead window for the mount, set
	// when the server may (root; 0: 4096, negative: the kernel's 128).
	ReadAheadKB int
	// Log receives the errors no caller sees in full (nil: discarded).
	Log *log.Logger
}

// Server is one mounted filesystem.
type Server struct {
	mu     sync.Mutex
	f      *fsys.FS
	opt    Options
	srv    *fuse.Server
	broken error // set when a transaction was aborted: no more changes
	stop   chan struct{}
	done   chan struct{}
	closed bool
	// opens counts open files by inode; unlinked names the hidden ones
	// (see unlinked.go).
	opens map[uint64]int
	calls uint64 // reads and writes served (see callDone)
	// epoch moves on every change, commit and abort: an inode a node
	// cached for reads (readInode) is good while epoch stays where it was.
	epoch    uint64
	unlinked map[uint64]string
}

// Mount serves f at dir until it is unmounted (Wait), committing on a
// timer. The caller keeps f open until Wait returns, then Closes it.
func Mount(dir string, f *fsys.FS, opt Options) (*Server, error) {
	if opt.Commit <= 0 {
		opt.Commit = 5 * time.Second
	}
	if opt.Log == nil {
		opt.Log = log.New(io.Discard, "", 0)
	}
	if err := checkRoot(f); err != nil {
		return nil, err
	}
	s := &Server{f: f, opt: opt, stop: make(chan struct{}), done: make(chan struct{}),
		opens: map[uint64]int{}, unlinked: map[uint64]string{}}
	if !opt.ReadOnly {
		if e := s.write("delete the files a crash left unlinked", s.dropAllHidden); e != 0 {
			return nil, fmt.Errorf("%s: %w", hiddenDir, e)
		}
	}
	root := &node{s: s}
	// The kernel caches names and attributes briefly: every change
	// comes through this server, which tells the kernel what it changed.
	ttl := time.Second
	mo := fuse.MountOptions{
		AllowOther:   opt.AllowOther,
		FsName:       opt.Name,
		Name:         "ddfs",
		Debug:        opt.Debug,
		MaxWrite:     1 << 20,
		MaxReadAhead: 1 << 20, // sequential reads in 1 MiB requests, not 128 KiB
		// Reads answer with bytes, never a file descriptor: go-fuse's
		// splice attempt would only cost a pipe's syscalls per read.
		DisableSplice: true,
		// The kernel checks permissions from the modes we report, as a
		// disk filesystem does (fsys checks none).
		Options:                  []string{"default_permissions"},
		DisableXAttrs:            false,
		EnableLocks:              false,
		ExplicitDataCacheControl: false,
	}
	if opt.ReadOnly {
		mo.Options = append(mo.Options, "ro")
	}
	fo := &fs.Options{
		MountOptions:    mo,
		EntryTimeout:    &ttl,
		AttrTimeout:     &ttl,
		NullPermissions: true, // a mode of 000 stays 000
		RootStableAttr:  &fs.StableAttr{Ino: format.RootDirIno},
	}
	fo.ExtraCapabilities = capKillprivV2
	readers := goFuseReaders()
	srv, err := fuse.NewServer(killprivFS{fs.NewNodeFS(root, fo)}, dir, &fo.MountOptions)
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	spareProcs(readers)
	go srv.Serve()
	if err := waitMount(srv.WaitMount, 45*time.Second); err != nil {
		srv.Unmount()
		return nil, fmt.Errorf("mount %s: %w", dir, err)
	}
	s.srv = srv
	if opt.ReadAheadKB == 0 {
		opt.ReadAheadKB = defaultReadAheadKB
	}
	if opt.ReadAheadKB > 0 {
		if err := setReadAhead(dir, opt.ReadAheadKB); err != nil && opt.Debug {
			opt.Log.Printf("%v (the kernel's 128 KiB stays)", err)
		}
	}
	go s.commitLoop()
	return s, nil
}

// checkRoot refuses a root inode that is not a directory (as fsck flags
// it): the kernel would look names up in a file.
func checkRoot(f *fsys.FS) error {
	in, err := f.Inode(format.RootDirIno)
	if err != nil {
		return fmt.Errorf("root inode: %w", err)
	}
	if !in.IsDir() {
		return fmt.Errorf("root inode %d has mode %#o, not a directory: %w", in.Ino, in.Mode, format.ErrCorrupt)
	}
	return nil
}

// Wait blocks until the filesystem is unmounted (fusermount3 -u, or
// Unmount), then stops the commit timer and commits what is left.
func (s *Server) Wait() error {
	s.srv.Wait()
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.opt.ReadOnly && s.broken == nil {
		s.writeLocked("delete the unlinked files", s.dropAllHidden)
	}
	s.closed = true
	if s.broken != nil {
		return s.broken
	}
	return s.f.Sync()
}

// Unmount asks the kernel to unmount (Ctrl-C of a foreground mount).
func (s *Server) Unmount() error { return s.srv.Unmount() }

func (s *Server) commitLoop() {
	defer close(s.done)
	t := time.NewTicker(s.opt.Commit)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.mu.Lock()
			s.commitLocked("timer commit")
			s.mu.Unlock()
		}
	}
}

// commitLocked commits the running transaction; a failed commit
// breaks the mount.
func (s *Server) commitLocked(what string) syscall.Errno {
	s.epoch++ // a commit may finish pending data writes
	if s.broken != nil || s.opt.ReadOnly || s.closed {
		return 0
	}
	if err := s.f.Sync(); err != nil {
		return s.abort(what, err)
	}
	return 0
}

// abort drops the running transaction after a failure that may have
// left it half-changed, and refuses changes from then on.
func (s *Server) abort(what string, err error) syscall.Errno {
	s.f.Abort()
	s.epoch++ // the tree is back at the last commit
	s.broken = fmt.Errorf("%s: %w", what, err)
	s.opt.Log.Printf("%s: %v: transaction aborted; the image keeps its last commit and the mount is read-only from now on", what, err)
	return errnoOf(err)
}

// preconditions are the errnos fsys returns before changing anything.
var preconditions = map[syscall.Errno]bool{
	syscall.ENOENT: true, syscall.EEXIST: true, syscall.ENOTEMPTY: true, syscall.EISDIR: true,
	syscall.ENOTDIR: true, syscall.EINVAL: true, syscall.ELOOP: true, syscall.ENAMETOOLONG: true,
	syscall.EPERM: true, syscall.EFBIG: true, syscall.E2BIG: true, syscall.ENODATA: true,
	syscall.ERANGE: true, syscall.EMLINK: true, syscall.ESTALE: true,
	syscall.ENXIO: true, syscall.EOPNOTSUPP: true, syscall.ENODEV: true,
}

// errNoRoom is the ENOSPC of a write refused before it changed anything.
var errNoRoom = fmt.Errorf("less free space than the reserve: %w", syscall.ENOSPC)

// errnoOf maps an fsys error to the errno the caller gets.
func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0 // before errno's declaration: errors.As moves it to the heap
	}
	var errno syscall.Errno
	switch {
	case errors.Is(err, store.ErrNoSpace):
		return syscall.ENOSPC
	case errors.Is(err, store.ErrReadOnly):
		return syscall.EROFS
	case errors.Is(err, format.ErrCorrupt):
		return syscall.EIO
	case errors.As(err, &errno):
		return errno
	}
	return syscall.EIO
}

// read runs a call that changes nothing: an error other than a
// precondition (corruption, I/O) is logged and returned as EIO for this
// call only; the rest of the tree stays usable.
func (s *Server) read(what string, fn func() error) syscall.Errno {
	s.mu.Lock()
	e := s.readLocked(what, fn)
	s.callDone()
	return e
}

func (s *Server) readLocked(what string, fn func() error) syscall.Errno {
	err := fn()
	e := errnoOf(err)
	if err != nil && !preconditions[e] {
		s.opt.Log.Printf("%s: %v", what, err)
	}
	return e
}

// write runs a call that changes the filesystem: refused on a read-only
// or broken mount; a precondition failure changed nothing, any other
// failure aborts the transaction. A whole call done, the batch may
// commit (fsys.MaybeCommit).
func (s *Server) write(what string, fn func() error) syscall.Errno {
	s.mu.Lock()
	e := s.writeLocked(what, fn)
	s.callDone()
	return e
}

func (s *Server) writeLocked(what string, fn func() error) syscall.Errno {
	if s.opt.ReadOnly || s.broken != nil || s.closed {
		return syscall.EROFS
	}
	s.epoch++
	err := fn()
	if e := errnoOf(err); err != nil {
		if preconditions[e] || errors.Is(err, errNoRoom) {
			return e
		}
		return s.abort(what, err)
	}
	if err := s.f.MaybeCommit(); err != nil {
		return s.abort(what, err)
	}
	return 0
}

// haveSpace refuses (ENOSPC, nothing changed) a change of n data bytes
// that would leave less free than a reserve for the metadata its
// transaction still needs, instead of running out halfway (an abort).
func (s *Server) haveSpace(n uint64) error {
	st := s.f.Statfs()
	if st.FreeBytes < n+reserve(st) {
		return errNoRoom
	}
	return nil
}

// reserve is the free space writes leave for metadata.
func reserve(st fsys.Statfs) uint64 { return max(8<<20, st.TotalBytes/64) }

// waitMount waits until the kernel serves the mount. go-fuse's WaitMount
// also opens a magic name in the new mount (its poll hack: the kernel must
// not send POLL requests that could take the server's last thread). On a
// loaded machine that open has failed with ENOENT right after the mount, and
// going on without it later hung the server, so the open is retried until
// it works: after the first call the ready channel is closed, and a later
// call only repeats the open. Other errors end the wait at once. The
// limit is generous: at load 8 on 2 cores (make test beside a mutation
// run) 10 s ran out once (e2e TestMountUnlinkedOpen).
func waitMount(wait func() error, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, 200*time.Millisecond) {
		err := wait()
		if !errors.Is(err, syscall.ENOENT) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(delay)
	}
}
