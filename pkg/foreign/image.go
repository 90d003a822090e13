package foreign

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/diskfs/go-diskfs/filesystem"
	"github.com/diskfs/go-diskfs/filesystem/ext4"
	"github.com/diskfs/go-diskfs/filesystem/fat12"
	"github.com/diskfs/go-diskfs/filesystem/fat16"
	"github.com/diskfs/go-diskfs/filesystem/fat32"
	"github.com/diskfs/go-diskfs/filesystem/squashfs"
	"github.com/diskfs/go-diskfs/partition"
	"github.com/diskfs/go-diskfs/partition/gpt"
	"github.com/diskfs/go-diskfs/partition/mbr"

	"github.com/ddfs/ddfs/pkg/device"
)

// Image is an opened foreign image: a filesystem, or a partitioned disk
// (Info lists its partitions; it has no files).
type Image struct {
	name string
	kind Kind
	id   identity
	dev  device.Device
	be   *roBackend
	fs   filesystem.FileSystem // nil for a partition table
	// dirs caches directory listings by walked path (cached entries in all).
	dirs   map[string][]*Stat
	cached int
	ext    *extInodes // an ext image's inode reader (extmap.go), once made
	sqx    [][]Xattr  // a squashfs image's attribute sets (sqxattr.go)
	sqm    *sqModes   // a squashfs image's set-ID bits, through its export table (sqmode.go)
	iso    isoVolume  // ISO 9660: the tree listed (isovol.go)
	root   *Stat      // the root's, once read
}

// Info is what `ddfs info` says of a foreign image.
type Info struct {
	Kind       Kind        // filesystem or partition table
	Label      string      // "" when the format keeps none
	UUID       string      // as blkid shows it; "" when none
	Size       int64       // bytes of the image (or partition)
	Partitions []Partition // of a partition table
}

// Partition is one entry of a partition table.
type Partition struct {
	Index int    // 1-based, as IMAGE@N names it
	Start int64  // byte offset in the disk image
	Size  int64  // bytes
	Type  string // the table's type code or GUID
	Name  string // GPT partition name
	Kind  Kind   // the filesystem found in it by signature, "" none
}

// Open opens spec (an image file, or "disk.img@N", partition N of one)
// read-only and finds its filesystem by signature. ErrUnknown when it
// holds none this package knows.
func Open(spec string) (*Image, error) {
	dev, err := device.Open(spec, device.OpenOptions{Mode: device.ReadOnly})
	if err != nil {
		return nil, err
	}
	im, err := open(spec, dev, dev.Size())
	if err != nil {
		dev.Close()
		return nil, err
	}
	im.dev = dev
	return im, nil
}

// OpenReader reads a foreign filesystem from r (size bytes): the fuzz
// targets and tests use it; name is for messages.
func OpenReader(name string, r io.ReaderAt, size int64) (*Image, error) {
	return open(name, r, size)
}

func open(name string, r io.ReaderAt, size int64) (*Image, error) {
	k, err := Probe(r, size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	im := &Image{name: name, kind: k, be: &roBackend{r: r, size: size, name: name}}
	if !k.IsFilesystem() {
		return im, nil
	}
	if im.id, err = bound(k, r, size); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", name, k, err)
	}
	err = im.guard("open", "", func() (err error) {
		if k == ISO9660 { // read by ddfs alone (isovol.go says why)
			return im.isoChoose()
		}
		if k == Squashfs { // go-diskfs gets a made-up attribute table (sqxattr.go)
			super := make([]byte, sqSuper)
			if _, err := r.ReadAt(super, 0); err != nil {
				return corruptf("squashfs superblock: %v", err)
			}
			if binary.LittleEndian.Uint16(super[20:]) == sqLZ4 {
				// go-diskfs v1.9.4 decompresses squashfs's raw lz4 blocks as
				// lz4 frames: every read fails. Said plainly, not "corrupt".
				return fmt.Errorf("%w: squashfs compressed with lz4 (go-diskfs v1.9.4 cannot read it; mksquashfs -comp gzip, xz or zstd can be)", ErrUnsupported)
			}
			if im.sqm, err = newSQModes(r, size, super); err != nil {
				return err
			}
			sniff, err := newSQSniffer(r, size, super)
			if err != nil {
				return err
			}
			var r2 io.ReaderAt
			if im.sqx, r2, size, err = sqXattrOverlay(r, size); err != nil {
				return err
			}
			im.be = &roBackend{r: r2, size: size, name: name, sniff: sniff}
		}
		if im.fs, err = readFS(k, im.be, size); err != nil {
			return err
		}
		if sq, ok := im.fs.(*squashfs.FileSystem); ok {
			// go-diskfs keeps 128 MiB of decompressed blocks across calls
			// by default: a bound of ours instead.
			sq.SetCacheSize(sqCacheBytes)
		}
		return nil
	})
	if err != nil {
		if !strings.Contains(err.Error(), name) { // a panic's is named already
			err = fmt.Errorf("%s: %w", name, err)
		}
		return nil, err
	}
	return im, nil
}

