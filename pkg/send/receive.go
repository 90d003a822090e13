package send

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/google/uuid"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/codec"
	"github.com/ddfs/ddfs/pkg/fsys"
	"github.com/ddfs/ddfs/pkg/store"
)

// ErrStream: the stream is damaged, cut short, or not one this build
// applies; the target is left as it was.
var ErrStream = errors.New("bad send stream")

// receiver applies one stream.
type receiver struct {
	f   *fsys.FS
	r   *bufio.Reader
	buf []byte
	st  Stats
}

// Receive applies the stream r to f (opened writable): its tree is built
// beside the live namespace (FORMAT.md §6.13) and becomes snapshot NAME,
// in one commit, only once the END record proved the stream whole; any
// error (a damaged, cut or hostile stream) undoes everything the receive
// made. It returns the snapshot's name and id.
func Receive(f *fsys.FS, r io.Reader) (name string, id uint64, st Stats, err error) {
	return ReceiveWith(f, r, Options{})
}

// Options shape a receive.
type Options struct {
	// Resumable keeps a receive that fails (a cut or damaged stream)
	// in progress, to be resumed, instead of undoing it (zfs receive -s).
	Resumable bool
	// Resume goes on with the receive the image has in progress: the
	// same stream is read again, checked and skipped up to the point the
	// last commit recorded, then applied (f must be opened with
	// fsys.Options.Receiving).
	Resume bool
}

// ReceiveWith is Receive with options.
func ReceiveWith(f *fsys.FS, r io.Reader, o Options) (name string, id uint64, st Stats, err error) {
	x := &receiver{f: f, r: bufio.NewReaderSize(r, 1<<20)}
	if o.Resume {
		return x.resume(o)
	}
	begin, err := x.begin()
	if err != nil {
		return "", 0, x.st, err
	}
	if _, err := f.Store().FindSnapshot(begin.Name); err == nil {
		return begin.Name, 0, x.st, fmt.Errorf("%q: %w", begin.Name, store.ErrSnapshotExists)
	} else if !errors.Is(err, store.ErrNoSnapshot) {
		return begin.Name, 0, x.st, err
	}
	base, err := baseOf(f, begin.ParentUUID)
	if err != nil {
		return begin.Name, 0, x.st, err
	}
	if err := f.BeginReceive(format.ReceiveItem{Name: begin.Name, ReceivedUUID: begin.UUID, ParentUUID: begin.ParentUUID}, base); err != nil {
		return begin.Name, 0, x.st, err
	}
	id, err = x.finish(o)
	return begin.Name, id, x.st, err
}

// finish applies the records to END and makes the snapshot; on an error
// the receive is undone, or with Resumable kept at its last commit.
func (x *receiver) finish(o Options) (uint64, error) {
	if err := x.apply(); err != nil {
		if o.Resumable {
			if serr := x.f.Sync(); serr != nil {
				err = fmt.Errorf("%w (and keeping the receive: %v)", err, serr)
			}
			return 0, fmt.Errorf("%w (kept: ddfs receive --resume goes on from byte %d)", err, x.kept())
		}
		if aerr := x.f.AbortReceive(); aerr != nil {
			err = fmt.Errorf("%w (and undoing the receive: %v)", err, aerr)
		}
		return 0, err
	}
	return x.f.FinishReceive()
}

// kept is the resume point the image holds.
func (x *receiver) kept() uint64 {
	r, ok, err := x.f.Store().Receiving()
	if err != nil || !ok {
		return 0
	}
	return r.Applied
}

// ErrNoReceive: --resume, but the image has no receive in progress.
var ErrNoReceive = errors.New("no receive in progress")

// resume checks that the stream is the one the receive in progress
// began with, skips (checking) what the last commit holds, and goes on.
func (x *receiver) resume(o Options) (string, uint64, Stats, error) {
	item, ok, err := x.f.Store().Receiving()
	if err != nil || !ok {
		return "", 0, x.st, cmpErr(err, ErrNoReceive)
	}
	begin, err := x.begin()
	if err != nil {
		return item.Name, 0, x.st, err
	}
	if begin.UUID != item.ReceivedUUID || begin.ParentUUID != item.ParentUUID || begin.Name != item.Name {
		return item.Name, 0, x.st, fmt.Errorf("%w: not the stream of the receive in progress (snapshot %q, %s)", ErrStream, item.Name, uuid.UUID(item.ReceivedUUID))
	}
	for x.st.Bytes < item.Applied {
		var rec format.Record
		if err := x.next(&rec); err != nil {
			return item.Name, 0, x.st, err
		}
		if rec.Type == format.RecEnd || rec.Type == format.RecBegin {
			return item.Name, 0, x.st, fmt.Errorf("%w: record type %d before the resume point", ErrStream, rec.Type)
		}
	}
	if x.st.Bytes != item.Applied {
		return item.Name, 0, x.st, fmt.Errorf("%w: the resume point %d is inside a record", ErrStream, item.Applied)
	}
	id, err := x.finish(o)
	return item.Name, id, x.st, err
}

