package transfer

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/ddfs/ddfs/pkg/fsys"
)

// CopyFromReader writes everything r yields to image file dst (cp - DST):
// the file is created, or replaced when it exists (-n keeps it and reads
// nothing), with mode perm and the caller's owner, as a shell redirect
// makes a file. A directory dst is refused (EISDIR): a stream has no name
// to put under it. Memory stays one buffer whatever the stream's length.
func CopyFromReader(f *fsys.FS, r io.Reader, dst string, perm uint32, o Options) error {
	existing, err := f.Resolve(dst, false)
	switch {
	case err == nil && existing.IsDir():
		return &fs.PathError{Op: "copy", Path: dst, Err: syscall.EISDIR}
	case err == nil && o.NoClobber:
		return nil
	case err == nil:
		// As cp replaces a file (a symlink too, not its target).
		if err := f.Remove(dst); err != nil {
			return err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err // unreadable is not missing
	}
	in, err := f.Create(dst, fsys.Attr{Mode: syscall.S_IFREG | perm&0o777, UID: uint32(os.Getuid()), GID: uint32(os.Getgid())})
	if err != nil {
		return err
	}
	buf := make([]byte, bufSize)
	var off uint64
	for {
		n, rerr := io.ReadFull(r, buf)
		if n > 0 {
			if err := f.WriteAt(in, buf[:n], off); err != nil {
				return &fs.PathError{Op: "write", Path: dst, Err: unwrapErrno(err)}
			}
			off += uint64(n)
			if o.Progress != nil {
				o.Progress(int64(n))
			}
		}
		if rerr == io.EOF || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			return &fs.PathError{Op: "read", Path: "-", Err: rerr}
		}
	}
	return f.Sync()
}