// readFS hands the image to go-diskfs's reader for k (start 0: a
// partition is a window of its own).
func readFS(k Kind, b *roBackend, size int64) (filesystem.FileSystem, error) {
	var (
		fs  filesystem.FileSystem
		err error
	)
	switch k {
	case Ext2, Ext3, Ext4:
		fs, err = ext4.Read(b, size, 0, 0)
	case Squashfs:
		fs, err = squashfs.Read(b, size, 0, 0)
	case FAT12:
		fs, err = fat12.Read(b, size, 0, 0)
	case FAT16:
		fs, err = fat16.Read(b, size, 0, 0)
	case FAT32:
		fs, err = fat32.Read(b, size, 0, 0)
	default:
		return nil, ErrUnsupported
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return fs, nil
}

// guard runs one go-diskfs call: its reads accounted afresh, a panic (its
// own, or the backend's on a loop) returned as ErrCorrupt naming the image
// and path.
func (im *Image) guard(op, p string, fn func() error) (err error) {
	im.be.reset()
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if b, ok := r.(errBudget); ok {
			err = fmt.Errorf("%s %s: %w: %s", op, im.where(p), ErrCorrupt, b.why)
			return
		}
		err = fmt.Errorf("%s %s: %w: the %s reader failed: %v", op, im.where(p), ErrCorrupt, im.kind, r)
	}()
	return fn()
}

// where names a path as the CLI does, IMAGE:PATH.
func (im *Image) where(p string) string {
	if p == "" {
		return im.name
	}
	return im.name + ":" + p
}

// Name is the spec the image was opened by.
func (im *Image) Name() string { return im.name }

// Kind is the image's filesystem or partition table.
func (im *Image) Kind() Kind { return im.kind }

// Close releases the image.
func (im *Image) Close() error {
	if im.dev != nil {
		return im.dev.Close()
	}
	return nil
}

// Info describes the image; a partition table's partitions are listed
// with the filesystem each holds.
func (im *Image) Info() (Info, error) {
	inf := Info{Kind: im.kind, Label: im.id.label, UUID: im.id.uuid, Size: im.be.size}
	if im.kind.IsFilesystem() {
		return inf, nil
	}
	var tbl partition.Table
	err := im.guard("read partition table of", "", func() (err error) {
		tbl, err = partition.Read(im.be, 512, 512)
		if err == nil && im.kind == GPT {
			if _, ok := tbl.(*gpt.Table); !ok { // 4 KiB sectors
				tbl, err = gpt.Read(im.be, 4096, 4096)
			}
		}
		return err
	})
	if err != nil {
		return inf, fmt.Errorf("%s: %w", im.name, err)
	}
	const maxPartitions = 256
	for _, p := range tbl.GetPartitions() {
		if p.GetSize() <= 0 {
			continue
		}
		if len(inf.Partitions) == maxPartitions {
			return inf, fmt.Errorf("%s: over %d partitions: %w", im.name, maxPartitions, ErrCorrupt)
		}
		q := Partition{Index: p.GetIndex(), Start: p.GetStart(), Size: p.GetSize()}
		switch t := p.(type) {
		case *gpt.Partition:
			q.Type, q.Name = string(t.Type), t.Name
		case *mbr.Partition:
			q.Type = fmt.Sprintf("0x%02x", byte(t.Type))
		}
		if q.Start >= 0 && q.Size > 0 && q.Start <= im.be.size && q.Size <= im.be.size-q.Start {
			k, err := Probe(io.NewSectionReader(im.be.r, q.Start, q.Size), q.Size)
			if err == nil {
				q.Kind = k
			} else if !errors.Is(err, ErrUnknown) {
				return inf, fmt.Errorf("%s: partition %d: %w", im.name, q.Index, err)
			}
		}
		inf.Partitions = append(inf.Partitions, q)
	}
	return inf, nil
}