// ErrNoBase: an incremental stream's base is no snapshot of the target.
var ErrNoBase = errors.New("the stream's base is not here")

// baseOf finds the snapshot an incremental stream applies to: the one
// received from its parent, or the parent itself ("" for a full stream).
func baseOf(f *fsys.FS, parent [16]byte) (string, error) {
	if parent == [16]byte{} {
		return "", nil
	}
	snaps, err := f.Snapshots()
	if err != nil {
		return "", err
	}
	for _, s := range snaps {
		if s.ReceivedUUID == parent || s.UUID == parent {
			return s.Name, nil
		}
	}
	return "", fmt.Errorf("an incremental stream on snapshot %s, which no snapshot here is or was received from: %w", uuid.UUID(parent), ErrNoBase)
}

// begin reads the header and the BEGIN record.
func (x *receiver) begin() (*format.Record, error) {
	h := make([]byte, format.StreamHeaderSize)
	if _, err := io.ReadFull(x.r, h); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrStream, err)
	}
	if err := format.CheckStreamHeader(h); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStream, err)
	}
	x.st.Bytes = format.StreamHeaderSize
	var rec format.Record
	if err := x.next(&rec); err != nil {
		return nil, err
	}
	if rec.Type != format.RecBegin {
		return nil, fmt.Errorf("%w: the first record is type %d, not BEGIN", ErrStream, rec.Type)
	}
	return &rec, nil
}

func (x *receiver) next(rec *format.Record) error {
	n, err := format.ReadRecord(x.r, rec, &x.buf)
	if err != nil {
		return fmt.Errorf("%w: record %d (byte %d): %v", ErrStream, x.st.Records+1, x.st.Bytes, err)
	}
	x.st.Records++
	x.st.Bytes += uint64(n)
	return nil
}

// apply applies the records up to END and checks what END counts.
func (x *receiver) apply() error {
	for {
		records, bytes := x.st.Records, x.st.Bytes
		var rec format.Record
		if err := x.next(&rec); err != nil {
			return err
		}
		switch rec.Type {
		case format.RecEnd:
			if rec.Records != records || rec.Bytes != bytes {
				return fmt.Errorf("%w: END counts %d records and %d bytes, %d and %d came", ErrStream, rec.Records, rec.Bytes, records, bytes)
			}
			if _, err := x.r.ReadByte(); err != io.EOF {
				return fmt.Errorf("%w: bytes after END", ErrStream)
			}
			return nil
		case format.RecBegin:
			return fmt.Errorf("%w: a second BEGIN", ErrStream)
		}
		if err := x.record(&rec); err != nil {
			return fmt.Errorf("%w: record %d (%d) /%s: %v", ErrStream, x.st.Records, rec.Type, rec.Path, err)
		}
		x.f.ReceiveApplied(x.st.Bytes) // what a commit from here on holds
		if err := x.f.MaybeCommit(); err != nil {
			return err
		}
	}
}

// record applies one record.
func (x *receiver) record(rec *format.Record) error {
	if rec.Type == format.RecMkdir && rec.Path == "" {
		root, err := x.f.Resolve("/", false)
		if err != nil {
			return err
		}
		return x.f.SetattrInode(root, fsys.SetAttr{Mode: &rec.Mode, UID: &rec.UID, GID: &rec.GID})
	}
	switch rec.Type {
	case format.RecMkdir, format.RecMkfile, format.RecSymlink, format.RecMknod, format.RecLink:
		return x.make(rec)
	case format.RecUnlink, format.RecRmdir:
		return x.remove(rec)
	case format.RecRename:
		return x.rename(rec)
	}
	in, err := x.lookup(rec.Path)
	if err != nil {
		return err
	}
	switch rec.Type {
	case format.RecWrite:
		if !in.IsRegular() {
			return syscall.EINVAL
		}
		x.st.Data += uint64(len(rec.Data))
		return x.f.WriteAt(in, rec.Data, rec.Offset)
	case format.RecEncoded:
		if !in.IsRegular() {
			return syscall.EINVAL
		}
		data, err := decodeFrame(rec)
		if err != nil {
			return err
		}
		x.st.Data += rec.Length
		if rec.RAMOffset == 0 && rec.Length == rec.RAMBytes { // the whole extent: its frame may be stored as sent
			return x.f.WriteAtFramed(in, data, rec.Offset, fsys.Framed{Compression: rec.Compression, Frame: rec.Data})
		}
		return x.f.WriteAt(in, data, rec.Offset)
	case format.RecTruncate:
		if !in.IsRegular() {
			return syscall.EINVAL
		}
		return x.f.Truncate(in, rec.Offset)
	case format.RecSetXattr:
		return x.f.SetXattr(in, rec.Name, rec.Data)
	case format.RecRemoveXattr:
		return x.f.RemoveXattr(in, rec.Name)
	case format.RecSetAttr:
		return x.f.SetattrInode(in, fsys.SetAttr{Mode: &rec.Mode, UID: &rec.UID, GID: &rec.GID})
	case format.RecPunch:
		if !in.IsRegular() {
			return syscall.EINVAL
		}
		return x.f.PunchHole(in, rec.Offset, rec.Length)
	case format.RecUtimes:
		// ctime is the receive's (as btrfs receive: nothing sets it).
		return x.f.SetattrInode(in, fsys.SetAttr{Atime: &rec.Atime, Mtime: &rec.Mtime})
	}
	return syscall.EINVAL
}

