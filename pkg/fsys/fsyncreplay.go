package fsys

import (
	"fmt"
	"syscall"

	"github.com/ddfs/ddfs/format"
	"github.com/ddfs/ddfs/pkg/store"
)

// Every writable open of a set with a pending fsync log replays it in one
// commit before anything else can allocate (store.RegisterLogReplayer);
// a read-only open replays it into a transaction that never commits, so
// readers see what fsync promised.
func init() { store.RegisterLogReplayer(replayCommitted) }

func replayCommitted(st *store.FS) error {
	f, err := New(st, Options{NoFsyncLog: true})
	if err != nil {
		return err
	}
	defer f.data.stop()
	tx, err := st.Begin()
	if err != nil {
		return err
	}
	f.tx = tx
	if err := f.replayLog(); err != nil {
		f.Abort()
		return err
	}
	return f.Sync()
}

// replayInMemory replays a read-only set's pending log into a scratch
// transaction that stays the FS's view.
func (f *FS) replayInMemory() error {
	tx, err := f.st.BeginScratch()
	if err != nil {
		return err
	}
	f.tx, f.scratch = tx, true
	return f.replayLog()
}

// replayLog applies every record, oldest first, to the running
// transaction.
func (f *FS) replayLog() error {
	sb := f.st.Super()
	recs, err := store.LogRecords(f.st.Vol, &sb)
	if err != nil {
		return err
	}
	for i := range recs {
		if err := f.replayRecord(&recs[i]); err != nil {
			return fmt.Errorf("fsync log record %d (inode %d): %w", i, recs[i].Ino, err)
		}
	}
	return nil
}

// replayRecord punches the record's ranges, puts its extents in them and
// takes its inode's size, times, permissions and owner.
func (f *FS) replayRecord(r *format.LogRecord) error {
	in, err := f.Inode(r.Ino)
	if err != nil {
		return err
	}
	if !in.IsRegular() {
		return fmt.Errorf("not a regular file: %w", format.ErrCorrupt)
	}
	for _, g := range r.Ranges {
		if err := f.punch(in, g.Start, g.End); err != nil {
			return err
		}
	}
	news := map[uint64]*format.LogData{}
	for i := range r.New {
		news[r.New[i].Logical] = &r.New[i]
	}
	t := f.tx.Tree(format.FSTree)
	for _, x := range r.Extents {
		if x.Item.DiskLogical != 0 {
			if err := f.replayRef(&x.Item, news); err != nil {
				return err
			}
			in.NBytes += x.Item.NumBytes
		}
		x.Item.Generation = f.tx.Generation()
		if err := t.Insert(extentKey(r.Ino, x.Off), format.MarshalFileExtentItem(&x.Item)); err != nil {
			return err
		}
	}
	in.Size, in.Atime, in.Mtime, in.Ctime = r.Inode.Size, r.Inode.Atime, r.Inode.Mtime, r.Inode.Ctime
	in.Mode = in.Mode&syscall.S_IFMT | r.Inode.Mode&^syscall.S_IFMT
	in.UID, in.GID = r.Inode.UID, r.Inode.GID
	return f.putInode(in)
}

// replayRef takes a reference on x's data extent: a committed one, or
// one the log brings, whose space must still be free.
func (f *FS) replayRef(x *format.FileExtentItem, news map[uint64]*format.LogData) error {
	k := format.Key{ObjectID: x.DiskLogical, Type: format.ExtentItemKey, Offset: x.DiskLen}
	ext := f.tx.Tree(format.ExtentTree)
	b, err := getOptional(ext, k)
	if err != nil {
		return err
	}
	if b != nil {
		e, err := format.UnmarshalExtentItem(b)
		if err != nil {
			return err
		}
		if e.RAMBytes != x.RAMBytes || e.Compression != x.Compression {
			return fmt.Errorf("extent %d+%d holds %d bytes (%v), the log says %d (%v): %w", x.DiskLogical, x.DiskLen, e.RAMBytes, e.Compression, x.RAMBytes, x.Compression, format.ErrCorrupt)
		}
		return f.addRefs(x.DiskLogical, x.DiskLen, 1)
	}
	d := news[x.DiskLogical]
	if d == nil || d.DiskLen != x.DiskLen || d.Item.RAMBytes != x.RAMBytes || d.Item.Compression != x.Compression {
		return fmt.Errorf("data extent %d+%d is neither in the trees nor in the record: %w", x.DiskLogical, x.DiskLen, format.ErrCorrupt)
	}
	if err := f.tx.ClaimData(d.Logical, d.DiskLen); err != nil {
		return err
	}
	e := d.Item
	e.Refs, e.Generation, e.Flags, e.HashPrefix = 1, f.tx.Generation(), 0, 0
	if err := ext.Insert(k, format.MarshalExtentItem(&e)); err != nil {
		return err
	}
	return f.putSums(d.Logical, make([]byte, d.DiskLen), d.Csums)
}