// decodeFrame returns the file bytes an ENCODED record carries: its frame
// must be exactly a u32 length and that much stream, decompressing to
// exactly RAMBytes bytes (codec bounds the memory), before anything is
// written.
func decodeFrame(rec *format.Record) ([]byte, error) {
	if n := 4 + uint64(binary.LittleEndian.Uint32(rec.Data)); n != uint64(len(rec.Data)) {
		return nil, fmt.Errorf("encoded frame of %d bytes says %d: %w", len(rec.Data), n, format.ErrCorrupt)
	}
	data, err := codec.Decompress(rec.Data, rec.Compression, rec.RAMBytes)
	if err != nil {
		return nil, err
	}
	return data[rec.RAMOffset : rec.RAMOffset+rec.Length], nil
}

// make makes the entry a MKDIR, MKFILE, SYMLINK, MKNOD or LINK record
// names, in a directory the stream made before.
func (x *receiver) make(rec *format.Record) error {
	dir, name, err := x.parent(rec.Path)
	if err != nil {
		return err
	}
	if _, err := x.f.LookupAt(dir, name); err == nil {
		return syscall.EEXIST
	} else if !errors.Is(err, syscall.ENOENT) {
		return err
	}
	a := fsys.Attr{Mode: rec.Mode, UID: rec.UID, GID: rec.GID, Rdev: rec.Rdev}
	switch rec.Type {
	case format.RecMkdir:
		a.Mode |= syscall.S_IFDIR
		_, err = x.f.CreateAt(dir, name, a)
	case format.RecMkfile:
		a.Mode |= syscall.S_IFREG
		x.st.Files++
		_, err = x.f.CreateAt(dir, name, a)
	case format.RecSymlink:
		_, err = x.f.SymlinkAt(dir, name, rec.Target, a)
	case format.RecMknod:
		_, err = x.f.CreateAt(dir, name, a)
	case format.RecLink:
		var to *fsys.Inode
		if to, err = x.lookup(rec.Target); err == nil {
			if to.IsDir() {
				return syscall.EPERM
			}
			_, err = x.f.LinkAt(to.Ino, dir, name)
		}
	}
	return err
}

// remove removes the name an UNLINK (a non-directory) or RMDIR (an
// empty directory) record names.
func (x *receiver) remove(rec *format.Record) error {
	dir, name, err := x.parent(rec.Path)
	if err != nil {
		return err
	}
	return x.f.UnlinkAt(dir, name, rec.Type == format.RecRmdir)
}

// rename moves the non-directory a RENAME names to its target, which
// must not exist (no symlink followed on either side).
func (x *receiver) rename(rec *format.Record) error {
	odir, oname, err := x.parent(rec.Path)
	if err != nil {
		return err
	}
	if _, err := x.f.LookupAt(odir, oname); err != nil {
		return err
	}
	ndir, nname, err := x.parent(rec.Target) // into the moved directory itself: EINVAL
	if err != nil {
		return err
	}
	return x.f.RenameAt(odir, oname, ndir, nname, fsys.RenameNoReplace)
}

// parent resolves the directory of a stream path (every component a
// directory the stream made: no symlink is followed) and its last name.
func (x *receiver) parent(p string) (uint64, string, error) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return format.RootDirIno, p, nil
	}
	in, err := x.lookup(p[:i])
	if err != nil {
		return 0, "", err
	}
	if !in.IsDir() {
		return 0, "", syscall.ENOTDIR
	}
	return in.Ino, p[i+1:], nil
}

// lookup finds a stream path, component by component, following no
// symlink.
func (x *receiver) lookup(p string) (*fsys.Inode, error) {
	in, err := x.f.Inode(format.RootDirIno)
	if err != nil || p == "" {
		return in, err
	}
	for _, c := range strings.Split(p, "/") {
		if !in.IsDir() {
			return nil, syscall.ENOTDIR
		}
		if in, err = x.f.LookupAt(in.Ino, c); err != nil {
			return nil, err
		}
	}
	return in, nil
}
